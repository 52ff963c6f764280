"""The grade YAML format: parse, validate, emit and diff (no models, no clock).

A grade definition travels as one YAML document, like a rubric version, and goes through the
same public kit (``rubric.yaml_kit``): the same bounded loader, line-tracking reader and field
checker, the same identity checks (format, name, version, title, description), the same
canonical dumper (import then export gives the same bytes), the same sha256 fingerprint at
freeze and the same field-by-field diff records.

    format: opgrade-grade/1
    name: h100-sxm-managed-a          # lower-case key
    version: '2026.1'
    title: H100-SXM managed, grade A
    description: ...                  # optional
    rubric: opgrade@2026.2            # the rubric version whose criteria the grade reads
    hardware: {gpu_model: H100-SXM-80GB, gpus_per_node: 8, interconnect: infiniband-400g, min_gpu_memory_gb: 80}
    scope: {orchestrator: slurm, storage_included: true}
    requirements:                     # operating requirements, each naming what it reads
    - {key: tier, title: ..., kind: tier, min_tier: silver}
    - {key: log_isolation, title: ..., kind: gate, gate: tenant_log_isolation}
    - {key: provisioning, title: ..., kind: provisioning_time, probe: {id: node_ready_time, metric: p95_seconds}, max: 1200, unit: s}
    - {key: availability, title: ..., kind: availability, criterion: ssh_reachable, min: 0.99}
    - {key: cost, title: ..., kind: cost_per_useful_mtok, cost: cost_per_useful_mtok, max: 2.5, unit: $/Mtok}
    contract: {term: 12-month, support: business-hours}

A requirement names exactly one source (``min_tier``, ``gate``, ``criterion``, ``probe`` or
``cost``); ``criterion`` and ``probe`` take a ``min`` or ``max`` as the kind says. Given a
:class:`Vocabulary` (the named rubric's criteria and gates, the probe catalog's metrics), a
requirement that names an unknown criterion, gate or metric is a problem on its line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grades.eligibility import (
    COMPARISONS,
    COST_FIGURES,
    KINDS,
    Contract,
    Grade,
    Hardware,
    Requirement,
    Scope,
)
from rubric.spec import TIERS
from rubric.yaml_format import RubricFormatError
from rubric.yaml_kit import (
    KEY_RE,
    Checker,
    FieldChange,
    Flow,
    ItemChange,
    check_identity,
    diff_keyed,
    dump_canonical,
    field_changes,
    read_document,
)

FORMAT_ID = "opgrade-grade/1"
HEADER = "# Opgrade grade definition, canonical form (manage.py grade export). Format: grades/spec.py\n"
TERMS = ("on-demand", "1-month", "3-month", "6-month", "12-month", "24-month", "36-month")
SUPPORT_LEVELS = ("best-effort", "business-hours", "24x7", "24x7-dedicated")
ORCHESTRATORS = ("slurm", "kubernetes")
OPERATING_KINDS = tuple(k for k in KINDS if k not in ("hardware", "scope"))
SOURCES = ("min_tier", "gate", "criterion", "probe", "cost")
LABEL_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*@[^\s\"'\\\x00-\x1f\x7f@]+\Z")


class GradeFormatError(RubricFormatError):
    """A grade file is malformed or names something unknown; ``problems`` lists each, in file order.

    A RubricFormatError (not only a ``yaml_kit.FormatError``) so that every handler that turns a
    malformed document into a 400 with its problems (config/api_errors.py) keeps doing so.
    """


@dataclass(frozen=True)
class Vocabulary:
    """What a grade may name: the rubric version's criteria and gates, the probe catalog's metrics."""

    rubric: str  # NAME@VERSION these criteria belong to
    criteria: frozenset[str]
    gates: frozenset[str]
    metrics: Mapping[str, str]  # "probe_id:metric" -> unit


# --------------------------------------------------------------------------- parsing
def parse_grade(text: str, *, filename: str = "<grade>", vocabulary: Vocabulary | None = None) -> Grade:
    """Parse and validate a grade document; raise GradeFormatError naming file, line and field."""
    data, reader = read_document(text, filename=filename, error=GradeFormatError)
    grade = _check(data, Checker(reader), vocabulary)
    if reader.problems or grade is None:
        raise GradeFormatError(reader.problems)
    return grade


_TOP_REQUIRED = ("format", "name", "version", "title", "rubric", "hardware", "scope", "requirements", "contract")


def _check(data: Any, c: Checker, vocab: Vocabulary | None) -> Grade | None:
    top = c.mapping(data, (), _TOP_REQUIRED, ("description",))
    if not top:
        return None
    ident = check_identity(top, c, FORMAT_ID)
    rubric = c.string(top, "rubric", (), max_length=100)
    if rubric is not None and not LABEL_RE.match(rubric):
        c.r.problem(("rubric",), f"{rubric!r} must be NAME@VERSION, e.g. opgrade@2026.2")
        rubric = None
    if rubric is not None and vocab is not None and rubric != vocab.rubric:
        c.r.problem(("rubric",), f"checked against {vocab.rubric}, but the grade names {rubric}")
    hardware = _check_hardware(top.get("hardware"), c) if "hardware" in top else None
    scope = _check_scope(top.get("scope"), c) if "scope" in top else None
    requirements = _check_requirements(top.get("requirements"), c, vocab) if "requirements" in top else ()
    contract = _check_contract(top.get("contract"), c) if "contract" in top else None
    if c.r.problems or None in (ident.name, ident.version, ident.title, rubric, hardware, scope, contract):
        return None
    return Grade(name=ident.name, version=ident.version, title=ident.title,  # type: ignore[arg-type]
                 rubric=rubric, hardware=hardware, scope=scope, contract=contract,  # type: ignore[arg-type]
                 requirements=requirements, description=ident.description or "")


def _check_hardware(data: Any, c: Checker) -> Hardware | None:
    path = ("hardware",)
    m = c.mapping(data, path, ("gpu_model",), ("gpus_per_node", "interconnect", "min_gpu_memory_gb"))
    if not m:
        return None
    n = len(c.r.problems)
    gpu = c.string(m, "gpu_model", path, max_length=64)
    per_node = m.get("gpus_per_node")
    if per_node is not None and (isinstance(per_node, bool) or not isinstance(per_node, int) or per_node < 1):
        c.r.problem((*path, "gpus_per_node"), f"must be a positive whole number, got {per_node!r}")
    interconnect = c.string(m, "interconnect", path, required=False, pattern=KEY_RE, max_length=64)
    memory = c.number(m, "min_gpu_memory_gb", path, positive=True) if m.get("min_gpu_memory_gb") is not None else None
    if len(c.r.problems) != n:
        return None
    return Hardware(gpu_model=gpu or "", gpus_per_node=per_node, interconnect=interconnect or "",
                    min_gpu_memory_gb=memory)


def _check_scope(data: Any, c: Checker) -> Scope | None:
    path = ("scope",)
    m = c.mapping(data, path, ("orchestrator",), ("storage_included",))
    if not m:
        return None
    orchestrator = c.choice(m, "orchestrator", path, ORCHESTRATORS)
    storage = m.get("storage_included")
    if storage is not None and not isinstance(storage, bool):
        c.r.problem((*path, "storage_included"), f"expected true or false, got {storage!r}")
        return None
    return None if orchestrator is None else Scope(orchestrator=orchestrator, storage_included=storage)


def _check_contract(data: Any, c: Checker) -> Contract | None:
    path = ("contract",)
    m = c.mapping(data, path, ("term", "support"))
    if not m:
        return None
    term = c.choice(m, "term", path, TERMS)
    support = c.choice(m, "support", path, SUPPORT_LEVELS)
    return None if None in (term, support) else Contract(term=term, support=support)  # type: ignore[arg-type]


def _check_requirements(data: Any, c: Checker, vocab: Vocabulary | None) -> tuple[Requirement, ...]:
    if not isinstance(data, list) or not data:
        c.r.problem(("requirements",), "expected a non-empty list of requirements")
        return ()
    out: list[Requirement] = []
    seen: set[str] = set()
    for i, item in enumerate(data):
        req = _check_requirement(item, ("requirements", i), c, vocab)
        if req is None:
            continue
        if req.key in seen or req.key in ("gpu_model", "gpus_per_node", "interconnect", "gpu_memory_gb",
                                          "orchestrator", "storage_included"):
            c.r.problem(("requirements", i, "key"), f"duplicate or reserved requirement key '{req.key}'")
            continue
        seen.add(req.key)
        out.append(req)
    return tuple(out)


def _check_requirement(item: Any, path: tuple, c: Checker, vocab: Vocabulary | None) -> Requirement | None:
    m = c.mapping(item, path, ("key", "title", "kind"), (*SOURCES, "min", "max", "unit"))
    if not m:
        return None
    n = len(c.r.problems)
    key = c.string(m, "key", path, pattern=KEY_RE, max_length=64)
    title = c.string(m, "title", path)
    kind = c.choice(m, "kind", path, OPERATING_KINDS)
    unit = c.string(m, "unit", path, required=False, max_length=32) or ""
    sources = [s for s in SOURCES if s in m]
    if len(sources) != 1:
        c.r.problem(path, f"name exactly one source ({', '.join(SOURCES)}), got {len(sources)}")
        return None
    source = sources[0]
    if kind is None or key is None or title is None:
        return None
    wanted = {"tier": "min_tier", "gate": "gate"}.get(kind)
    if (wanted or "") != (source if source in ("min_tier", "gate") else ""):
        hint = f"'{wanted}'" if wanted else "criterion, probe or cost with min or max"
        c.r.problem((*path, source), f"a {kind} requirement reads {hint}")
        return None
    comparison = COMPARISONS[kind]
    bounds = [b for b in ("min", "max") if b in m]
    if source in ("min_tier", "gate"):
        if bounds:
            c.r.problem((*path, bounds[0]), f"a {kind} requirement takes no {bounds[0]}")
    elif bounds != [comparison]:
        c.r.problem(path, f"a {kind} requirement needs '{comparison}' (and no other bound)")
        return None
    if source == "min_tier":
        tier = c.choice(m, "min_tier", path, TIERS)
        return None if tier is None else Requirement(key, title, kind, "tier", "", tier, unit)
    if source == "gate":
        gate = c.string(m, "gate", path, pattern=KEY_RE, max_length=96)
        if gate is not None and vocab is not None and gate not in vocab.gates:
            what = "not a gate" if gate in vocab.criteria else "an unknown criterion"
            c.r.problem((*path, "gate"), f"'{gate}' is {what} in {vocab.rubric}")
            return None
        return None if gate is None or len(c.r.problems) != n else Requirement(key, title, kind, "gate", gate, True, unit)
    limit = c.number(m, comparison, path)
    ref = _check_source(m, source, path, c, vocab)
    if ref is None or limit is None or len(c.r.problems) != n:
        return None
    if not unit and vocab is not None and source == "probe":
        unit = vocab.metrics.get(ref, "")
    return Requirement(key, title, kind, "criterion" if source == "criterion" else source, ref, limit, unit)


def _check_source(m: dict, source: str, path: tuple, c: Checker, vocab: Vocabulary | None) -> str | None:
    if source == "criterion":
        key = c.string(m, "criterion", path, pattern=KEY_RE, max_length=96)
        if key is not None and vocab is not None and key not in vocab.criteria:
            c.r.problem((*path, "criterion"), f"unknown criterion '{key}' in {vocab.rubric}")
            return None
        return key
    if source == "cost":
        return c.choice(m, "cost", path, COST_FIGURES)
    ppath = (*path, "probe")
    pm = c.mapping(m["probe"], ppath, ("id", "metric"))
    probe = c.string(pm, "id", ppath, pattern=KEY_RE, max_length=96)
    metric = pm.get("metric")
    if not isinstance(metric, str) or not metric:
        c.r.problem((*ppath, "metric"), "expected a metric name (a pass/fail probe is read through its gate)")
        return None
    ref = f"{probe}:{metric}"
    if probe is not None and vocab is not None and ref not in vocab.metrics:
        c.r.problem(ppath, f"unknown probe metric {probe}.{metric} (not in the probe catalog)")
        return None
    return None if probe is None else ref


# --------------------------------------------------------------------------- emitting
def grade_to_document(grade: Grade) -> dict[str, Any]:
    """The canonical document as ordered plain data."""
    doc: dict[str, Any] = {"format": FORMAT_ID, "name": grade.name, "version": grade.version, "title": grade.title}
    if grade.description:
        doc["description"] = grade.description
    doc["rubric"] = grade.rubric
    hw = grade.hardware
    hardware: dict[str, Any] = {"gpu_model": hw.gpu_model}
    if hw.gpus_per_node is not None:
        hardware["gpus_per_node"] = int(hw.gpus_per_node)
    if hw.interconnect:
        hardware["interconnect"] = hw.interconnect
    if hw.min_gpu_memory_gb is not None:
        hardware["min_gpu_memory_gb"] = float(hw.min_gpu_memory_gb)
    doc["hardware"] = Flow(hardware)
    scope: dict[str, Any] = {"orchestrator": grade.scope.orchestrator}
    if grade.scope.storage_included is not None:
        scope["storage_included"] = grade.scope.storage_included
    doc["scope"] = Flow(scope)
    doc["requirements"] = [_requirement_doc(r) for r in grade.requirements]
    doc["contract"] = Flow(term=grade.contract.term, support=grade.contract.support)
    return doc


def _requirement_doc(r: Requirement) -> dict[str, Any]:
    out: dict[str, Any] = {"key": r.key, "title": r.title, "kind": r.kind}
    if r.reads == "tier":
        out["min_tier"] = r.threshold
    elif r.reads == "gate":
        out["gate"] = r.ref
    else:
        if r.reads == "probe":
            probe, metric = r.ref.split(":", 1)
            out["probe"] = Flow(id=probe, metric=metric)
        else:
            out[r.reads] = r.ref
        out[r.comparison] = float(r.threshold)  # type: ignore[arg-type]
    if r.unit:
        out["unit"] = r.unit
    return out


def emit_grade(grade: Grade) -> str:
    """The canonical YAML text of a grade (deterministic: same grade, same bytes)."""
    return dump_canonical(grade_to_document(grade), header=HEADER)


# --------------------------------------------------------------------------- diffing
@dataclass(frozen=True)
class GradeDiff:
    label_a: str
    label_b: str
    changes: tuple[FieldChange, ...]
    requirements_added: tuple[str, ...]
    requirements_removed: tuple[str, ...]
    requirements_changed: tuple[ItemChange, ...]

    @property
    def is_empty(self) -> bool:
        return not (self.changes or self.requirements_added or self.requirements_removed or self.requirements_changed)

    def as_text(self) -> str:
        lines = [f"--- {self.label_a}", f"+++ {self.label_b}"]
        if self.is_empty:
            lines.append("no differences")
        lines += [f"~ {c.field}: {c.old!r} -> {c.new!r}" for c in self.changes]
        lines += [f"+ requirement {k}" for k in self.requirements_added]
        lines += [f"- requirement {k}" for k in self.requirements_removed]
        for item in self.requirements_changed:
            lines += [f"~ requirement {item.key}.{c.field}: {c.old!r} -> {c.new!r}" for c in item.changes]
        return "\n".join(lines) + "\n"


def diff_grades(a: Grade, b: Grade) -> GradeDiff:
    """What changed from grade ``a`` to grade ``b`` (requirements matched by key)."""
    top = [FieldChange(n, getattr(a, n), getattr(b, n)) for n in ("title", "description", "rubric")
           if getattr(a, n) != getattr(b, n)]
    for part in ("hardware", "scope", "contract"):
        top += field_changes(getattr(a, part), getattr(b, part), prefix=f"{part}.")
    added, removed, changed = diff_keyed(a.requirements, b.requirements)
    return GradeDiff(a.label, b.label, tuple(top), added, removed, changed)
