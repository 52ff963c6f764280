"""Helpers live in public modules, not in a management command or behind another module's private
names, and the moves leave no import cycle hidden in a function body (issue 25, item 3): the
probe matrix library is ``probes.matrix`` (the command is thin), the report pages' shared pieces
are ``reports.pages`` and ``reports.svg``. The graph here counts every import, at the top of a
module or inside a function, which is what import-linter's contracts do not see as a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("config", "rubric", "providers", "probes", "ratings", "costs", "grades", "reports", "reviews", "quickstart",
        "workbench", "testbed")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {
        _module_name(p): p
        for app in APPS for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts
    }


def _imports(path: Path, modules: set[str]) -> dict[str, set[str]]:
    """{imported project module: names taken from it}, every import statement of the file."""
    out: dict[str, set[str]] = {}
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    out.setdefault(alias.name, set())
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])])
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:  # a submodule
                    out.setdefault(f"{base}.{alias.name}", set())
                elif base in modules:
                    out.setdefault(base, set()).add(alias.name)
    return out


def _graph() -> dict[str, dict[str, set[str]]]:
    sources = _sources()
    return {name: _imports(path, set(sources)) for name, path in sources.items()}


def _cycle_members(graph: dict[str, dict[str, set[str]]]) -> set[str]:
    """Modules on some import cycle (Tarjan's strongly connected components of size > 1)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    members: set[str] = set()
    counter = 0

    def visit(v: str) -> None:  # the graph has a few hundred nodes: recursion is bounded by them
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                members.update(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return members


def test_no_module_imports_from_a_management_command():
    graph = _graph()
    assert "probes.red_team" in graph and "quickstart.services" in graph  # the walk found the apps
    offenders = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items() for target in targets
        if ".management.commands." in target
    )
    assert offenders == []


def test_the_report_sections_take_no_private_name_from_another_module():
    graph = _graph()
    offenders = sorted(
        f"{module} imports {target}.{name}"
        for module, targets in graph.items() if module.startswith("reports.")
        for target, names in targets.items() for name in names if name.startswith("_")
    )
    assert offenders == []


def test_the_matrix_and_the_report_pages_are_on_no_import_cycle_even_inside_functions():
    on_cycles = _cycle_members(_graph())
    moved = {"probes.matrix", "probes.red_team", "probes.management.commands.probe_matrix", "quickstart.services",
             "reports.costs_section", "reports.grades_section", "reports.views", "reports.pages", "reports.svg",
             "reports.charts", "reports.rendering"}
    assert sorted(on_cycles & moved) == []


def test_the_cycle_finder_sees_a_cycle_through_a_function_body():
    graph = {"a": {"b": set()}, "b": {"c": set()}, "c": {"a": set()}, "d": {"a": set()}}
    assert _cycle_members(graph) == {"a", "b", "c"}
    source = "def f():\n    from reports.views import report_for\n"
    tree_imports = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)]
    assert tree_imports and tree_imports[0].module == "reports.views"
