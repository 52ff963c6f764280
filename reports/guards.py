"""The database keeps published reports immutable, whatever the caller (config.immutability).

The services and ``Report.save`` already refuse changes, but ``QuerySet.update``, raw SQL
and a careless migration bypass both. Once a report is published, superseded or withdrawn,
the row's frozen columns never change, it is never deleted, and its status only moves
published -> superseded | withdrawn (with the matching timestamp/notice columns set in that
same UPDATE, and never again after). Migration 0002 installs the guard with the column list
it was written with; after every migrate it is reinstalled with ``FROZEN_COLUMNS``.
"""

from __future__ import annotations

from collections.abc import Sequence

from config.immutability import Guard

PUBLIC = "('published', 'superseded', 'withdrawn')"
MESSAGE = "reports_report: a published report is immutable (publish a correction or withdraw it)"
FROZEN_COLUMNS: tuple[str, ...] = (
    "cycle_id", "content", "content_hash", "supersedes_id", "correction_notice", "published_at",
    "published_by_id", "created_at", "created_by_id", "fact_check_opened_at",
)


def _bad_transition() -> str:
    """True when a published-family row's status/notice columns change in a way not allowed."""

    def same(columns: Sequence[str]) -> str:
        return " AND ".join(f"NEW.{c} {{same}} OLD.{c}" for c in columns)

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


def report_guard(columns: Sequence[str] = FROZEN_COLUMNS) -> Guard:
    changed = " OR ".join(f"NEW.{c} {{distinct}} OLD.{c}" for c in columns)
    return Guard(
        name="reports_report_guard", table="reports_report", message=MESSAGE, errcode="restrict_violation",
        refuse={
            "UPDATE": f"OLD.status IN {PUBLIC} AND (({changed}) OR {_bad_transition()})",
            "DELETE": f"OLD.status IN {PUBLIC}",
        },
        replaces=("reports_report_no_delete", "reports_report_frozen"),
    )


GUARDS: tuple[Guard, ...] = (report_guard(),)
