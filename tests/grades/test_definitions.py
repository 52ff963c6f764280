"""Grade definitions go through the rubric's machinery: import, export byte for byte, freeze,
clone, diff, and immutability in the services, the model and the database."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction

from grades.models import FrozenGradeError, GradeDefinition
from grades.selectors import grade_definition_diff, grade_definition_export
from grades.services import (
    GradeConflictError,
    grade_definition_clone,
    grade_definition_freeze,
    grade_definition_import,
    grade_definition_replace,
)
from grades.spec import GradeFormatError
from tests.grades.conftest import GRADES

pytestmark = pytest.mark.django_db


def test_every_shipped_grade_imports_freezes_and_exports_byte_for_byte(rubric_2026_2):
    for path in sorted(GRADES.glob("*.yaml")):
        if path.name == "price_bands.yaml":
            continue
        grade = grade_definition_import(text=path.read_text(), filename=path.name, freeze=True).grade
        assert grade.is_frozen and len(grade.fingerprint) == 64
        assert grade_definition_export(grade=grade) == path.read_text()
        out = StringIO()
        call_command("grade", "export", grade.label, stdout=out)
        assert out.getvalue() == path.read_text()


def test_a_frozen_grade_refuses_changes_in_service_model_and_database(testbed_grade):
    with pytest.raises(FrozenGradeError):
        grade_definition_replace(grade=testbed_grade, text=testbed_grade.canonical)
    testbed_grade.title = "changed"
    with pytest.raises(FrozenGradeError):
        testbed_grade.save()
    with pytest.raises(FrozenGradeError):
        GradeDefinition.objects.get(pk=testbed_grade.pk).delete()
    for sql in ("UPDATE grades_gradedefinition SET title = 'x' WHERE id = %s",
                "DELETE FROM grades_gradedefinition WHERE id = %s"):
        with pytest.raises(IntegrityError, match="frozen"), transaction.atomic(), connection.cursor() as cur:
            cur.execute(sql, [testbed_grade.pk])
    assert GradeDefinition.objects.get(pk=testbed_grade.pk).title == "Testbed Slurm managed, grade T1"


def test_clone_edit_diff_and_freeze(testbed_grade):
    draft = grade_definition_clone(source=testbed_grade, version="2026.2")
    assert not draft.is_frozen and draft.parent_id == testbed_grade.pk
    edited = draft.canonical.replace("min_tier: silver", "min_tier: gold").replace("'2026.1'", "'2026.2'")
    draft = grade_definition_replace(grade=draft, text=edited)
    text = grade_definition_diff(a=testbed_grade, b=draft).as_text()
    assert "~ requirement tier.threshold: 'silver' -> 'gold'" in text
    assert grade_definition_freeze(grade=draft).is_frozen
    with pytest.raises(GradeConflictError):
        grade_definition_clone(source=testbed_grade, version="2026.2")


def test_a_grade_naming_an_unknown_criterion_or_metric_is_refused_and_nothing_is_written(rubric_2026_2):
    text = (GRADES / "testbed-slurm-t1.yaml").read_text()
    for bad, message in ((text.replace("gate: home_isolation", "gate: home_isolaton"), "unknown criterion"),
                         (text.replace("metric: p95_seconds", "metric: p99_seconds"), "unknown probe metric"),
                         (text.replace("rubric: opgrade@2026.2", "rubric: opgrade@1999.1"), "no rubric version")):
        with pytest.raises(GradeFormatError, match=message):
            grade_definition_import(text=bad, filename="bad.yaml")
        with pytest.raises(CommandError, match=message):
            path = "/tmp/h17-bad-grade.yaml"
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(bad)
            call_command("grade", "import", path)
    assert GradeDefinition.objects.count() == 0


def test_importing_the_same_label_with_other_content_is_a_conflict(testbed_grade):
    other = testbed_grade.canonical.replace("min_tier: silver", "min_tier: gold")
    with pytest.raises(GradeConflictError, match="already exists with different content"):
        grade_definition_import(text=other, filename="other.yaml")
    again = grade_definition_import(text=testbed_grade.canonical, filename="same.yaml")
    assert not again.created and again.grade.pk == testbed_grade.pk
