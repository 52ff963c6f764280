"""Admin for reports: every transition is an action that calls one service.

Reports are never edited by hand here: content comes from the snapshot builder, and every
field is read-only. Actions: open fact-check, publish, correct (pick the replacement draft
and write the public notice) and withdraw (write the public notice). Refusals from the
services are shown as error messages and write nothing.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from config.access import can_publish
from config.admin_readonly import ReadOnlyAdminMixin
from reports import services
from reports.errors import ReportError
from reports.models import Report, ReportSource


class NoticeForm(forms.Form):
    notice = forms.CharField(widget=forms.Textarea(attrs={"rows": 4, "cols": 80}), max_length=4000,
                             help_text="Shown publicly with the report.")


class CorrectionForm(NoticeForm):
    replacement = forms.ModelChoiceField(queryset=Report.objects.none(),
                                         help_text="The draft (or fact-check) report to publish in its place.")

    def __init__(self, *args: Any, report: Report, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["replacement"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = Report.objects.filter(
            cycle_id=report.cycle_id, status__in=[Report.Status.DRAFT, Report.Status.FACT_CHECK]
        ).select_related("cycle")


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ["id", "cycle", "status", "short_hash", "published_at", "published_by", "supersedes"]
    list_filter = ["status", "cycle"]
    search_fields = ["content_hash", "cycle__name", "cycle__slug"]
    list_select_related = ["cycle", "published_by", "supersedes__cycle"]
    date_hierarchy = "published_at"
    actions = ["action_fact_check", "action_publish", "action_correct", "action_withdraw"]
    readonly_fields = [
        "cycle", "status", "content_hash", "public_link", "supersedes", "correction_notice", "created_at",
        "created_by", "fact_check_opened_at", "published_at", "published_by", "superseded_at", "withdrawn_at",
        "withdrawal_notice", "score_snapshot", "document",
    ]
    exclude = ["content"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Report]:
        # The document can be large; only the change page's "document" field loads it.
        return super().get_queryset(request).defer("content")

    @admin.display(description="content hash")
    def short_hash(self, report: Report) -> str:
        return report.content_hash[:16]

    @admin.display(description="public page")
    def public_link(self, report: Report) -> str:
        if not report.is_public:
            return "not public (draft or fact-check)"
        url = reverse("reports:overview", args=[report.pk])
        return format_html('<a href="{}">{}</a>', url, url)

    @admin.display(description="built from score snapshot")
    def score_snapshot(self, report: Report) -> str:
        source = ReportSource.objects.filter(report=report).select_related("score_snapshot").first()
        return str(source.score_snapshot) if source else "a document (no snapshot)"

    @admin.display(description="document")
    def document(self, report: Report) -> str:
        return format_html("<pre style='max-height:30em;overflow:auto'>{}</pre>",
                           json.dumps(report.content, indent=2, ensure_ascii=False, sort_keys=True))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # drafts come from score snapshots (service / API / management command)

    def has_change_permission(self, request: HttpRequest, obj: Report | None = None) -> bool:
        return super().has_change_permission(request, obj) if obj is None else False

    def has_delete_permission(self, request: HttpRequest, obj: Report | None = None) -> bool:
        if obj is not None and obj.is_public:
            return False
        return super().has_delete_permission(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Report]) -> None:
        for report in queryset:
            services.report_draft_discard(report=report)

    def delete_model(self, request: HttpRequest, obj: Report) -> None:
        services.report_draft_discard(report=obj)

    # --- actions -------------------------------------------------------------------------
    def _each(self, request: HttpRequest, queryset: QuerySet[Report], verb: str, call: Any) -> None:
        done = 0
        for report in queryset:
            try:
                call(report)
                done += 1
            except ReportError as exc:
                self.message_user(request, f"Report #{report.pk}: {exc}", messages.ERROR)
        if done:
            self.message_user(request, f"{verb} {done} report(s).", messages.SUCCESS)

    @admin.action(description="Open provider fact-check")
    def action_fact_check(self, request: HttpRequest, queryset: QuerySet[Report]) -> None:
        self._each(request, queryset, "Opened fact-check for",
                   lambda r: services.report_fact_check_open(report=r, user=request.user))

    @admin.action(description="Publish (publishers only)")
    def action_publish(self, request: HttpRequest, queryset: QuerySet[Report]) -> None:
        self._each(request, queryset, "Published", lambda r: services.report_publish(report=r, user=request.user))

    def _single(self, request: HttpRequest, queryset: QuerySet[Report], name: str) -> HttpResponse | None:
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one published report.", messages.ERROR)
            return None
        return HttpResponseRedirect(reverse(f"admin:reports_report_{name}", args=[queryset.get().pk]))

    @admin.action(description="Correct: publish a replacement with a notice")
    def action_correct(self, request: HttpRequest, queryset: QuerySet[Report]) -> HttpResponse | None:
        return self._single(request, queryset, "correct")

    @admin.action(description="Withdraw with a notice")
    def action_withdraw(self, request: HttpRequest, queryset: QuerySet[Report]) -> HttpResponse | None:
        return self._single(request, queryset, "withdraw")

    # --- the two actions that need a notice get a small form page -------------------------
    def get_urls(self) -> list:
        wrap = self.admin_site.admin_view
        return [
            path("<int:pk>/correct/", wrap(self.correct_view), name="reports_report_correct"),
            path("<int:pk>/withdraw/", wrap(self.withdraw_view), name="reports_report_withdraw"),
            *super().get_urls(),
        ]

    def _form_page(self, request: HttpRequest, report: Report, form: forms.Form, title: str) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request), "opts": self.model._meta, "title": title, "form": form,
            "report": report, "can_publish": can_publish(request.user),
        }
        return TemplateResponse(request, "admin/reports/report/notice_form.html", context)

    def _done(self, request: HttpRequest, report: Report) -> HttpResponse:
        return HttpResponseRedirect(reverse("admin:reports_report_change", args=[report.pk]))

    def _report_for_action(self, request: HttpRequest, pk: int) -> Report:
        """The report a correct/withdraw page acts on: through the admin's queryset, publishers only."""
        report = self.get_object(request, str(pk))
        if report is None:
            raise Http404("No such report.")
        if not (self.has_view_permission(request, report) and can_publish(request.user)):
            raise PermissionDenied
        return report

    def correct_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        report = self._report_for_action(request, pk)
        form = CorrectionForm(request.POST or None, report=report)
        if request.method == "POST" and form.is_valid():
            try:
                new = services.report_correct(report=report, replacement=form.cleaned_data["replacement"],
                                              notice=form.cleaned_data["notice"], user=request.user)
            except ReportError as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, f"Published report #{new.pk} superseding #{report.pk}.", messages.SUCCESS)
                return self._done(request, new)
        return self._form_page(request, report, form, f"Correct report #{report.pk}")

    def withdraw_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        report = self._report_for_action(request, pk)
        form = NoticeForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                services.report_withdraw(report=report, notice=form.cleaned_data["notice"], user=request.user)
            except ReportError as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, f"Withdrew report #{report.pk}.", messages.SUCCESS)
                return self._done(request, report)
        return self._form_page(request, report, form, f"Withdraw report #{report.pk}")


@admin.register(ReportSource)
class ReportSourceAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["report", "score_snapshot"]
    list_select_related = ["report__cycle", "score_snapshot__cycle"]
    search_fields = ["report__content_hash", "score_snapshot__content_hash"]
    readonly_fields = ["report", "score_snapshot"]
