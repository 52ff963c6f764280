"""Admin for analysts: providers (with their clusters inline), clusters and cycles."""

from typing import Any

from django import forms
from django.contrib import admin

from providers.models import Cluster, Cycle, Provider
from rubric.models import RubricVersion


class ClusterForm(forms.ModelForm):
    """A cluster is rated for the GPUs it has: say which and how many (issue 15: a cluster with
    0 GPUs and no model was accepted)."""

    class Meta:
        model = Cluster
        fields = ["provider", "name", "region", "gpu_model", "gpu_count", "orchestrator", "list_price_per_gpu_hour"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        # Checked when a cluster is added or these fields are edited: a stored cluster that lacks
        # them (the demo's, before its inventory is read) does not block saving its provider.
        new = self.instance.pk is None
        if "gpu_count" in self.fields and data.get("gpu_count") == 0 and (new or "gpu_count" in self.changed_data):
            self.add_error("gpu_count", "A cluster has at least one GPU: give the number ordered.")
        if ("gpu_model" in self.fields and "gpu_model" in data and not (data.get("gpu_model") or "").strip()
                and (new or "gpu_model" in self.changed_data)):
            self.add_error("gpu_model", "Name the GPU model as ordered, e.g. H100-SXM-80GB.")
        return data


class ClusterInline(admin.TabularInline):
    model = Cluster
    form = ClusterForm
    extra = 0
    fields = ["name", "region", "gpu_model", "gpu_count", "orchestrator", "list_price_per_gpu_hour"]


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "status", "website", "created_at"]
    list_filter = ["status"]
    search_fields = ["name", "slug", "website"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [ClusterInline]


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    form = ClusterForm
    list_display = ["name", "provider", "region", "gpu_model", "gpu_count", "orchestrator", "list_price_per_gpu_hour"]
    list_filter = ["orchestrator", "gpu_model", "region"]
    search_fields = ["name", "provider__name", "region", "gpu_model"]
    list_select_related = ["provider"]
    autocomplete_fields = ["provider"]


class CycleForm(forms.ModelForm):
    """Cycles only on frozen rubric versions, and errors in words (never a constraint's name)."""

    class Meta:
        model = Cycle
        fields = ["name", "slug", "rubric_version", "period_start", "period_end", "providers", "status"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields.get("rubric_version")
        if field is not None:
            field.queryset = RubricVersion.objects.filter(status=RubricVersion.Status.FROZEN)
            field.help_text = "Only frozen versions: a cycle's evidence is scored under rules that cannot change."

    def clean_period_end(self) -> Any:
        # A field error here also keeps Django from adding 'Constraint "cycle_period_ordered" is violated.'
        start, end = self.cleaned_data.get("period_start"), self.cleaned_data.get("period_end")
        if start and end and end < start:
            raise forms.ValidationError(f"The period cannot end ({end:%Y-%m-%d}) before it starts ({start:%Y-%m-%d}).")
        return end


@admin.register(Cycle)
class CycleAdmin(admin.ModelAdmin):
    form = CycleForm
    list_display = ["name", "slug", "rubric_version", "period_start", "period_end", "status"]
    list_filter = ["status", "rubric_version"]
    search_fields = ["name", "slug"]
    list_select_related = ["rubric_version"]
    filter_horizontal = ["providers"]
    prepopulated_fields = {"slug": ["name"]}
