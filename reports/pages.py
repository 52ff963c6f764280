"""What every public report page shares: the report behind a cache key and the page's base context.

``reports.views`` (overview, provider pages, exports) and the sections' own pages
(``reports.costs_section``) build on these, so a section's page finds its report and frames it
(superseded banner, methodology link) exactly as the report's other pages do. Only reports the
public may see are found (``reports.selectors.report_public_get``).
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from reports import selectors
from reports.models import Report


def report_for(meta: dict[str, Any]) -> Report:
    """The public report a cache key's metadata (``reports.http.report_meta``) names."""
    return selectors.report_public_get(pk=meta["id"])


def page_context(report: Report) -> dict[str, Any]:
    """The template context every report page starts from: the report, its document, what
    superseded it (if it was) and the link to the methodology of its rubric version."""
    superseded_by = getattr(report, "superseded_by", None) if report.status == Report.Status.SUPERSEDED else None
    return {
        "report": report,
        "doc": report.content,
        "superseded_by": superseded_by,
        "methodology_url": reverse("reports:methodology", args=[
            report.content["rubric"]["name"], report.content["rubric"]["version"],
        ]),
    }
