"""Freezing makes a version immutable (services, models, database); clones and diffs."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction

from rubric.models import Area, Criterion, FrozenRubricError, RubricVersion
from rubric.selectors import (
    RubricFingerprintMismatch,
    rubric_version_diff,
    rubric_version_export,
    rubric_version_verify_fingerprint,
)
from rubric.services import (
    RubricConflictError,
    area_update,
    criterion_delete,
    criterion_update,
    rubric_version_clone,
    rubric_version_delete,
    rubric_version_freeze,
    rubric_version_import,
    rubric_version_update,
)
from rubric.yaml_format import RubricFormatError
from tests.factories import AreaFactory, CriterionFactory
from tests.rubric.conftest import ROOT, SMALL

pytestmark = pytest.mark.django_db


@pytest.fixture
def frozen() -> RubricVersion:
    return rubric_version_import(text=SMALL, filename="small.yaml", freeze=True).rubric_version


@pytest.fixture
def draft() -> RubricVersion:
    return rubric_version_import(text=SMALL, filename="small.yaml").rubric_version


def test_freeze_records_status_time_and_fingerprint(draft):
    assert draft.status == "draft" and draft.frozen_at is None and draft.fingerprint == ""
    version = rubric_version_freeze(rubric_version=draft)
    assert version.is_frozen and version.frozen_at is not None and len(version.fingerprint) == 64


def test_freezing_twice_changes_nothing(frozen):
    again = rubric_version_freeze(rubric_version=frozen)
    assert (again.frozen_at, again.fingerprint) == (frozen.frozen_at, frozen.fingerprint)


def test_freeze_validates_the_draft_first(draft):
    criterion = Criterion.objects.get(rubric_version=draft, key="attestation")
    criterion_update(criterion=criterion, data={"weight": 0.5})  # security now sums to 1.2
    with pytest.raises(RubricFormatError, match=r"in area 'security' must sum to 1\.0"):
        rubric_version_freeze(rubric_version=draft)
    draft.refresh_from_db()
    assert draft.status == "draft" and draft.fingerprint == ""


def test_the_services_refuse_every_edit_of_a_frozen_version(frozen):
    criterion = Criterion.objects.get(rubric_version=frozen, key="node_ready")
    area = Area.objects.get(rubric_version=frozen, key="security")
    with pytest.raises(FrozenRubricError, match="is frozen"):
        criterion_update(criterion=criterion, data={"weight": 0.5})
    with pytest.raises(FrozenRubricError, match="Clone it into a new draft"):
        area_update(area=area, data={"title": "Other"})
    with pytest.raises(FrozenRubricError):
        rubric_version_update(rubric_version=frozen, data={"title": "Other"})
    with pytest.raises(FrozenRubricError):
        criterion_delete(criterion=criterion)
    with pytest.raises(FrozenRubricError):
        rubric_version_delete(rubric_version=frozen)
    assert rubric_version_export(rubric_version=frozen) == rubric_version_export(
        rubric_version=RubricVersion.objects.get(pk=frozen.pk)
    )
    rubric_version_verify_fingerprint(rubric_version=RubricVersion.objects.get(pk=frozen.pk))


def test_the_models_refuse_save_and_delete_of_a_frozen_version(frozen):
    criterion = Criterion.objects.get(rubric_version=frozen, key="node_ready")
    criterion.weight = 0.5
    with pytest.raises(FrozenRubricError):
        criterion.save()
    with pytest.raises(FrozenRubricError):
        criterion.delete()
    frozen.title = "changed"
    with pytest.raises(FrozenRubricError):
        frozen.save()
    with pytest.raises(FrozenRubricError):
        AreaFactory(rubric_version=frozen, key="extra")


def test_the_database_refuses_a_raw_update_of_a_frozen_criterion(frozen):
    with pytest.raises(IntegrityError, match="rubric version is frozen"), transaction.atomic():
        Criterion.objects.filter(rubric_version=frozen, key="node_ready").update(weight=0.5)
    assert Criterion.objects.get(rubric_version=frozen, key="node_ready").weight == 1.0


def test_the_database_refuses_inserts_deletes_and_version_updates(frozen):
    area = Area.objects.get(rubric_version=frozen, key="security")
    with pytest.raises(IntegrityError), transaction.atomic():
        Criterion.objects.bulk_create([Criterion(
            rubric_version=frozen, area=area, key="sneaky", title="x", weight=0.1, evidence_kinds=["doc_review"],
            anchor_best=1.0, anchor_worst=0.0,
        )])
    with pytest.raises(IntegrityError), transaction.atomic():
        Area.objects.filter(pk=area.pk).update(weight=0.9)
    with pytest.raises(IntegrityError), transaction.atomic():
        Criterion.objects.filter(rubric_version=frozen)._raw_delete(connection.alias)
    with pytest.raises(IntegrityError), transaction.atomic():
        RubricVersion.objects.filter(pk=frozen.pk).update(status="draft")
    with pytest.raises(IntegrityError), transaction.atomic():
        RubricVersion.objects.filter(pk=frozen.pk)._raw_delete(connection.alias)
    assert Criterion.objects.filter(rubric_version=frozen).count() == 3


def test_the_database_lets_drafts_change(draft):
    assert Criterion.objects.filter(rubric_version=draft, key="node_ready").update(weight=0.5) == 1
    CriterionFactory(area=Area.objects.get(rubric_version=draft, key="security"), key="extra")


def test_tampering_behind_the_triggers_is_caught_by_the_fingerprint(frozen):
    with connection.cursor() as cursor:
        # What a restore tool or a superuser could do: run with triggers switched off.
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute("UPDATE rubric_criterion SET weight = 0.5 WHERE rubric_version_id = %s AND key = 'node_ready'",
                       [frozen.pk])
        cursor.execute("SET LOCAL session_replication_role = origin")
    with pytest.raises(RubricFingerprintMismatch, match="changed after freezing"):
        rubric_version_verify_fingerprint(rubric_version=frozen)


def test_a_draft_is_never_accepted_as_verified(draft):
    with pytest.raises(RubricFingerprintMismatch, match="draft"):
        rubric_version_verify_fingerprint(rubric_version=draft)


def test_different_content_under_an_existing_label_is_a_conflict(frozen):
    with pytest.raises(RubricConflictError, match="already exists with different content"):
        rubric_version_import(text=SMALL.replace("title: A small rubric", "title: Changed"), filename="b.yaml")
    assert RubricVersion.objects.count() == 1


def test_importing_an_identical_draft_with_freeze_freezes_it(draft):
    result = rubric_version_import(text=SMALL, filename="small.yaml", freeze=True)
    assert not result.created and result.frozen_now and result.rubric_version.is_frozen


def test_clone_makes_a_draft_with_the_same_content_and_a_parent(frozen):
    clone = rubric_version_clone(source=frozen, version="1.1")
    assert clone.status == "draft" and clone.parent_id == frozen.pk
    assert rubric_version_export(rubric_version=clone) == rubric_version_export(rubric_version=frozen).replace(
        "version: '1.0'", "version: '1.1'"
    )
    assert rubric_version_diff(a=frozen, b=clone).is_empty
    criterion_update(criterion=Criterion.objects.get(rubric_version=clone, key="node_ready"), data={"weight": 1.0})


def test_clone_refuses_an_existing_label(frozen):
    with pytest.raises(RubricConflictError):
        rubric_version_clone(source=frozen, version="1.0")


def test_diff_lists_added_removed_and_changed(frozen):
    clone = rubric_version_clone(source=frozen, version="2.0")
    criterion_update(criterion=Criterion.objects.get(rubric_version=clone, key="log_isolation"),
                     data={"weight": 0.6, "anchor_worst": 0.1})
    criterion_delete(criterion=Criterion.objects.get(rubric_version=clone, key="node_ready"))
    CriterionFactory(area=Area.objects.get(rubric_version=clone, key="security"), key="pentest", weight=0.1)
    clone = rubric_version_update(rubric_version=clone, data={"tier_floor_bronze": 0.35})
    diff = rubric_version_diff(a=frozen, b=clone)
    assert diff.criteria_added == ("pentest",)
    assert diff.criteria_removed == ("node_ready",)
    [changed] = diff.criteria_changed
    assert changed.key == "log_isolation"
    assert {(c.field, c.old, c.new) for c in changed.changes} == {("weight", 0.7, 0.6), ("anchor_worst", 0.0, 0.1)}
    assert [(c.field, c.new) for c in diff.scoring] == [("tier_floor_bronze", 0.35)]
    out = StringIO()
    call_command("rubric", "diff", "small@1.0", "small@2.0", stdout=out)
    text = out.getvalue()
    assert "+ criterion pentest" in text and "- criterion node_ready" in text
    assert "~ criterion log_isolation.weight: 0.7 -> 0.6" in text


def test_cli_freeze_and_clone(draft):
    out = StringIO()
    call_command("rubric", "freeze", "small@1.0", stdout=out)
    assert "frozen; fingerprint sha256:" in out.getvalue()
    call_command("rubric", "clone", str(draft.pk), "--version", "1.1", stdout=out)
    assert RubricVersion.objects.get(version="1.1").parent_id == draft.pk
    with pytest.raises(CommandError, match="no rubric version 'small@9'"):
        call_command("rubric", "export", "small@9")


def test_sqlite_triggers_refuse_edits_of_a_frozen_version(tmp_path):
    """The quick start runs on SQLite: migrate a fresh file and try a raw UPDATE there."""
    db = tmp_path / "quickstart.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "OPGRADE_DEBUG": "1"}
    for argv in (["migrate", "--noinput"], ["rubric", "import", "rubric/data/opgrade-2026.1.yaml", "--freeze"]):
        result = subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stdout + result.stderr
    con = sqlite3.connect(db)
    try:
        for sql in ("UPDATE rubric_criterion SET weight = 0.5", "DELETE FROM rubric_area",
                    "UPDATE rubric_rubricversion SET title = 'x'",
                    "INSERT INTO rubric_area (rubric_version_id, key, title, description, weight, position) "
                    "SELECT id, 'x', 'x', '', 0.1, 9 FROM rubric_rubricversion"):
            with pytest.raises(sqlite3.IntegrityError, match="rubric version is frozen"):
                con.execute(sql)
    finally:
        con.close()
