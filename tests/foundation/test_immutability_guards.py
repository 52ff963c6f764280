"""Immutable tables stay guarded on SQLite even after a later migration rebuilds them.

SQLite carries out most ALTERs by rebuilding the table (copy, drop, rename), and the rebuild
drops the table's triggers without a word. config.immutability reinstalls every app's guards
after each migrate; here a fresh SQLite file is migrated, probes_finding is rebuilt the way a
later AlterField migration would do it (schema_editor.alter_field), and a raw UPDATE must
still be refused once migrate has run again.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from config import immutability
from grades.guards import GUARDS as GRADE_GUARDS
from probes.guards import GUARDS as PROBE_GUARDS
from ratings.guards import GUARDS as RATING_GUARDS
from reports.guards import GUARDS as REPORT_GUARDS
from rubric.guards import GUARDS as RUBRIC_GUARDS

ROOT = Path(__file__).resolve().parents[2]

REBUILD = """
import json
from django.db import connection, models
from probes.models import Finding

def triggers():
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'probes_finding'")
        return sorted(row[0] for row in cursor.fetchall())

before = triggers()
old = Finding._meta.get_field("summary")
new = models.CharField(max_length=600, blank=True)
new.set_attributes_from_name("summary")
new.model = Finding
with connection.schema_editor() as editor:  # what a later AlterField migration runs
    editor.alter_field(Finding, old, new)
print(json.dumps({"before": before, "after_rebuild": triggers()}))
"""


def _manage(env: dict[str, str], *argv: str) -> str:
    result = subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout


def _triggers(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'probes_finding'")
        return sorted(r[0] for r in rows)
    finally:
        con.close()


def test_a_table_rebuilt_by_a_later_migration_on_sqlite_still_refuses_updates(tmp_path):
    db = tmp_path / "rebuild.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "OPGRADE_DEBUG": "1", "OPGRADE_VAR_DIR": str(tmp_path)}
    _manage(env, "migrate", "--noinput", "-v0")
    guarded = ["probes_finding_immutable_delete", "probes_finding_immutable_update"]
    assert _triggers(db) == guarded

    # A trigger of the first, hand-written generation is replaced, not kept beside the new one.
    con = sqlite3.connect(db)
    con.execute("CREATE TRIGGER probes_finding_no_update BEFORE UPDATE ON probes_finding "
                "BEGIN SELECT RAISE(ABORT, 'legacy'); END;")
    con.commit()
    con.close()

    seen = json.loads(_manage(env, "shell", "-c", REBUILD).strip().splitlines()[-1])
    assert seen["before"] == sorted([*guarded, "probes_finding_no_update"])
    assert seen["after_rebuild"] == [], "SQLite's rebuild dropped the triggers (what this guards against)"

    _manage(env, "migrate", "--noinput", "-v0")  # the end of any later migrate
    assert _triggers(db) == guarded

    con = sqlite3.connect(db)  # a raw connection: foreign keys off, nothing but the triggers in the way
    try:
        con.execute(
            "INSERT INTO probes_finding (run_id, probe_id, probe_version, target, metric, outcome, unit, critical, "
            "summary, evidence, attempt, created_at, threshold_ref) "
            "VALUES (1, 'p', '1', 't', '', 'pass', '', 0, 's', '{}', 1, '2026-01-01', '')"
        )
        with pytest.raises(sqlite3.IntegrityError, match="a finding is immutable"):
            con.execute("UPDATE probes_finding SET outcome = 'fail'")
        with pytest.raises(sqlite3.IntegrityError, match="a finding is immutable"):
            con.execute("DELETE FROM probes_finding")
    finally:
        con.close()


def test_every_immutable_table_is_registered_for_the_reinstall():
    registered = {g.table for guards in immutability.registered().values() for g in guards}
    assert registered == {
        "rubric_rubricversion", "rubric_area", "rubric_criterion", "probes_finding",
        "ratings_scoresnapshot", "ratings_tierassignment", "reports_report", "grades_gradedefinition",
    }
    assert {g.name for g in (*RUBRIC_GUARDS, *PROBE_GUARDS, *RATING_GUARDS, *REPORT_GUARDS, *GRADE_GUARDS)} == {
        g.name for guards in immutability.registered().values() for g in guards
    }


def test_a_guard_names_only_row_operations():
    with pytest.raises(ValueError, match="operations must be among"):
        immutability.Guard(name="x", table="t", message="m", refuse={"TRUNCATE": "TRUE"})
    with pytest.raises(ValueError, match="quote"):
        immutability.Guard(name="x", table="t", message="it's", refuse={"UPDATE": "TRUE"})
