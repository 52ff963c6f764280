"""Admin for the human-evidence workflow, including the reviewers' blind-review screens.

Who may use each page is declared by Django model permissions held by the role groups
(config.access.ROLE_PERMISSIONS); querysets are narrowed on top of that, so a reviewer
sees only "My assignments" and never another reviewer's score while blind. Forms call
the services, so the admin enforces the same rules as the API (conflicts, four eyes...).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html_join

from config.access import ALL_STAFF_READ, Role, user_role
from config.admin_readonly import ReadOnlyAdminMixin
from config.history_admin import GuardedHistoryAdmin
from providers.models import Cycle
from ratings.models import ScoreOverride
from reviews import selectors, services, token_admin  # noqa: F401  (token_admin registers API tokens' admin)
from reviews.models import (
    AuditEvent,
    ConflictOfInterest,
    FeedbackImport,
    InterviewNote,
    ProviderMembership,
    Reconciliation,
    ReviewAssignment,
    RightOfReply,
)
from rubric.models import Criterion


def _sees_all(request: HttpRequest) -> bool:
    return user_role(request.user) in ALL_STAFF_READ


def citations_parse(text: str) -> list[dict[str, str]]:
    """Admin citation input: one per line, ``URL | quote``."""
    citations = []
    for number, line in enumerate((ln.strip() for ln in text.splitlines()), start=1):
        if not line:
            continue
        url, sep, quote = line.partition("|")
        if not sep:
            raise forms.ValidationError(f"line {number}: write 'URL | quote'")
        citations.append({"url": url.strip(), "quote": quote.strip()})
    try:
        return services.citations_clean(citations)
    except services.ReviewsError as exc:
        raise forms.ValidationError(str(exc)) from exc


@admin.register(ProviderMembership)
class ProviderMembershipAdmin(GuardedHistoryAdmin):
    list_display = ["user", "provider", "created_at"]
    list_filter = ["provider"]
    search_fields = ["user__username", "provider__name"]
    list_select_related = ["user", "provider"]
    autocomplete_fields = ["provider"]
    raw_id_fields = ["user"]


@admin.register(ConflictOfInterest)
class ConflictOfInterestAdmin(GuardedHistoryAdmin):
    list_display = ["reviewer", "provider", "declared_at", "note"]
    list_filter = ["provider"]
    search_fields = ["reviewer__username", "provider__name", "note"]
    list_select_related = ["reviewer", "provider"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ConflictOfInterest]:
        qs = super().get_queryset(request)
        return qs if _sees_all(request) else qs.filter(reviewer=request.user)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if _sees_all(request):
            return ["reviewer", "provider", "note"]
        return ["provider", "note"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["reviewer", "provider"] if obj is not None else []

    def save_model(self, request: HttpRequest, obj: ConflictOfInterest, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        reviewer = obj.reviewer if _sees_all(request) and obj.reviewer_id else request.user
        saved = services.conflict_declare(reviewer=reviewer, provider=obj.provider, note=obj.note, by=request.user)
        obj.pk, obj.reviewer, obj.declared_at = saved.pk, saved.reviewer, saved.declared_at


class CriterionChoiceField(forms.ModelChoiceField):
    """Criteria named in full: rubric version, area, title and key (not 441 bare keys)."""

    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.rubric_version.name} {obj.rubric_version.version} · {obj.area.title} · {obj.title} ({obj.key})"


class AssignmentAddForm(forms.ModelForm):
    class Meta:
        model = ReviewAssignment
        fields = ["cycle", "provider", "criterion", "reviewer", "slot"]
        field_classes = {"criterion": CriterionChoiceField}

    request: HttpRequest  # set per request by ReviewAssignmentAdmin.get_form

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "criterion" in self.fields:
            self.fields["criterion"].queryset = self._criteria()
            self.fields["criterion"].help_text = (
                "Documentation-review criteria of the cycle's rubric version (of open cycles until one is chosen)."
            )

    def _criteria(self) -> QuerySet[Criterion]:
        """Only criteria a reviewer can score in a cycle: the chosen cycle's rubric version (or those
        of cycles not closed yet), and only those that take documentation review."""
        chosen = self.data.get(self.add_prefix("cycle")) or self.initial.get("cycle")
        cycles = Cycle.objects.filter(pk=chosen) if str(chosen or "").isdigit() else (
            Cycle.objects.exclude(status=Cycle.Status.CLOSED)
        )
        candidates = Criterion.objects.filter(rubric_version__in=cycles.values("rubric_version"))
        ids = [pk for pk, kinds in candidates.values_list("pk", "evidence_kinds") if "doc_review" in kinds]
        return (Criterion.objects.filter(pk__in=ids).select_related("rubric_version", "area")
                .order_by("rubric_version__name", "rubric_version__version", "area__position", "position", "key"))

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if all(data.get(k) for k in ("cycle", "provider", "criterion", "reviewer", "slot")):
            try:
                services.assignment_validate(by=self.request.user, **{
                    k: data[k] for k in ("cycle", "provider", "criterion", "reviewer", "slot")
                })
            except services.ReviewsError as exc:
                raise forms.ValidationError(str(exc)) from exc
        return data


class ReviewSubmitForm(forms.ModelForm):
    score = forms.TypedChoiceField(
        choices=[(i, str(i)) for i in range(5)], coerce=int, label="Score (0-4)",
        help_text="0 absent · 1 poor · 2 adequate · 3 good · 4 exemplary",
    )
    citations_text = forms.CharField(
        label="Citations", widget=forms.Textarea(attrs={"rows": 4, "cols": 100}),
        help_text="One per line: URL | the quoted passage from the provider's documentation.",
    )

    class Meta:
        model = ReviewAssignment
        fields = ["notes"]

    def clean_citations_text(self) -> list[dict[str, str]]:
        return citations_parse(self.cleaned_data["citations_text"])


@admin.register(ReviewAssignment)
class ReviewAssignmentAdmin(GuardedHistoryAdmin):
    """Analysts assign; a reviewer sees "My assignments" and submits a blind score."""

    list_display = ["__str__", "criterion_title", "slot", "status", "reviewer_name", "submitted_at"]
    list_filter = ["status", "slot", "cycle"]
    search_fields = ["provider__name", "criterion__key", "criterion__title"]
    list_select_related = ["cycle", "provider", "criterion", "reviewer"]
    change_form_template = "admin/reviews/reviewassignment/change_form.html"
    history_field_substitutes = {"citations_text": "citations_list"}  # the submit form's box, shown as a list
    _read_fields = ["cycle", "provider", "criterion", "criterion_description", "slot", "status"]

    @admin.display(description="criterion", ordering="criterion__title")
    def criterion_title(self, obj: ReviewAssignment) -> str:
        return obj.criterion.title

    @admin.display(description="reviewer", ordering="reviewer__username")
    def reviewer_name(self, obj: ReviewAssignment) -> str:
        return obj.reviewer.get_username()

    @admin.display(description="what to judge")
    def criterion_description(self, obj: ReviewAssignment) -> str:
        return obj.criterion.description or obj.criterion.title

    @admin.display(description="citations")
    def citations_list(self, obj: ReviewAssignment) -> str:
        return format_html_join("", "<p><a href='{}' rel='noopener'>{}</a>: “{}”</p>",
                                ((c.get("url"), c.get("url"), c.get("quote")) for c in obj.citations))

    def _is_own_open(self, request: HttpRequest, obj: ReviewAssignment | None) -> bool:
        return obj is not None and obj.reviewer_id == request.user.pk and not obj.is_submitted

    def get_queryset(self, request: HttpRequest) -> QuerySet[ReviewAssignment]:
        return selectors.assignment_list(user=request.user).select_related(None).select_related(
            *self.list_select_related
        )

    def get_list_display(self, request: HttpRequest) -> list[str]:
        if _sees_all(request):
            return self.list_display
        return [f for f in self.list_display if f != "reviewer_name"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return user_role(request.user) in {Role.ANALYST, Role.ADMIN} and super().has_add_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # reviews are evidence; an analyst reassigns instead

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return ["cycle", "provider", "criterion", "reviewer", "slot"]
        if self._is_own_open(request, obj):
            return [*self._read_fields, "score", "citations_text", "notes"]
        fields = [*self._read_fields, "score", "citations_list", "notes", "submitted_at"]
        return ["reviewer", *fields] if _sees_all(request) else fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return []
        if self._is_own_open(request, obj):
            return ["criterion_description", "cycle", "provider", "criterion", "slot", "status"]
        return self.get_fields(request, obj)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = AssignmentAddForm
        elif self._is_own_open(request, obj):
            kwargs["form"] = ReviewSubmitForm
            kwargs["fields"] = ["notes", "score", "citations_text"]
        form = super().get_form(request, obj, change=change, **kwargs)
        form.request = request
        return form

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        extra_context = dict(extra_context or {})
        obj = self.get_queryset(request).filter(pk=object_id).first() if object_id.isdigit() else None
        if obj is not None:
            extra_context["peer_scores"] = selectors.peer_scores(assignment=obj, user=request.user)
            extra_context["peer_scores_blind"] = extra_context["peer_scores"] is None
            if self._is_own_open(request, obj):
                extra_context["title"] = "Submit your blind review"
        return super().change_view(request, object_id, form_url, extra_context)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        extra_context = dict(extra_context or {})
        if not _sees_all(request):
            extra_context["title"] = "My assignments"
        return super().changelist_view(request, extra_context)

    def save_model(self, request: HttpRequest, obj: ReviewAssignment, form: Any, change: bool) -> None:
        if not change:
            created = services.assignment_create(
                cycle=obj.cycle, provider=obj.provider, criterion=obj.criterion, reviewer=obj.reviewer, slot=obj.slot,
                by=request.user,
            )
            obj.pk, obj.created_at = created.pk, created.created_at
            return
        if isinstance(form, ReviewSubmitForm):
            result = services.review_submit(
                assignment=obj, by=request.user, score=form.cleaned_data["score"],
                citations=form.cleaned_data["citations_text"], notes=form.cleaned_data.get("notes", ""),
            )
            if result.third_assignment is not None:
                messages.info(request, "The first and second scores differ by 2+ points: a third reviewer was assigned.")
            elif result.needs_third_reviewer:
                messages.warning(request, "The scores differ by 2+ points but no unconflicted third reviewer is free.")
            return
        super().save_model(request, obj, form, change)


@admin.register(Reconciliation)
class ReconciliationAdmin(GuardedHistoryAdmin):
    list_display = ["cycle", "provider", "criterion", "value", "method", "reconciled_by", "created_at"]
    list_filter = ["cycle", "method"]
    search_fields = ["provider__name", "criterion__key"]
    list_select_related = ["cycle", "provider", "criterion", "reconciled_by"]
    readonly_fields = ["cycle", "provider", "criterion", "value", "method", "reviews_list", "note", "reconciled_by",
                       "created_at"]
    fields = readonly_fields

    @admin.display(description="raw reviews")
    def reviews_list(self, obj: Reconciliation) -> str:
        return format_html_join(", ", "{} ({}: {})", ((r.pk, r.slot, r.score) for r in obj.reviews.all()))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # created by the reconciliation service (API), which applies the rules


class ScoreOverrideAddForm(forms.ModelForm):
    """The proposal form: every rule of ``services.override_propose`` is checked here, so a refused
    proposal (a plain override of a gate failed by a critical finding, say) is a form error."""

    class Meta:
        model = ScoreOverride
        fields = ["cycle", "provider", "criterion", "value", "reason", "justification", "evidence", "evidence_finding"]

    request: HttpRequest  # set per request by ScoreOverrideAdmin.get_form

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if all(data.get(k) is not None for k in ("cycle", "provider", "criterion", "value", "reason")):
            try:
                data["evidence"] = services.override_validate(
                    by=self.request.user, cycle=data["cycle"], provider=data["provider"],
                    criterion=data["criterion"], value=data["value"], justification=data.get("justification") or "",
                    evidence=data.get("evidence"), reason=data["reason"],
                    evidence_finding=data.get("evidence_finding"),
                )
            except services.ReviewsError as exc:
                raise forms.ValidationError(str(exc)) from exc
        return data


@admin.register(ScoreOverride)
class ScoreOverrideAdmin(GuardedHistoryAdmin):
    list_display = ["cycle", "provider", "criterion", "value", "reason", "status", "proposed_by", "decided_by",
                    "second_decided_by", "created_at"]
    list_filter = ["status", "reason", "cycle"]
    search_fields = ["provider__name", "criterion__key", "justification"]
    list_select_related = ["cycle", "provider", "criterion", "proposed_by", "decided_by", "second_decided_by"]
    raw_id_fields = ["evidence_finding"]
    actions = ["approve_selected"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = ScoreOverrideAddForm
        form = super().get_form(request, obj, change=change, **kwargs)
        form.request = request
        return form

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return ["status"]
        return [f.name for f in ScoreOverride._meta.concrete_fields if f.name != "id"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return ["cycle", "provider", "criterion", "value", "reason", "justification", "evidence",
                    "evidence_finding"]
        return self.get_readonly_fields(request, obj)

    def save_model(self, request: HttpRequest, obj: ScoreOverride, form: Any, change: bool) -> None:
        if change:
            return  # overrides are decided, not edited
        created = services.override_propose(
            cycle=obj.cycle, provider=obj.provider, criterion=obj.criterion, value=obj.value,
            justification=obj.justification, evidence=obj.evidence, by=request.user,
            reason=obj.reason, evidence_finding=obj.evidence_finding,
        )
        obj.pk = created.pk

    @admin.action(description="Approve selected overrides (four eyes: not your own; two approvers for "
                              "'measurement was wrong')")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[ScoreOverride]) -> None:
        for override in queryset:
            try:
                decided = services.override_decide(override=override, by=request.user, approve=True)
            except services.ReviewsError as exc:
                self.message_user(request, f"{override}: {exc}", level=messages.ERROR)
            else:
                if decided.status == ScoreOverride.Status.CONFIRMING:
                    self.message_user(request, f"{decided}: approved once; a second publisher must confirm it")
                else:
                    self.message_user(request, f"{decided}: approved")


@admin.register(RightOfReply)
class RightOfReplyAdmin(GuardedHistoryAdmin):
    list_display = ["provider", "cycle", "fact_ref", "status", "user", "created_at"]
    list_filter = ["status", "cycle", "provider"]
    search_fields = ["provider__name", "fact_ref", "text"]
    list_select_related = ["provider", "cycle", "user"]
    readonly_fields = ["provider", "user", "cycle", "report_id", "fact_ref", "text", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # filed by providers in the portal


class InterviewNoteAddForm(forms.ModelForm):
    respondent_org = forms.CharField(
        max_length=200, help_text="The customer organisation: stored only as a keyed hash, never as typed."
    )

    class Meta:
        model = InterviewNote
        fields = ["cycle", "provider", "area_or_criterion", "rating", "notes", "interviewed_on"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        cycle, provider, key = data.get("cycle"), data.get("provider"), data.get("area_or_criterion")
        if cycle and provider and not cycle.providers.filter(pk=provider.pk).exists():
            raise forms.ValidationError(f"{provider} is not in the peer set of {cycle}")
        if cycle and key and key not in services.cycle_rating_keys(cycle=cycle):
            raise forms.ValidationError(f"{key!r} is not an area or criterion of the cycle's rubric")
        return data


@admin.register(InterviewNote)
class InterviewNoteAdmin(GuardedHistoryAdmin):
    list_display = ["provider", "cycle", "area_or_criterion", "rating", "interviewed_on", "interviewer"]
    list_filter = ["cycle", "provider"]
    search_fields = ["provider__name", "area_or_criterion", "notes"]
    list_select_related = ["provider", "cycle", "interviewer"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return ["cycle", "provider", "area_or_criterion", "rating", "respondent_org", "notes", "interviewed_on"]
        return ["cycle", "provider", "area_or_criterion", "rating", "respondent_org_hash", "notes",
                "interviewed_on", "interviewer", "created_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return []
        return ["cycle", "provider", "area_or_criterion", "respondent_org_hash", "interviewer", "created_at"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = InterviewNoteAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def save_model(self, request: HttpRequest, obj: InterviewNote, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        created = services.interview_note_create(
            cycle=obj.cycle, provider=obj.provider, area_or_criterion=obj.area_or_criterion,
            respondent_org=form.cleaned_data["respondent_org"], notes=obj.notes,
            interviewed_on=obj.interviewed_on, by=request.user, rating=obj.rating,
        )
        obj.pk = created.pk


@admin.register(FeedbackImport)
class FeedbackImportAdmin(admin.ModelAdmin):
    list_display = ["filename", "cycle", "row_count", "imported_by", "created_at", "rolled_back_at"]
    list_filter = ["cycle"]
    search_fields = ["filename", "sha256"]
    list_select_related = ["cycle", "imported_by"]
    readonly_fields = ["cycle", "filename", "sha256", "row_count", "imported_by", "created_at", "rolled_back_at",
                       "rolled_back_by"]
    actions = ["action_rollback"]

    def has_rollback_permission(self, request: HttpRequest) -> bool:
        return user_role(request.user) in {Role.ANALYST, Role.ADMIN}

    @admin.action(description="Roll back the selected imports (delete every row they wrote)",
                  permissions=["rollback"])
    def action_rollback(self, request: HttpRequest, queryset: QuerySet[FeedbackImport]) -> None:
        for batch in queryset:
            try:
                removed = services.feedback_import_rollback(batch=batch, by=request.user)
            except services.ReviewsError as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, f"Rolled back {batch}: {removed} feedback rows removed.", messages.SUCCESS)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # `manage.py feedback_import` or the API: both validate every row first

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Audit log: who changed what, when, with the values before and after."""

    list_display = ["at", "username", "action", "model", "object_repr", "changed_fields"]
    list_filter = ["model", "action"]
    search_fields = ["username", "object_repr", "object_id"]
    date_hierarchy = "at"
    readonly_fields = ["at", "username", "action", "model", "object_id", "object_repr", "changes_table"]
    fields = readonly_fields

    @admin.display(description="fields")
    def changed_fields(self, obj: AuditEvent) -> str:
        return ", ".join(c["field"] for c in obj.changes)[:200]

    @admin.display(description="before → after")
    def changes_table(self, obj: AuditEvent) -> str:
        return format_html_join(
            "", "<p><b>{}</b>: {} → {}</p>", ((c["field"], c["before"], c["after"]) for c in obj.changes)
        )
