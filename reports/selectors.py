"""Reads for reports. Public selectors only ever return published-family reports.

Drafts and fact-check copies are filtered out here, in one place, so that no public view,
export or API endpoint can reach them by forgetting a filter.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from reports.models import Report


def report_public_queryset() -> QuerySet[Report]:
    return Report.objects.filter(status__in=Report.PUBLIC_STATUSES)


def report_public_list() -> QuerySet[Report]:
    """Every public report, newest publication first, without the (large) content."""
    return (
        report_public_queryset()
        .select_related("cycle", "cycle__rubric_version", "supersedes")
        .defer("content")
        .order_by("-published_at", "-id")
    )


def report_public_get(*, pk: int) -> Report:
    """One public report or Report.DoesNotExist (also for drafts: they do not exist publicly)."""
    return report_public_queryset().select_related("cycle", "supersedes").get(pk=pk)


def report_public_meta(*, pk: int) -> dict[str, Any] | None:
    """The few columns that decide a cached rendering: hash, status and correction links.

    One indexed query without the content; the renderers cache bytes keyed on these.
    """
    return (
        report_public_queryset()
        .filter(pk=pk)
        .values("id", "content_hash", "status", "superseded_by__id", "supersedes_id")
        .first()
    )


def report_latest_published() -> Report | None:
    """The newest live report (status published), by cycle period then publication time."""
    return (
        Report.objects.filter(status=Report.Status.PUBLISHED)
        .select_related("cycle")
        .defer("content")
        .order_by("-cycle__period_end", "-published_at", "-id")
        .first()
    )


def report_history_before(*, cycle: Any) -> list[Report]:
    """The live published report of every cycle that ended before ``cycle`` started, oldest first."""
    return list(
        Report.objects.filter(status=Report.Status.PUBLISHED, cycle__period_end__lt=cycle.period_start)
        .select_related("cycle")
        .order_by("cycle__period_end", "id")
    )


def report_for_rubric_version(*, name: str, version: str) -> Report | None:
    """The newest public report made under a rubric version (its methodology section)."""
    return (
        report_public_queryset()
        .filter(content__rubric__name=name, content__rubric__version=version)
        .order_by("-published_at", "-id")
        .first()
    )


def report_rubric_versions() -> list[tuple[str, str]]:
    """(name, version) of every rubric version with a public report, in first-publication order."""
    seen: dict[tuple[str, str], None] = {}
    rows = (
        report_public_queryset()
        .order_by("published_at", "id")
        .values_list("content__rubric__name", "content__rubric__version")
    )
    for name, version in rows:
        seen.setdefault((str(name), str(version)), None)
    return list(seen)


def report_provider_facts(*, report: Report, provider_slug: str) -> dict[str, Any] | None:
    """One provider's section of a report in fact-check (for the provider portal's right of reply)."""
    if report.status != Report.Status.FACT_CHECK:
        return None
    for provider in report.content.get("providers", []):
        if provider.get("slug") == provider_slug:
            return provider
    return None


def report_in_fact_check(*, cycle: Any) -> Report | None:
    """The cycle's newest report in fact-check (what the provider portal shows and replies to)."""
    return Report.objects.filter(cycle=cycle, status=Report.Status.FACT_CHECK).order_by("-pk").first()


def report_in_fact_check_exists(*, cycle: Any, pk: int) -> bool:
    """Whether ``pk`` is one of the cycle's reports in fact-check (a reply may name only those)."""
    if not 1 <= pk < 2**63:  # beyond a bigint: no such row, and no overflow in the driver
        return False
    return Report.objects.filter(pk=pk, cycle=cycle, status=Report.Status.FACT_CHECK).exists()
