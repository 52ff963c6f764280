"""Admin for analysts: rubric versions with their areas and criteria, freeze, clone, diff, import.

Frozen versions are read-only here (no change, add or delete, for the version and its
inlines) and say so at the top of the page. The actions and the extra pages write only through
the services (import, clone, freeze) and diff through the selector; a draft's change form saves
through Django's own ModelAdmin, which the models' ``save`` and the triggers guard. Besides the
ModelAdmin's own querysets (the changelist annotates area and criterion counts), this module
reads the ORM itself in three places, to find rows and offer choices, never to write:
``get_object_or_404`` for the version a page is about (clone, diff and the diff's "other"),
``diff_view``'s list of the other versions to compare with, and ``CriterionInline``'s choice of
the areas of the version being edited.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from rubric.models import Area, Criterion, FrozenRubricError, RubricVersion
from rubric.selectors import rubric_version_diff
from rubric.services import (
    RubricConflictError,
    rubric_version_clone,
    rubric_version_freeze,
    rubric_version_import,
)
from rubric.yaml_format import RubricFormatError

FROZEN_MESSAGE = (
    "This rubric version is frozen: it cannot be changed or deleted. "
    "Use “Clone into a new draft” to make a version you can edit."
)


def _version_of(obj: Any) -> RubricVersion | None:
    if isinstance(obj, RubricVersion):
        return obj
    return getattr(obj, "rubric_version", None)


class FrozenReadOnlyMixin:
    """No change, add or delete for anything that belongs to a frozen version."""

    def _frozen(self, obj: Any) -> bool:
        version = _version_of(obj)
        return version is not None and version.is_frozen

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._frozen(obj) and super().has_change_permission(request, obj)  # type: ignore[misc]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._frozen(obj) and super().has_delete_permission(request, obj)  # type: ignore[misc]




class FrozenChildAdminMixin(FrozenReadOnlyMixin):
    """Area and criterion pages: adding one to a frozen version fails validation with the reason."""

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        base = super().get_form(request, obj, change=change, **kwargs)  # type: ignore[misc]

        class GuardedForm(base):  # type: ignore[misc, valid-type]
            def clean(self) -> dict[str, Any]:
                data = super().clean()
                version = data.get("rubric_version") or _version_of(self.instance)
                if isinstance(version, RubricVersion) and version.is_frozen:
                    raise forms.ValidationError(FROZEN_MESSAGE)
                return data

        return GuardedForm


class FrozenInlineMixin(FrozenReadOnlyMixin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._frozen(obj) and super().has_add_permission(request, obj)  # type: ignore[misc]


class AreaInline(FrozenInlineMixin, admin.TabularInline):
    model = Area
    extra = 0
    fields = ["position", "key", "title", "weight", "description"]


class CriterionInline(FrozenInlineMixin, admin.StackedInline):
    model = Criterion
    extra = 0
    classes = ["collapse"]
    fields = [
        ("position", "key", "area", "weight"), "title", "description", ("evidence_kinds", "probe_id", "probe_metric"),
        ("unit", "direction", "scale", "anchor_best", "anchor_worst"), ("is_gate", "gate_cap_tier", "gate_threshold"),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Criterion]:
        return super().get_queryset(request).select_related("area", "rubric_version")

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        # Offer only the areas of the version being edited.
        if db_field.name == "area":
            object_id = request.resolver_match.kwargs.get("object_id") if request.resolver_match else None
            kwargs["queryset"] = Area.objects.filter(rubric_version_id=object_id) if object_id else Area.objects.none()
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if db_field.name == "area" and field is not None:
            # Evaluate the choices once, not once per criterion form (a draft has 40 of them).
            field.choices = list(field.choices)
        return field


class RubricImportForm(forms.Form):
    file = forms.FileField(help_text="A rubric YAML file (format: rubric/README.md).")
    freeze = forms.BooleanField(required=False, help_text="Freeze the version once imported.")


class RubricCloneForm(forms.Form):
    version = forms.CharField(max_length=32, help_text="Label of the new draft, e.g. 2026.2")


@admin.register(RubricVersion)
class RubricVersionAdmin(FrozenReadOnlyMixin, admin.ModelAdmin):
    list_display = ["label_display", "title", "status", "frozen_at", "n_areas", "n_criteria", "parent", "created_at"]
    list_filter = ["status", "name"]
    search_fields = ["name", "version", "title", "fingerprint"]
    list_select_related = ["parent"]
    readonly_fields = ["status", "frozen_at", "fingerprint", "parent", "created_at", "tools"]
    inlines = [AreaInline, CriterionInline]
    actions = ["freeze_selected", "clone_selected"]
    fieldsets = [
        (None, {"fields": ["name", "version", "title", "description", "tools"]}),
        ("State", {"fields": ["status", "frozen_at", "fingerprint", "parent", "created_at"]}),
        ("Scoring parameters", {"fields": [
            "coverage_floor", "area_coverage_floor", "bootstrap_size", "boundary_confidence",
            "borderline_threshold", "hysteresis_threshold", "feedback_prior_strength", "feedback_prior_mean",
            "boundary_min_gap",
            ("tier_floor_platinum", "tier_floor_gold", "tier_floor_silver", "tier_floor_bronze"),
        ]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[RubricVersion]:
        return super().get_queryset(request).annotate(
            _n_areas=Count("areas", distinct=True), _n_criteria=Count("criteria", distinct=True)
        )

    @admin.display(description="version", ordering="version")
    def label_display(self, obj: RubricVersion) -> str:
        return obj.label

    @admin.display(description="areas", ordering="_n_areas")
    def n_areas(self, obj: RubricVersion) -> int:
        return obj._n_areas  # type: ignore[attr-defined]

    @admin.display(description="criteria", ordering="_n_criteria")
    def n_criteria(self, obj: RubricVersion) -> int:
        return obj._n_criteria  # type: ignore[attr-defined]

    @admin.display(description="Tools")
    def tools(self, obj: RubricVersion) -> str:
        if obj.pk is None:
            return "-"
        links = [
            (reverse("admin:rubric_rubricversion_clone", args=[obj.pk]), "Clone into a new draft"),
            (reverse("admin:rubric_rubricversion_diff", args=[obj.pk]), "Diff against the parent or another version"),
            (reverse("rubricversion-export", args=[obj.pk]), "Export YAML"),
        ]
        return format_html(" | ".join('<a href="{}">{}</a>' for _ in links), *[x for pair in links for x in pair])

    # ---------------------------------------------------------------- pages

    def get_urls(self) -> list:
        wrap = self.admin_site.admin_view
        return [
            path("import/", wrap(self.import_view), name="rubric_rubricversion_import"),
            path("<int:pk>/clone/", wrap(self.clone_view), name="rubric_rubricversion_clone"),
            path("<int:pk>/diff/", wrap(self.diff_view), name="rubric_rubricversion_diff"),
            *super().get_urls(),
        ]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict | None = None) -> HttpResponse:
        obj = self.get_object(request, object_id)
        if obj is not None and obj.is_frozen and request.method == "GET":
            messages.warning(request, FROZEN_MESSAGE)
        return super().change_view(request, object_id, form_url, extra_context)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        extra = {"import_url": reverse("admin:rubric_rubricversion_import"), **(extra_context or {})}
        return super().changelist_view(request, extra)

    def _require(self, request: HttpRequest, perm: str) -> None:
        if not request.user.has_perm(f"rubric.{perm}_rubricversion"):
            raise PermissionDenied

    def import_view(self, request: HttpRequest) -> HttpResponse:
        self._require(request, "add")
        form = RubricImportForm(request.POST or None, request.FILES or None)
        problems: list[str] = []
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                text = upload.read().decode("utf-8")
                result = rubric_version_import(text=text, filename=upload.name, freeze=form.cleaned_data["freeze"])
            except UnicodeDecodeError:
                problems = [f"{upload.name}: not UTF-8 text"]
            except RubricFormatError as exc:
                problems = [str(p) for p in exc.problems]
            except RubricConflictError as exc:
                problems = [str(exc)]
            else:
                messages.success(request, result.message)
                return HttpResponseRedirect(reverse("admin:rubric_rubricversion_change", args=[result.rubric_version.pk]))
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "form": form,
                   "problems": problems, "title": "Import a rubric version"}
        return TemplateResponse(request, "admin/rubric/rubricversion/import.html", context)

    def clone_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        self._require(request, "add")
        source = get_object_or_404(RubricVersion, pk=pk)
        form = RubricCloneForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                clone = rubric_version_clone(source=source, version=form.cleaned_data["version"])
            except (RubricFormatError, RubricConflictError) as exc:
                form.add_error("version", str(exc))
            else:
                messages.success(request, f"Cloned {source.label} into the draft {clone.label}.")
                return HttpResponseRedirect(reverse("admin:rubric_rubricversion_change", args=[clone.pk]))
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "form": form,
                   "original": source, "title": f"Clone {source.label} into a new draft"}
        return TemplateResponse(request, "admin/rubric/rubricversion/clone.html", context)

    def diff_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        self._require(request, "view")
        version = get_object_or_404(RubricVersion, pk=pk)
        others = RubricVersion.objects.exclude(pk=pk).order_by("name", "version")
        other_id = request.GET.get("other")
        base: RubricVersion | None
        if other_id and other_id.isdigit():
            base = get_object_or_404(RubricVersion, pk=int(other_id))
        else:
            base = version.parent
        diff = rubric_version_diff(a=base, b=version) if base is not None else None
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "original": version,
                   "base": base, "others": others, "diff": diff, "title": f"Diff of {version.label}"}
        return TemplateResponse(request, "admin/rubric/rubricversion/diff.html", context)

    # ---------------------------------------------------------------- actions

    @admin.action(description="Freeze selected draft versions (validates them first)", permissions=["change"])
    def freeze_selected(self, request: HttpRequest, queryset: QuerySet[RubricVersion]) -> None:
        for version in queryset:
            if version.is_frozen:
                self.message_user(request, f"{version.label} was already frozen.", messages.INFO)
                continue
            try:
                frozen = rubric_version_freeze(rubric_version=version)
            except (RubricFormatError, FrozenRubricError) as exc:
                self.message_user(request, f"Not frozen: {version.label}: {exc}", messages.ERROR)
            else:
                self.message_user(request, f"Froze {frozen.label} (sha256 {frozen.fingerprint[:12]}…).")


    @admin.action(description="Clone the selected version into a new draft", permissions=["add"])
    def clone_selected(self, request: HttpRequest, queryset: QuerySet[RubricVersion]) -> HttpResponse | None:
        versions = list(queryset[:2])
        if len(versions) != 1:
            self.message_user(request, "Select exactly one version to clone.", messages.WARNING)
            return None
        return HttpResponseRedirect(reverse("admin:rubric_rubricversion_clone", args=[versions[0].pk]))


@admin.register(Area)
class AreaAdmin(FrozenChildAdminMixin, admin.ModelAdmin):
    list_display = ["key", "title", "rubric_version", "weight", "position"]
    list_filter = ["rubric_version__status", "rubric_version", "key"]
    search_fields = ["key", "title", "rubric_version__version"]
    list_select_related = ["rubric_version"]


@admin.register(Criterion)
class CriterionAdmin(FrozenChildAdminMixin, admin.ModelAdmin):
    list_display = ["key", "title", "area", "rubric_version", "weight", "probe_id", "probe_metric", "direction",
                    "scale", "is_gate", "gate_cap_tier"]
    list_filter = ["rubric_version__status", "rubric_version", "area__key", "is_gate", "direction", "scale"]
    search_fields = ["key", "title", "probe_id", "probe_metric", "description"]
    list_select_related = ["area", "rubric_version"]
    raw_id_fields = ["area", "rubric_version"]
