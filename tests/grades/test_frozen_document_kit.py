"""Grade definitions and rubric versions are one kind of document, written once (rubric.versioned,
rubric.yaml_kit): grades reach the rubric only through public names, fingerprints are the sha256
of the canonical text as they always were, and the lookup, the guard and the command's verbs are
the same for both."""

from __future__ import annotations

import ast
import hashlib
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from config.immutability import postgresql_sql, sqlite_sql
from grades.guards import GUARDS as GRADE_GUARDS
from grades.models import GradeDefinition
from grades.selectors import GradeNotFound, grade_definition_get
from grades.services import GradeConflictError, grade_definition_clone, grade_definition_import
from grades.spec import GradeFormatError, parse_grade
from rubric.guards import GUARDS as RUBRIC_GUARDS
from rubric.selectors import RubricVersionNotFound, rubric_version_get, rubric_version_verify_fingerprint
from rubric.versioned import DocumentConflictError, DocumentNotFound
from rubric.yaml_format import RubricFormatError, parse_rubric
from tests.grades.conftest import GRADES, ROOT

SHIPPED_GRADES = sorted(p for p in GRADES.glob("*.yaml") if p.name != "price_bands.yaml")


def _rubric_names_used(tree: ast.AST) -> list[tuple[int, str]]:
    """Every name a module takes from the rubric app: imported from it, or read off a rubric module."""
    used: list[tuple[int, str]] = []
    modules: set[str] = set()
    for node in ast.walk(tree):  # every import, in function bodies too
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "rubric":
            for alias in node.names:
                used.append((node.lineno, f"{node.module}.{alias.name}"))
                if node.module == "rubric":  # from rubric import versioned
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rubric":
                    used.append((node.lineno, alias.name))
                    modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) in modules:
            used.append((node.lineno, f"{ast.unparse(node.value)}.{node.attr}"))
    return used


def test_the_grades_app_takes_only_public_names_from_the_rubric_app() -> None:
    private = []
    for path in sorted((ROOT / "grades").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, dotted in _rubric_names_used(tree):
            if any(part.startswith("_") for part in dotted.split(".")):
                private.append(f"{path.relative_to(ROOT)}:{line}: {dotted}")
    assert not private, "grades reaches into the rubric app's private names:\n" + "\n".join(private)


def test_the_check_sees_a_private_name_taken_either_way() -> None:
    tree = ast.parse("from rubric.yaml_kit import _x\nfrom rubric import versioned\nversioned._y()\n")
    assert [d for _, d in _rubric_names_used(tree) if "._" in d] == ["rubric.yaml_kit._x", "versioned._y"]


def test_bad_yaml_in_a_grade_names_where_the_enclosing_block_started_as_in_a_rubric() -> None:
    text = (GRADES / "h100-sxm-managed-a.yaml").read_text(encoding="utf-8")
    broken = text.replace("scope: {orchestrator: slurm, storage_included: true}", "scope: [slurm, true", 1)
    with pytest.raises(GradeFormatError) as grade_error:
        parse_grade(broken, filename="g.yaml")
    assert str(grade_error.value) == (
        "g.yaml:13: bad YAML: expected ',' or ']', but got ':' (while parsing a flow sequence, which started on line 12)"
    )
    with pytest.raises(RubricFormatError) as rubric_error:
        parse_rubric("format: opgrade-rubric/1\nareas: [a,\nb: c\n", filename="r.yaml")
    assert "(while parsing a flow sequence, which started on line 2)" in str(rubric_error.value)


@pytest.mark.django_db
def test_a_frozen_grade_and_a_frozen_rubric_record_the_sha256_of_their_canonical_text(rubric_2026_2):
    # Frozen rows stored before the kit recorded hashlib.sha256 of these very bytes; they still verify.
    shipped = (ROOT / "rubric" / "data" / "opgrade-2026.2.yaml").read_bytes()
    assert rubric_2026_2.fingerprint == hashlib.sha256(shipped).hexdigest()
    assert rubric_version_verify_fingerprint(rubric_version=rubric_2026_2) == rubric_2026_2.fingerprint
    for path in SHIPPED_GRADES:
        grade = grade_definition_import(text=path.read_text(encoding="utf-8"), filename=path.name, freeze=True).grade
        assert grade.fingerprint == hashlib.sha256(path.read_bytes()).hexdigest(), path.name


@pytest.mark.django_db
def test_one_lookup_answers_for_both_documents(testbed_grade, rubric_2026_2):
    assert grade_definition_get(ref=testbed_grade.label) == testbed_grade
    assert grade_definition_get(ref=str(testbed_grade.pk)) == testbed_grade
    assert rubric_version_get(ref=f" {rubric_2026_2.label} ") == rubric_2026_2
    for get, error, noun in ((grade_definition_get, GradeNotFound, "grade"),
                             (rubric_version_get, RubricVersionNotFound, "rubric version")):
        with pytest.raises(error, match=f"no {noun} 'nope@1'") as missing:
            get(ref="nope@1")
        assert isinstance(missing.value, DocumentNotFound)
        with pytest.raises(error, match=f"'nope' is not a {noun} reference: use NAME@VERSION or an id"):
            get(ref="nope")


@pytest.mark.django_db
def test_a_clone_label_is_checked_the_same_way_for_both(testbed_grade, rubric_2026_2):
    from rubric.services import RubricConflictError, rubric_version_clone

    for bad, field in (("has space", "version"), ("", "version")):
        with pytest.raises(GradeFormatError, match=f"clone: {field}: must be 1 to 32 characters"):
            grade_definition_clone(source=testbed_grade, version=bad)
        with pytest.raises(RubricFormatError, match=f"clone: {field}: must be 1 to 32 characters"):
            rubric_version_clone(source=rubric_2026_2, version=bad)
    with pytest.raises(GradeFormatError, match="clone: name: must be lower-case"):
        grade_definition_clone(source=testbed_grade, version="2", name="Upper")
    with pytest.raises(GradeConflictError, match=f"grade {testbed_grade.label} already exists") as taken:
        grade_definition_clone(source=testbed_grade, version=testbed_grade.version)
    assert isinstance(taken.value, DocumentConflictError)
    with pytest.raises(RubricConflictError, match=f"rubric version {rubric_2026_2.label} already exists"):
        rubric_version_clone(source=rubric_2026_2, version=rubric_2026_2.version)
    assert GradeDefinition.objects.count() == 1


@pytest.mark.django_db
def test_the_grade_command_has_the_rubric_commands_verbs(testbed_grade, tmp_path: Path):
    out = StringIO()
    call_command("grade", "freeze", testbed_grade.label, stdout=out)
    assert out.getvalue() == f"{testbed_grade.label} was already frozen; fingerprint sha256:{testbed_grade.fingerprint}\n"
    out = StringIO()
    call_command("grade", "clone", testbed_grade.label, "--version", "2026.9", stdout=out)
    clone = GradeDefinition.objects.get(name=testbed_grade.name, version="2026.9")
    assert out.getvalue() == f"cloned {testbed_grade.label} into draft {clone.label} (id {clone.pk})\n"
    out = StringIO()
    call_command("grade", "diff", testbed_grade.label, clone.label, stdout=out)
    assert out.getvalue() == f"--- {testbed_grade.label}\n+++ {clone.label}\nno differences\n"
    target = tmp_path / "export.yaml"
    call_command("grade", "export", str(clone.pk), "-o", str(target))
    assert target.read_text(encoding="utf-8") == clone.canonical
    out = StringIO()
    call_command("grade", "freeze", clone.label, stdout=out)
    assert out.getvalue().startswith(f"{clone.label} frozen; fingerprint sha256:")
    for argv, message in ((("export", "nope@1"), "no grade 'nope@1'"),
                          (("clone", testbed_grade.label, "--version", "a b"), "must be 1 to 32 characters"),
                          (("import", str(tmp_path / "missing.yaml")), "cannot read")):
        with pytest.raises(CommandError, match=message):
            call_command("grade", *argv)
    rubric_out = StringIO()
    call_command("rubric", "export", "opgrade@2026.2", stdout=rubric_out)
    assert rubric_out.getvalue() == (ROOT / "rubric" / "data" / "opgrade-2026.2.yaml").read_text(encoding="utf-8")


def test_both_tables_are_guarded_by_the_same_trigger_shape() -> None:
    version_guard = next(g for g in RUBRIC_GUARDS if g.table == "rubric_rubricversion")
    grade_guard = GRADE_GUARDS[0]
    assert version_guard.refuse == grade_guard.refuse == {"UPDATE": "OLD.status = 'frozen'",
                                                          "DELETE": "OLD.status = 'frozen'"}
    assert (version_guard.name, grade_guard.name) == ("rubric_rubricversion_frozen", "grades_gradedefinition_frozen")
    for guard in (version_guard, grade_guard):
        assert "INSERT" not in " ".join(postgresql_sql(guard)) and "INSERT" not in " ".join(sqlite_sql(guard))


def test_a_file_that_will_not_parse_is_refused_by_both_readers_alike() -> None:
    for parse, error in ((parse_grade, GradeFormatError), (parse_rubric, RubricFormatError)):
        for text, message in (("", "the file is empty"), ("[" * 40, "nested deeper than 32 levels"),
                              ("a: &x [1]\nb: *x\n", "anchors and aliases")):
            with pytest.raises(error, match=message):
                parse(text, filename="f.yaml")
