"""Admin for analysts: grade definitions (read-only once frozen; freeze as an action) and price
observations (recorded through ``grades.services``: the same checks as the API, read-only after).

Grade definitions come in as YAML (``manage.py grade import``); the admin shows the canonical text
and never edits a frozen one. A price observation that fails a check (band, duplicate, draft
grade, GPU model) is refused on the form with the reason, and nothing is written.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from config.immutability import ImmutableError
from grades import services
from grades.models import GradeDefinition, PriceObservation
from grades.spec import GradeFormatError


@admin.register(GradeDefinition)
class GradeDefinitionAdmin(admin.ModelAdmin):
    list_display = ["label", "title", "gpu_model", "rubric_label", "status", "frozen_at"]
    list_filter = ["status", "gpu_model"]
    search_fields = ["name", "version", "title"]
    list_select_related = ["parent"]
    readonly_fields = ["name", "version", "title", "rubric_label", "gpu_model", "status", "frozen_at",
                       "fingerprint", "parent", "created_at", "canonical"]
    actions = ["freeze"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # import YAML: manage.py grade import (validated against the rubric and the catalog)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False if obj is not None and obj.is_frozen else super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False if obj is not None and obj.is_frozen else super().has_delete_permission(request, obj)

    @admin.action(description="Freeze the selected draft grades", permissions=["change"])
    def freeze(self, request: HttpRequest, queryset: QuerySet[GradeDefinition]) -> None:
        for grade in queryset:
            try:
                services.grade_definition_freeze(grade=grade)
            except (GradeFormatError, ImmutableError) as exc:
                self.message_user(request, f"{grade.label}: {exc}", messages.ERROR)
            else:
                self.message_user(request, f"{grade.label} frozen", messages.SUCCESS)


class PriceObservationForm(forms.ModelForm):
    class Meta:
        model = PriceObservation
        fields = ["grade", "cluster", "source", "observed_on", "term", "price_per_gpu_hour"]

    def validate_unique(self) -> None:
        pass  # the service's duplicate check names the row it duplicates

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        try:
            services.price_observation_check(
                grade=data["grade"], cluster=data["cluster"], source=data["source"], observed_on=data["observed_on"],
                term=data["term"], price_per_gpu_hour=data["price_per_gpu_hour"])
        except services.PriceObservationError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


@admin.register(PriceObservation)
class PriceObservationAdmin(admin.ModelAdmin):
    form = PriceObservationForm
    list_display = ["observed_on", "grade", "cluster", "term", "price_per_gpu_hour", "source", "recorded_by"]
    list_filter = ["grade", "term", "cluster__provider"]
    search_fields = ["source", "cluster__name", "cluster__provider__name"]
    list_select_related = ["grade", "cluster__provider", "recorded_by"]
    date_hierarchy = "observed_on"
    autocomplete_fields: list[str] = []

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        if "grade" in form.base_fields:
            form.base_fields["grade"].queryset = GradeDefinition.objects.filter(status=GradeDefinition.Status.FROZEN)
        return form

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False if obj is not None else super().has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: PriceObservation, form: Any, change: bool) -> None:
        data = form.cleaned_data
        saved = services.price_observation_record(
            grade=data["grade"], cluster=data["cluster"], source=data["source"], observed_on=data["observed_on"],
            term=data["term"], price_per_gpu_hour=data["price_per_gpu_hour"], user=request.user)
        obj.pk = saved.pk
        obj._state.adding = False
