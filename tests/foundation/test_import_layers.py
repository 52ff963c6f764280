"""The app layers and the pure cores hold: `lint-imports` (import-linter, .importlinter) passes
on the tree, and one upward import in a copy of the tree fails it, naming both modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
PACKAGES = (
    "config", "rubric", "providers", "probes", "ratings", "costs", "grades", "reports", "reviews", "quickstart", "workbench", "testbed",
)


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), str(cwd / ".importlinter"), "--no-cache", "--no-logo"],
        cwd=cwd, capture_output=True, text=True, timeout=180, check=False,
        env={"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(cwd), "LANG": "C.UTF-8"},
    )


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python sources of every layered package and the contract, in a scratch directory."""
    dest = tmp_path_factory.mktemp("layers")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / ".importlinter", dest / ".importlinter")
    return dest


def test_the_import_contracts_hold_on_the_tree():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_upward_import_breaks_the_layers_contract_and_names_both_modules(tree_copy: Path):
    target = tree_copy / "probes" / "selectors.py"
    original = target.read_text()
    target.write_text(original + "\nfrom reviews import models as _reviews_models  # noqa: E402,F401\n")
    try:
        result = _lint(tree_copy)
    finally:
        target.write_text(original)
    assert result.returncode != 0
    assert "probes is not allowed to import reviews" in result.stdout
    assert "probes.selectors -> reviews.models" in result.stdout


def test_an_app_import_in_the_engine_breaks_the_pure_engine_contract(tree_copy: Path):
    target = tree_copy / "ratings" / "engine_types.py"
    original = target.read_text()
    target.write_text(original + "\nfrom providers import models as _provider_models  # noqa: E402,F401\n")
    try:
        result = _lint(tree_copy)
    finally:
        target.write_text(original)
    assert result.returncode != 0
    assert "ratings.engine_types is not allowed to import providers" in result.stdout


def test_the_copied_tree_itself_is_clean(tree_copy: Path):
    """Guards the two tests above: they fail because of the one line they add, nothing else."""
    result = _lint(tree_copy)
    assert result.returncode == 0, result.stdout + result.stderr
