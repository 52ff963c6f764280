"""Report lifecycle services: draft -> fact_check -> published -> superseded | withdrawn.

Every write to a Report goes through one of these functions. They check the state and the
user first and raise a ``reports.errors.ReportError`` subclass (writing nothing) when
refusing; the model and the database triggers refuse again if something bypasses them.
Publishing, correcting and withdrawing need ``reports.publish_report`` (the "publisher"
group). A correction publishes a *new* report (a draft prepared from the corrected
snapshot) that supersedes the old one with a public notice; the old one stays reachable.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from config.access import can_publish
from reports.context import DocumentError, content_hash, validate_document
from reports.errors import ReportInputError, ReportPermissionError, ReportStateError
from reports.models import Report, ReportSource

NOTICE_MAX = 4000


def _require_publisher(user: Any, action: str) -> None:
    if not can_publish(user):
        who = getattr(user, "get_username", lambda: "anonymous")()
        raise ReportPermissionError(
            f"{who or 'anonymous'} may not {action} reports: only publishers (permission reports.publish_report, "
            "group 'publisher') may."
        )


def _clean_notice(notice: str, what: str) -> str:
    text = (notice or "").strip()
    if not text:
        raise ReportInputError(f"a {what} needs a public notice saying what changed and why")
    if len(text) > NOTICE_MAX:
        raise ReportInputError(f"the {what} notice is {len(text)} characters; the limit is {NOTICE_MAX}")
    return text


def _locked(report: Report) -> Report:
    """Re-read the row under a lock so two publishers cannot race on one report."""
    return Report.objects.select_for_update().get(pk=report.pk)


def report_draft_create(*, cycle: Any, snapshot_document: dict[str, Any], user: Any = None) -> Report:
    """Store a report document as a draft for ``cycle`` (the document must name that cycle)."""
    try:
        validate_document(snapshot_document)
    except DocumentError as exc:
        raise ReportInputError(f"invalid report document: {exc}") from exc
    if snapshot_document["cycle"].get("slug") != cycle.slug:
        raise ReportInputError(
            f"the document is for cycle {snapshot_document['cycle'].get('slug')!r}, not {cycle.slug!r}"
        )
    return Report.objects.create(
        cycle=cycle, status=Report.Status.DRAFT, content=snapshot_document,
        content_hash=content_hash(snapshot_document), created_by=user if getattr(user, "pk", None) else None,
    )


@transaction.atomic
def report_fact_check_open(*, report: Report, user: Any = None) -> Report:
    """Open a draft for provider fact-check: providers see their own facts, nothing is public yet."""
    report = _locked(report)
    if report.status != Report.Status.DRAFT:
        raise ReportStateError(f"report #{report.pk} is {report.status}; only a draft can go to fact-check")
    report.status = Report.Status.FACT_CHECK
    report.fact_check_opened_at = timezone.now()
    report.save(update_fields=["status", "fact_check_opened_at"])
    return report


def _check_integrity(report: Report) -> None:
    if content_hash(report.content) != report.content_hash:
        raise ReportStateError(f"report #{report.pk}: content does not match its hash; rebuild the draft")


@transaction.atomic
def report_publish(*, report: Report, user: Any) -> Report:
    """Publish a fact-checked report. Its content and hash are frozen from here on."""
    _require_publisher(user, "publish")
    report = _locked(report)
    if report.status != Report.Status.FACT_CHECK:
        raise ReportStateError(
            f"report #{report.pk} is {report.status}; only a report in fact-check can be published "
            "(open the fact-check first)"
        )
    _check_integrity(report)
    live = Report.objects.filter(cycle_id=report.cycle_id, status=Report.Status.PUBLISHED).first()
    if live is not None:
        raise ReportStateError(
            f"cycle {report.cycle} already has published report #{live.pk}; publish this one as a correction"
        )
    report.status = Report.Status.PUBLISHED
    report.published_at = timezone.now()
    report.published_by = user
    report.save(update_fields=["status", "published_at", "published_by"])
    return report


@transaction.atomic
def report_correct(*, report: Report, replacement: Report, notice: str, user: Any) -> Report:
    """Publish ``replacement`` (a draft or fact-check report of the same cycle) superseding ``report``."""
    _require_publisher(user, "correct")
    text = _clean_notice(notice, "correction")
    report = _locked(report)
    replacement = _locked(replacement)
    if report.status != Report.Status.PUBLISHED:
        raise ReportStateError(f"report #{report.pk} is {report.status}; only the published report can be corrected")
    if replacement.status not in (Report.Status.DRAFT, Report.Status.FACT_CHECK):
        raise ReportStateError(
            f"replacement #{replacement.pk} is {replacement.status}; a correction must be a draft or in fact-check"
        )
    if replacement.cycle_id != report.cycle_id:
        raise ReportInputError(f"replacement #{replacement.pk} is for another cycle than report #{report.pk}")
    _check_integrity(replacement)
    if replacement.content_hash == report.content_hash:
        raise ReportInputError("the replacement has the same content as the published report; nothing to correct")
    now = timezone.now()
    report.status = Report.Status.SUPERSEDED
    report.superseded_at = now
    report.save(update_fields=["status", "superseded_at"])  # first, so the one-published rule holds
    replacement.status = Report.Status.PUBLISHED
    replacement.supersedes = report
    replacement.correction_notice = text
    replacement.published_at = now
    replacement.published_by = user
    replacement.save(update_fields=["status", "supersedes", "correction_notice", "published_at", "published_by"])
    return replacement


@transaction.atomic
def report_withdraw(*, report: Report, notice: str, user: Any) -> Report:
    """Withdraw the published report: it stays reachable, marked withdrawn, with the notice."""
    _require_publisher(user, "withdraw")
    text = _clean_notice(notice, "withdrawal")
    report = _locked(report)
    if report.status != Report.Status.PUBLISHED:
        raise ReportStateError(f"report #{report.pk} is {report.status}; only a published report can be withdrawn")
    report.status = Report.Status.WITHDRAWN
    report.withdrawn_at = timezone.now()
    report.withdrawal_notice = text
    report.save(update_fields=["status", "withdrawn_at", "withdrawal_notice"])
    return report


@transaction.atomic
def report_draft_discard(*, report: Report) -> None:
    """Delete a draft or fact-check report (never a published one)."""
    report = _locked(report)
    if report.status not in (Report.Status.DRAFT, Report.Status.FACT_CHECK):
        raise ReportStateError(f"report #{report.pk} is {report.status}; published reports are never deleted")
    report.delete()


def report_draft_create_from_snapshot(*, snapshot: Any, user: Any = None) -> Report:
    """Build the document from a ratings.ScoreSnapshot (with movement, history and overrides) as a draft."""
    from costs.document import cost_section
    from grades.selectors import grade_report_section
    from reports.context import build_report_document
    from reports.snapshot import snapshot_report_input

    try:
        document = build_report_document(snapshot_report_input(snapshot))
    except DocumentError as exc:
        raise ReportInputError(f"score snapshot {snapshot.pk} cannot make a report: {exc}") from exc
    document["costs"] = cost_section(snapshot.cycle)  # issue 16: the cost curve, beside the tiers
    document["grades"] = grade_report_section(snapshot=snapshot)  # issue 17: grade sheet, price index, tracking
    with transaction.atomic():
        report = report_draft_create(cycle=snapshot.cycle, snapshot_document=document, user=user)
        ReportSource.objects.create(report=report, score_snapshot=snapshot)
    return report
