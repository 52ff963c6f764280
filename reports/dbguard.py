"""Database triggers that keep published reports immutable, whatever the caller.

The services and ``Report.save`` already refuse changes, but ``QuerySet.update``, raw SQL
and a future careless migration bypass both. These triggers are the last line: once a
report is published, superseded or withdrawn, the row's frozen columns never change, it
is never deleted, and its status only moves published -> superseded | withdrawn (with the
matching timestamp/notice columns set in that same UPDATE, and never again after).

Both vendors raise an integrity error (PostgreSQL SQLSTATE 23001 ``restrict_violation``,
SQLite ``RAISE(ABORT)`` which surfaces as a constraint failure), so Django reports
``django.db.IntegrityError``. Migrations call :func:`install` with an explicit column list
so each migration keeps meaning what it meant when it was written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PUBLIC = "('published', 'superseded', 'withdrawn')"
TABLE = "reports_report"
MESSAGE = "reports_report: a published report is immutable (publish a correction or withdraw it)"


def _changed(columns: Sequence[str], *, distinct: str) -> str:
    return " OR ".join(f"NEW.{c} {distinct} OLD.{c}" for c in columns)


def _bad_transition(*, same_op: str) -> str:
    """True when a published-family row's status/notice columns change in a way not allowed."""

    def same(columns: Sequence[str]) -> str:
        return " AND ".join(f"NEW.{c} {same_op} OLD.{c}" for c in columns)

    keep_all = same(["superseded_at", "withdrawn_at", "withdrawal_notice"])
    keep_withdrawn = same(["withdrawn_at", "withdrawal_notice"])
    keep_superseded = same(["superseded_at"])
    return (
        "NOT ("
        f"(NEW.status = OLD.status AND {keep_all})"
        f" OR (OLD.status = 'published' AND NEW.status = 'superseded'"
        f" AND NEW.superseded_at IS NOT NULL AND {keep_withdrawn})"
        f" OR (OLD.status = 'published' AND NEW.status = 'withdrawn'"
        f" AND NEW.withdrawn_at IS NOT NULL AND {keep_superseded})"
        ")"
    )


def postgresql_sql(columns: Sequence[str]) -> list[str]:
    changed = _changed(columns, distinct="IS DISTINCT FROM")
    bad = _bad_transition(same_op="IS NOT DISTINCT FROM")
    return [
        f"""
CREATE OR REPLACE FUNCTION reports_report_guard() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.status IN {PUBLIC} THEN
            RAISE EXCEPTION '% (report %, status %: refused DELETE)', '{MESSAGE}', OLD.id, OLD.status
                USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.status IN {PUBLIC} AND (({changed}) OR {bad}) THEN
        RAISE EXCEPTION '% (report %, status %: refused UPDATE)', '{MESSAGE}', OLD.id, OLD.status
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
""",
        f"DROP TRIGGER IF EXISTS reports_report_guard ON {TABLE};",
        f"CREATE TRIGGER reports_report_guard BEFORE UPDATE OR DELETE ON {TABLE} "
        "FOR EACH ROW EXECUTE FUNCTION reports_report_guard();",
    ]


def sqlite_sql(columns: Sequence[str]) -> list[str]:
    changed = _changed(columns, distinct="IS NOT")
    bad = _bad_transition(same_op="IS")
    return [
        "DROP TRIGGER IF EXISTS reports_report_no_delete;",
        f"CREATE TRIGGER reports_report_no_delete BEFORE DELETE ON {TABLE} FOR EACH ROW "
        f"WHEN OLD.status IN {PUBLIC} BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END;",
        "DROP TRIGGER IF EXISTS reports_report_frozen;",
        f"CREATE TRIGGER reports_report_frozen BEFORE UPDATE ON {TABLE} FOR EACH ROW "
        f"WHEN OLD.status IN {PUBLIC} AND (({changed}) OR {bad}) "
        f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END;",
    ]


def uninstall_sql(vendor: str) -> list[str]:
    if vendor == "postgresql":
        return [f"DROP TRIGGER IF EXISTS reports_report_guard ON {TABLE};", "DROP FUNCTION IF EXISTS reports_report_guard();"]
    if vendor == "sqlite":
        return ["DROP TRIGGER IF EXISTS reports_report_no_delete;", "DROP TRIGGER IF EXISTS reports_report_frozen;"]
    return []


def install(schema_editor: Any, columns: Sequence[str]) -> None:
    """Install (or replace) the guard for the connection's vendor; other vendors are refused."""
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        statements = postgresql_sql(columns)
    elif vendor == "sqlite":
        statements = sqlite_sql(columns)
    else:
        raise NotImplementedError(f"reports: no immutability trigger for database vendor {vendor!r}")
    for statement in statements:
        schema_editor.execute(statement, params=None)


def uninstall(schema_editor: Any) -> None:
    for statement in uninstall_sql(schema_editor.connection.vendor):
        schema_editor.execute(statement, params=None)
