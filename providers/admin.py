"""Admin for analysts: providers (with their clusters inline), clusters and cycles."""

from django.contrib import admin

from providers.models import Cluster, Cycle, Provider


class ClusterInline(admin.TabularInline):
    model = Cluster
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
    list_display = ["name", "provider", "region", "gpu_model", "gpu_count", "orchestrator", "list_price_per_gpu_hour"]
    list_filter = ["orchestrator", "gpu_model", "region"]
    search_fields = ["name", "provider__name", "region", "gpu_model"]
    list_select_related = ["provider"]
    autocomplete_fields = ["provider"]


@admin.register(Cycle)
class CycleAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "rubric_version", "period_start", "period_end", "status"]
    list_filter = ["status", "rubric_version"]
    search_fields = ["name", "slug"]
    list_select_related = ["rubric_version"]
    filter_horizontal = ["providers"]
    prepopulated_fields = {"slug": ["name"]}
