"""Admin for analysts: evidence and read-only score snapshots (providers and cycles: providers/admin.py)."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html_join

from config.admin_readonly import ReadOnlyAdminMixin
from ratings.models import CustomerFeedback, DocReview, ScoreSnapshot, TierAssignment


# ------------------------------------------------------------------------------ evidence
@admin.register(DocReview)
class DocReviewAdmin(admin.ModelAdmin):
    list_display = ["cycle", "provider", "criterion", "reviewer", "score", "is_reconciled", "created_at"]
    list_filter = ["cycle", "is_reconciled", "criterion__area__key"]
    search_fields = ["provider__name", "criterion__key", "reviewer__username", "notes"]
    list_select_related = ["cycle", "provider", "criterion", "reviewer"]
    autocomplete_fields = ["provider"]
    raw_id_fields = ["cycle", "criterion", "reviewer"]


@admin.register(CustomerFeedback)
class CustomerFeedbackAdmin(admin.ModelAdmin):
    """Feedback rows; the respondent organisation is only ever a keyed hash (shortened here)."""

    list_display = ["cycle", "provider", "target", "rating", "source", "respondent", "created_at"]
    list_filter = ["cycle", "source", "rating"]
    search_fields = ["provider__name", "criterion__key", "area__key", "comment"]
    list_select_related = ["cycle", "provider", "area", "criterion"]
    readonly_fields = ["respondent_org_hash"]
    raw_id_fields = ["cycle", "provider", "area", "criterion"]

    @admin.display(description="area / criterion")
    def target(self, obj: CustomerFeedback) -> str:
        return obj.criterion.key if obj.criterion else f"area {obj.area.key}"  # type: ignore[union-attr]

    @admin.display(description="respondent")
    def respondent(self, obj: CustomerFeedback) -> str:
        return obj.respondent_org_hash[:10]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # entered through customer_feedback_record / the reviews import, which hash the org


# -------------------------------------------------------------------------------- scores
class _ReadOnly(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Computed rows: visible, never editable or deletable (the models and a trigger refuse too)."""


class TierAssignmentInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = TierAssignment
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ["provider", "tier", "tier_point", "composite", "ci_low", "ci_high", "coverage", "borderline", "flags"]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[TierAssignment]:
        return super().get_queryset(request).select_related("provider")


@admin.register(ScoreSnapshot)
class ScoreSnapshotAdmin(_ReadOnly):
    list_display = ["id", "cycle", "rubric_version", "engine_version", "seed", "short_hash", "created_at"]
    list_filter = ["cycle", "engine_version"]
    search_fields = ["cycle__slug", "content_hash", "inputs_hash"]
    list_select_related = ["cycle", "rubric_version"]
    readonly_fields = [
        "cycle", "rubric_version", "engine_version", "seed", "bootstrap_size", "inputs_hash", "content_hash",
        "created_at", "boundaries",
    ]
    exclude = ["result"]
    inlines = [TierAssignmentInline]

    @admin.display(description="content hash")
    def short_hash(self, obj: ScoreSnapshot) -> str:
        return obj.content_hash[:16]

    @admin.display(description="tier boundaries (point estimate)")
    def boundaries(self, obj: ScoreSnapshot) -> str:
        rows = obj.result.get("boundaries", [])
        return "; ".join(
            f"{b['upper_provider']} | {b['lower_provider']}: P={b['probability']:.2f} "
            f"{'kept' if b['kept'] else 'dropped'}"
            for b in rows
        ) or "-"


@admin.register(TierAssignment)
class TierAssignmentAdmin(_ReadOnly):
    list_display = [
        "provider", "snapshot", "tier", "tier_point", "composite", "ci_low", "ci_high", "coverage", "borderline",
        "hysteresis_held",
    ]
    list_filter = ["tier", "borderline", "hysteresis_held", "snapshot__cycle"]
    search_fields = ["provider__name", "provider__slug", "snapshot__content_hash"]
    list_select_related = ["provider", "snapshot__cycle"]
    readonly_fields = [
        "snapshot", "provider", "tier", "tier_point", "previous_tier", "hysteresis_held", "probabilities", "ci_low",
        "ci_high", "composite", "composite_pessimistic", "coverage", "borderline", "outlook", "floor_capped",
        "gate_caps", "area_breakdown", "criterion_breakdown", "flags",
    ]
    exclude = ["areas", "criteria"]

    @admin.display(description="areas")
    def area_breakdown(self, obj: TierAssignment) -> str:
        return format_html_join(
            "", "<div>{}: score {} coverage {} CI {}</div>",
            ((a["key"], _f(a["score"]), _f(a["coverage"]), f"[{_f(a['ci_low'])}, {_f(a['ci_high'])}]") for a in obj.areas),
        )

    @admin.display(description="criteria")
    def criterion_breakdown(self, obj: TierAssignment) -> str:
        return format_html_join(
            "", "<div>{} ({}): {} score {} share {}{}</div>",
            (
                (c["key"], c["area"], c["status"], _f(c["score"]), _f(c["weight_share"]),
                 " GATE FAILED" if c["gate_failed"] else "")
                for c in obj.criteria
            ),
        )


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
