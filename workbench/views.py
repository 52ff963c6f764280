"""The cycle workbench pages, inside the admin (its look, its login, its role rules).

Who sees what: analysts and admins read everything and act; publishers read everything and
act on nothing here; reviewers see only their own assignments of the cycle (never the matrix,
which would show their peers' reviews); provider accounts and anonymous users never get in
(the admin's login wall refuses non-staff). Each action is a POST that calls one service
and redirects back with a message; every page reads without JavaScript.
"""

from __future__ import annotations

import logging
from html import escape as html_escape
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from config.access import Role, user_role
from probes.services import QueueUnavailable
from providers.models import Cycle, Provider
from ratings.engine_types import ScoringInputError
from ratings.services import cycle_scores_compute
from reports.context import group_by_tier
from reports.errors import ReportError
from reports.models import Report
from reviews import services as review_services
from reviews.feedback_csv import COLUMNS, FeedbackFileError, feedback_csv_decode
from reviews.models import FeedbackImport
from reviews.selectors import cycle_alpha
from workbench import selectors, services

logger = logging.getLogger(__name__)

READERS = frozenset({Role.ANALYST, Role.PUBLISHER, Role.ADMIN})
ACTORS = frozenset({Role.ANALYST, Role.ADMIN})
VIEWERS = READERS | {Role.REVIEWER}


def _require(request: HttpRequest, roles: frozenset[Role]) -> Role:
    role = user_role(request.user)
    if role not in roles:
        raise PermissionDenied("Your role may not use this page of the workbench.")
    return role


def _context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    return {**admin.site.each_context(request), **extra}


def _back(cycle: Cycle) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("workbench:cycle", args=[cycle.slug]))


@require_safe
def cycle_index(request: HttpRequest) -> HttpResponse:
    role = _require(request, VIEWERS)
    cycles = selectors.cycle_workbench_list()
    if role == Role.REVIEWER:
        mine = set(request.user.review_assignments.values_list("cycle_id", flat=True))  # type: ignore[union-attr]
        cycles = [c for c in cycles if c.pk in mine]
    return TemplateResponse(request, "workbench/index.html", _context(request, cycles=cycles, title="Cycle workbench"))


class _EvidenceLinks:
    """Links from a matrix cell to its evidence: each admin URL reversed once, not per cell
    (4,000 cells on a 100 x 40 cycle; reverse() per cell cost most of a second)."""

    def __init__(self, cycle: Cycle) -> None:
        self.cycle = cycle.pk
        self.findings = reverse("admin:probes_finding_changelist")
        self.docs = reverse("admin:ratings_docreview_changelist")
        self.reviews = reverse("admin:reviews_reviewassignment_changelist")
        self.feedback = reverse("admin:ratings_customerfeedback_changelist")

        self._probe_query: dict[str, str] = {}

    def url(self, provider: Provider, criterion: Any, cell: selectors.Cell) -> str:
        if cell.findings and criterion.probe_id:
            probe = self._probe_query.get(criterion.probe_id)
            if probe is None:
                probe = self._probe_query[criterion.probe_id] = urlencode({"probe_id__exact": criterion.probe_id})
            return (f"{self.findings}?run__cycle__id__exact={self.cycle}&run__cluster__provider__id__exact="
                    f"{provider.pk}&{probe}")
        unit = f"cycle__id__exact={self.cycle}&provider__id__exact={provider.pk}"
        if cell.doc_reviews:
            return f"{self.docs}?{unit}&criterion__id__exact={criterion.pk}"
        if cell.reviews_open:
            return f"{self.reviews}?{unit}"
        if cell.feedback:
            return f"{self.feedback}?{unit}"
        return ""


def _matrix_row(row: selectors.ProviderRow, criteria: list[Any], links: _EvidenceLinks) -> str:
    """One provider's matrix cells as HTML, built here rather than in a template loop (speed)."""
    parts = []
    for criterion, cell in zip(criteria, row.cells, strict=True):
        cell.url = links.url(row.provider, criterion, cell)
        text = cell.text
        # The stdlib's escape: Django's is wrapped for lazy strings and cost a tenth of the page.
        inner = f'<a href="{html_escape(cell.url)}">{text}</a>' if cell.url else text
        parts.append(f'<td class="wb-{cell.css}">{inner}</td>')
    return mark_safe("".join(parts))  # noqa: S308 - labels are our constants; URLs are escaped


_PK = 987654321  # reversed once with this id, then replaced per row


class _RowLinks:
    """The providers table's admin links, each reversed once per page (not once per row)."""

    def __init__(self, request: HttpRequest, cycle: Cycle, can_act: bool) -> None:
        self.provider = reverse("admin:providers_provider_change", args=[_PK])
        self.cluster = reverse("admin:providers_cluster_change", args=[_PK])
        self.form = ""
        if can_act:
            self.form = (f'<form method="post" action="{html_escape(reverse("workbench:probes_run", args=[cycle.slug]))}">'
                         f'<input type="hidden" name="csrfmiddlewaretoken" value="{html_escape(get_token(request))}">'
                         '<input type="hidden" name="provider" value="{pk}">'
                         '<input type="submit" value="Run missing probes"></form>')

    def of(self, pattern: str, pk: int) -> str:
        return pattern.replace(str(_PK), str(pk))


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _provider_row(row: selectors.ProviderRow, links: _RowLinks) -> str:
    """One row of the providers table as HTML (built here for speed; every text is escaped)."""
    e = html_escape
    p = row.provider
    cov = _num(row.coverage_now)
    if row.below_floor:
        cov_td = f'<td class="wb-failed" title="below the coverage floor: Not rated">{cov} (below floor)'
    else:
        cov_td = f"<td>{cov}"
    if row.areas_below_floor:
        cov_td += f'<br><span class="wb-missing">areas under the area floor: {e(", ".join(row.areas_below_floor))}</span>'
    probs = ", ".join(f"{e(t)} {v:.2f}" for t, v in row.probabilities) or "-"
    gates = []
    for g in row.gates:
        css = "wb-measured" if g["status"] == "passes" else "wb-missing" if g["status"] == "not measured" else "wb-failed"
        cap = f" (cap {e(g['cap'])})" if g["cap"] and g["status"] != "passes" else ""
        gates.append(f'<span class="{css}">{e(g["criterion"])}: {e(g["status"])}{cap}</span>')
    clusters = ", ".join(
        f'<a href="{links.of(links.cluster, cl.pk)}">{e(cl.name)}</a>' for cl in row.clusters
    ) or "none"
    act = f"<td>{links.form.replace('{pk}', str(p.pk))}</td>" if links.form else ""
    return mark_safe(  # noqa: S308 - every value above is escaped or our own constant
        f'<tr>\n<td><a href="{links.of(links.provider, p.pk)}">{e(p.name)}</a></td>\n{cov_td}</td>\n'
        f"<td>{_num(row.snapshot_coverage)}</td>\n<td>{e(row.tier) or '-'}</td>\n<td>{probs}</td>\n"
        f"<td>{'; '.join(gates) or '-'}</td>\n<td>{clusters}</td>\n{act}</tr>"
    )


@require_safe
def cycle_page(request: HttpRequest, slug: str) -> HttpResponse:
    role = _require(request, VIEWERS)
    cycle = get_object_or_404(Cycle.objects.select_related("rubric_version"), slug=slug)
    if role == Role.REVIEWER:
        assignments = selectors.reviewer_assignments_get(cycle=cycle, reviewer=request.user)
        return TemplateResponse(request, "workbench/reviewer.html", _context(
            request, cycle=cycle, assignments=assignments, title=f"{cycle.name}: your review assignments",
        ))
    wb = selectors.cycle_workbench_get(cycle=cycle)
    links = _EvidenceLinks(cycle)
    row_links = _RowLinks(request, cycle, can_act=role in ACTORS)
    for row in wb.rows:
        row.matrix_html = _matrix_row(row, wb.criteria, links)
        row.provider_html = _provider_row(row, row_links)
    agreement = cycle_alpha(cycle=cycle)  # Krippendorff's alpha per documentation-review criterion
    return TemplateResponse(request, "workbench/cycle.html", _context(
        request, wb=wb, cycle=cycle, can_act=role in ACTORS, title=f"Workbench: {cycle.name}",
        agreement=agreement, alpha_flags=[a for a in agreement if a.alpha is not None and a.flagged],
    ))


@require_POST
def probes_run(request: HttpRequest, slug: str) -> HttpResponse:
    _require(request, ACTORS)
    cycle = get_object_or_404(Cycle, slug=slug)
    provider = None
    if request.POST.get("provider"):
        provider = Provider.objects.filter(pk=request.POST["provider"]).first() if request.POST[
            "provider"].isdigit() else None
        if provider is None:
            messages.error(request, "No such provider.")
            return _back(cycle)
    try:
        plan = services.cycle_probes_run(cycle=cycle, provider=provider)
    except services.WorkbenchError as exc:
        messages.error(request, str(exc))
        return _back(cycle)
    except QueueUnavailable:  # checked before any write: nothing was started, nothing written
        messages.error(request, "The queue is unavailable, nothing was started. Try again in a minute.")
        return _back(cycle)
    who = provider.name if provider else "the peer set"
    if plan.started:
        runs = reverse("admin:probes_proberun_changelist") + f"?cycle__id__exact={cycle.pk}&status__exact=pending"
        messages.success(request, format_html('Started {} probe runs for {}: <a href="{}">follow them</a>.',
                                              len(plan.started), who, runs))
    for cluster, probes in plan.queued_disruptive.items():
        messages.info(request, f"{cluster}: disruptive probes run last, one at a time: {', '.join(probes)}.")
    if not plan.started and not plan.queued_disruptive:
        messages.info(request, f"Nothing to run for {who}: every probe has a run that did not fail.")
    for why in plan.skipped:
        messages.warning(request, f"Skipped {why}.")
    return _back(cycle)


class ReviewAssignForm(forms.Form):
    """Which units to fill: one documentation-review criterion of the cycle's rubric (or all),
    for one provider of the peer set (or all). Choices are labelled with area, title and key."""

    criterion = forms.TypedChoiceField(coerce=int, required=False, empty_value=None,
                                       label="Criterion (documentation review)")
    provider = forms.TypedChoiceField(coerce=int, required=False, empty_value=None, label="Provider")

    def __init__(self, *args: Any, cycle: Cycle, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.criteria = {c.pk: c for c in services.cycle_review_criteria(cycle=cycle)}
        self.providers = {p.pk: p for p in cycle.providers.order_by("name")}
        self.fields["criterion"].choices = [("", f"Every unreviewed criterion ({len(self.criteria)})")] + [
            (c.pk, f"{c.area.title} · {c.title} ({c.key})") for c in self.criteria.values()
        ]
        self.fields["provider"].choices = [("", f"The whole peer set ({len(self.providers)})")] + [
            (p.pk, p.name) for p in self.providers.values()
        ]


@require_http_methods(["GET", "POST"])
def reviews_assign(request: HttpRequest, slug: str) -> HttpResponse:
    """Preview (GET) and make (POST) the first and second review assignments a cycle lacks."""
    role = _require(request, READERS)
    cycle = get_object_or_404(Cycle.objects.select_related("rubric_version"), slug=slug)
    if request.method == "POST" and role not in ACTORS:
        raise PermissionDenied("Only analysts and admins assign reviews.")
    form = ReviewAssignForm(request.POST if request.method == "POST" else request.GET or None, cycle=cycle)
    plan, error = None, ""
    if form.is_bound and not form.is_valid():
        error = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
    else:
        data = form.cleaned_data if form.is_bound else {}
        try:
            plan = services.cycle_reviews_plan(
                cycle=cycle, by=request.user, assign=request.method == "POST",
                criterion=form.criteria.get(data.get("criterion")) if data.get("criterion") else None,
                provider=form.providers.get(data.get("provider")) if data.get("provider") else None,
            )
        except services.WorkbenchError as exc:
            error = str(exc)
    if request.method == "POST":
        if error:
            messages.error(request, f"No review was assigned: {error}.")
        else:
            assert plan is not None
            messages.success(request, f"Assigned {len(plan.assignments)} reviews in {cycle.name}.")
            for why in plan.skipped:
                messages.info(request, f"Skipped {why}.")
            for why in plan.unfilled + plan.refused:
                messages.warning(request, f"Not assigned: {why}.")
        return _back(cycle)
    return TemplateResponse(request, "workbench/reviews.html", _context(
        request, cycle=cycle, form=form, plan=plan, error=error, can_act=role in ACTORS,
        title=f"Assign reviews in {cycle.name}",
    ))


@require_http_methods(["GET", "POST"])
def feedback_import(request: HttpRequest, slug: str) -> HttpResponse:
    """Upload a customer-feedback CSV: a dry run lists every bad row; an import shows its progress
    as it writes. The page streams: each progress line reaches the browser when it happens, so it
    works without JavaScript (and behind a proxy that honours X-Accel-Buffering: no)."""
    role = _require(request, READERS)
    cycle = get_object_or_404(Cycle.objects.select_related("rubric_version"), slug=slug)
    page = {"cycle": cycle, "can_act": role in ACTORS, "title": f"Customer feedback of {cycle.name}",
            "columns": COLUMNS, "every": f"{review_services.PROGRESS_EVERY:,}"}
    if request.method == "POST":
        if role not in ACTORS:
            raise PermissionDenied("Only analysts and admins import customer feedback.")
        upload = request.FILES.get("file")
        error = "" if upload is not None else "Choose a CSV file to import."
        decoded = None
        if upload is not None:
            try:
                decoded = feedback_csv_decode(upload.read())
            except FeedbackFileError as exc:
                error = f"{upload.name}: {exc}"
        if decoded is not None and upload is not None:
            steps = review_services.feedback_import_steps(
                cycle=cycle, text=decoded.text, filename=upload.name or "upload.csv", by=request.user,
                dry_run=bool(request.POST.get("dry_run")),
            )
            html = render_to_string("workbench/feedback.html", _context(request, streaming=True, **page),
                                    request=request)
            head, tail = html.split("<!--progress-->", 1)
            response = StreamingHttpResponse(
                _import_stream(head, tail, steps, name=upload.name or "upload.csv", encoding=decoded.encoding),
                content_type="text/html; charset=utf-8",
            )
            response["X-Accel-Buffering"] = "no"
            response["Cache-Control"] = "no-store"
            return response
        page["error"] = error
    page["imports"] = list(FeedbackImport.objects.filter(cycle=cycle).select_related("imported_by")[:20])
    return TemplateResponse(request, "workbench/feedback.html", _context(request, **page))


def _import_stream(head: str, tail: str, steps: Any, *, name: str, encoding: str) -> Any:
    e = html_escape
    yield head
    yield f"<li>{e(name)}: read as {e(encoding)}</li>\n"
    try:
        for step in steps:
            if isinstance(step, review_services.ImportReport):
                yield _import_result(step, name)
            else:
                phase, done, total = step
                of = f" of {total:,} ({done / total:.0%})" if total else ""
                yield f"<li>{e(phase)} {done:,} rows{of}</li>\n"
    except review_services.ReviewsError as exc:
        yield f'<li class="errornote">Nothing was written: {e(str(exc))}</li>\n'
    except Exception:
        logger.exception("customer-feedback import of %s failed", name)
        yield '<li class="errornote">The import failed and wrote nothing; the error is in the server log.</li>\n'
    yield tail


IMPORT_ERRORS_SHOWN = 500


def _import_result(report: Any, name: str) -> str:
    e = html_escape
    if not report.ok:
        errors = report.parsed.errors
        shown = "".join(f"<li>{e(name)}: {e(str(err))}</li>" for err in errors[:IMPORT_ERRORS_SHOWN])
        more = f"<li>and {len(errors) - IMPORT_ERRORS_SHOWN:,} more</li>" if len(errors) > IMPORT_ERRORS_SHOWN else ""
        return (f'<li class="errornote" id="wb-import-refused">{len(errors):,} problem(s) found; nothing was written.'
                f'<ul id="wb-import-errors">{shown}{more}</ul></li>\n')
    if report.dry_run:
        return f'<li id="wb-import-done">Dry run: {len(report.parsed.rows):,} rows valid; nothing written.</li>\n'
    return f'<li id="wb-import-done">Imported {report.written:,} rows (import #{report.batch_id}).</li>\n'


@require_http_methods(["GET", "POST"])
def tiers(request: HttpRequest, slug: str) -> HttpResponse:
    role = _require(request, READERS)
    cycle = get_object_or_404(Cycle.objects.select_related("rubric_version"), slug=slug)
    if request.method == "POST":
        if role not in ACTORS:
            raise PermissionDenied("Only analysts and admins compute tiers.")
        wb = selectors.cycle_workbench_get(cycle=cycle)
        if not wb.can_compute:
            blocked = "; ".join(i.text for i in wb.readiness if i.blocking and not i.ok)
            messages.error(request, f"Not ready to compute tiers: {blocked}.")
            return _back(cycle)
        try:
            snapshot = cycle_scores_compute(cycle=cycle)
        except ScoringInputError as exc:
            messages.error(request, f"The cycle cannot be scored: {exc}")
            return _back(cycle)
        messages.success(request, f"Tiers computed: score snapshot #{snapshot.pk}.")
        return _back(cycle)
    preview, error = None, ""
    try:
        preview = services.cycle_tiers_preview(cycle=cycle)
    except services.WorkbenchError as exc:
        error = str(exc)
    return TemplateResponse(request, "workbench/tiers.html", _context(
        request, cycle=cycle, preview=preview, error=error, can_act=role in ACTORS,
        title=f"Tiers of {cycle.name}: preview",
    ))


@require_POST
def report_draft(request: HttpRequest, slug: str) -> HttpResponse:
    _require(request, ACTORS)
    cycle = get_object_or_404(Cycle.objects.select_related("rubric_version"), slug=slug)
    wb = selectors.cycle_workbench_get(cycle=cycle)
    if not wb.can_draft:
        blocked = "; ".join(i.text for i in wb.readiness if i.blocking and not i.ok) or "no score snapshot yet"
        messages.error(request, f"Not ready to draft the report: {blocked}.")
        return _back(cycle)
    try:
        report = services.cycle_report_draft(cycle=cycle, user=request.user)
    except (services.WorkbenchError, ReportError) as exc:
        messages.error(request, str(exc))
        return _back(cycle)
    messages.success(request, f"Draft report #{report.pk} is ready; preview it below.")
    return HttpResponseRedirect(reverse("workbench:report_preview", args=[report.pk]))


def _methodology_url(doc: dict[str, Any]) -> str:
    rubric = doc.get("rubric") or {}
    try:
        return reverse("reports:methodology", args=[rubric.get("name", ""), rubric.get("version", "")])
    except NoReverseMatch:
        return ""


@require_safe
def report_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """A draft (or fact-check) report rendered as its public overview page will be."""
    _require(request, READERS)
    report = get_object_or_404(Report.objects.select_related("cycle"), pk=pk)
    doc = report.content if isinstance(report.content, dict) else {}
    try:
        html = render_to_string("reports/overview.html", {
            "report": report, "doc": doc, "superseded_by": None, "methodology_url": _methodology_url(doc),
            "groups": group_by_tier(doc.get("providers") or []),
        })
    except (KeyError, TypeError, ValueError, AttributeError, NoReverseMatch) as exc:
        return TemplateResponse(request, "workbench/report_preview.html", _context(
            request, report=report, cycle=report.cycle, error=f"This report's document cannot be rendered: {exc!r}",
            title=f"Preview of report #{report.pk}",
        ))
    # The page exactly as the public overview renders it; its stamp names the draft status.
    return HttpResponse(html)
