"""Public report pages and exports. No login; only published, superseded or withdrawn
reports are reachable (reports.selectors filters drafts out), and every page shows the
content hash.

Each view reads the report's cache key first (one small query: hash, status, links) and
serves rendered bytes from ``reports.rendering.cache`` when it can, so a popular report
costs one indexed lookup per request. Responses carry an ETag derived from the content
hash and status, honour If-None-Match (304), and are Cache-Control: public.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_safe

from reports import charts, costs_section, grades_section, rendering, selectors
from reports.calibration import calibration_figures
from reports.context import group_by_tier
from reports.http import cached_response, public_report_bytes, report_meta
from reports.models import Report
from reports.pages import page_context, report_for
from rubric.models import RubricVersion
from rubric.selectors import rubric_version_diff


def _provider(report: Report, slug: str) -> dict[str, Any]:
    for provider in report.content["providers"]:
        if provider["slug"] == slug:
            return provider
    raise Http404("That provider is not in this report.")


# --- pages ------------------------------------------------------------------------------------
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """The latest published report, or the list of public reports when none is live."""
    latest = selectors.report_latest_published()
    if latest is not None:
        return HttpResponseRedirect(reverse("reports:overview", args=[latest.pk]))
    return report_index(request)


@require_safe
def report_index(request: HttpRequest) -> HttpResponse:
    reports = list(selectors.report_public_list())
    response = HttpResponse(render_to_string("reports/index.html", {"reports": reports}))
    patch_cache_control(response, public=True, max_age=60)
    return response


@require_safe
def overview(request: HttpRequest, pk: int) -> HttpResponse:
    meta = report_meta(pk)

    def render() -> bytes:
        report = report_for(meta)
        context = {**page_context(report), "groups": group_by_tier(report.content["providers"])}
        return render_to_string("reports/overview.html", context).encode()

    return cached_response(request, meta, "overview", render, "text/html; charset=utf-8")


@require_safe
def provider_page(request: HttpRequest, pk: int, slug: str) -> HttpResponse:
    meta = report_meta(pk)

    def render() -> bytes:
        report = report_for(meta)
        provider = _provider(report, slug)
        overrides = [o for o in report.content["overrides"] if o["provider"] == slug]
        context = {**page_context(report), "p": provider, "overrides": overrides}
        return render_to_string("reports/provider.html", context).encode()

    return cached_response(request, meta, f"provider:{slug}", render, "text/html; charset=utf-8")


@require_safe
def provider_text(request: HttpRequest, pk: int, slug: str) -> HttpResponse:
    meta = report_meta(pk)

    def render() -> bytes:
        report = report_for(meta)
        extra = {
            "status": report.status, "content_hash": report.content_hash,
            "withdrawal_notice": report.withdrawal_notice,
            "superseded_by_url": reverse("reports:overview", args=[meta["superseded_by__id"]])
            if meta.get("superseded_by__id") else "",
        }
        return rendering.provider_text(report.content, _provider(report, slug), meta=extra).encode()

    return cached_response(request, meta, f"text:{slug}", render, "text/plain; charset=utf-8")


@require_safe
def methodology(request: HttpRequest, name: str, version: str) -> HttpResponse:
    report = selectors.report_for_rubric_version(name=name, version=version)
    if report is None:
        raise Http404("No public report uses that rubric version.")
    versions = selectors.report_rubric_versions()
    position = versions.index((name, version))
    previous = versions[position - 1] if position > 0 else None
    previous_report = selectors.report_for_rubric_version(name=previous[0], version=previous[1]) if previous else None
    meta = {"id": report.pk, "content_hash": report.content_hash, "status": report.status,
            "superseded_by__id": getattr(getattr(report, "superseded_by", None), "pk", None)}
    figures = calibration_figures()
    figures_key = f"{figures['engine_version']}:{figures['date']}" if figures else ""
    kind = f"methodology:{name}:{version}:{previous_report.content_hash if previous_report else ''}:{figures_key}"

    def render() -> bytes:
        diff = rendering.methodology_diff(
            previous_report.content["methodology"] if previous_report else None, report.content["methodology"]
        )
        context = {
            **page_context(report), "previous": previous, "diff": diff,
            "rubric_diff_text": _rubric_diff_text(previous, (name, version)),
            "versions": versions,
            "calibration": figures,
            "calibration_svg": charts.reliability_svg(figures["bins"]) if figures else "",
        }
        return render_to_string("reports/methodology.html", context).encode()

    return cached_response(request, meta, kind, render, "text/html; charset=utf-8")


def _rubric_diff_text(previous: tuple[str, str] | None, current: tuple[str, str]) -> str:
    """The rubric app's own diff of two frozen versions, when both rows and the selector exist."""
    if previous is None:
        return ""
    rows = {(v.name, v.version): v for v in RubricVersion.objects.filter(
        name__in=[previous[0], current[0]], version__in=[previous[1], current[1]], status="frozen")}
    if previous not in rows or current not in rows:
        return ""
    return rubric_version_diff(a=rows[previous], b=rows[current]).as_text()


# --- exports ----------------------------------------------------------------------------------
@require_safe
def export_json(request: HttpRequest, pk: int) -> HttpResponse:
    meta = report_meta(pk)
    return cached_response(request, meta, "json", lambda: public_report_bytes(meta["id"]), "application/json")


@require_safe
def export_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    meta = report_meta(pk)
    builders = {"providers": rendering.providers_csv, "criteria": rendering.criteria_csv, **grades_section.CSV_TABLES,
                **costs_section.CSV_TABLES}
    if table not in builders:
        raise Http404("Unknown CSV table.")

    def render() -> bytes:
        report = report_for(meta)
        return builders[table](report.content, content_hash=report.content_hash)

    name = f"opgrade-report-{pk}-{table}-{meta['content_hash'][:12]}.csv"
    return cached_response(request, meta, f"csv:{table}", render, "text/csv; charset=utf-8", filename=name)


@require_safe
def export_pdf(request: HttpRequest, pk: int) -> HttpResponse:
    meta = report_meta(pk)

    def render() -> bytes:
        report = report_for(meta)
        context = {
            **page_context(report), "groups": group_by_tier(report.content["providers"]),
            "css": _inline_css(),
            "area_charts": {p["slug"]: charts.area_breakdown_svg(p["name"], p["areas"], ident=f"areas-{p['slug']}")
                            for p in report.content["providers"]},
        }
        return rendering.html_to_pdf(render_to_string("reports/print.html", context))

    name = f"opgrade-report-{pk}-{meta['content_hash'][:12]}.pdf"
    return cached_response(request, meta, "pdf", render, "application/pdf", filename=name)


def _inline_css() -> str:
    from django.contrib.staticfiles import finders

    path = finders.find("reports/report.css")
    return Path(path).read_text(encoding="utf-8") if path else ""


@require_safe
def chart_svg(request: HttpRequest, pk: int, chart: str, slug: str) -> HttpResponse:
    meta = report_meta(pk)
    if chart not in ("areas", "history", "grade-index"):
        raise Http404("Unknown chart.")

    def render() -> bytes:
        if chart == "grade-index":  # issue 17: slug names a grade's index series
            series = grades_section.index_series(report_for(meta).content, slug)
            if series is None:
                raise Http404("No such index series in this report.")
            return grades_section.index_history_svg(series).encode()
        provider = _provider(report_for(meta), slug)
        if chart == "areas":
            return charts.area_breakdown_svg(provider["name"], provider["areas"]).encode()
        return charts.tier_history_svg(provider["name"], provider["history"]).encode()

    return cached_response(request, meta, f"svg:{chart}:{slug}", render, "image/svg+xml")


@require_safe
def llms_txt(request: HttpRequest) -> HttpResponse:
    entries = []
    for report in selectors.report_public_list().filter(status=Report.Status.PUBLISHED).defer(None)[:10]:
        doc = report.content
        entries.append({
            "cycle_name": doc["cycle"]["name"], "status": report.status, "content_hash": report.content_hash,
            "json_url": reverse("reports:api-report-detail", args=[report.pk]),
            "methodology_url": reverse("reports:methodology", args=[doc["rubric"]["name"], doc["rubric"]["version"]]),
            "rubric": f"{doc['rubric']['name']} {doc['rubric']['version']}",
            "providers": [
                {"name": p["name"], "tier_label": p["tier_label"],
                 "url": reverse("reports:provider-text", args=[report.pk, p["slug"]])}
                for p in doc["providers"]
            ],
        })
    body = rendering.llms_index(entries, site=request.build_absolute_uri("/").rstrip("/"))
    response = HttpResponse(body, content_type="text/plain; charset=utf-8")
    patch_cache_control(response, public=True, max_age=60)
    return response
