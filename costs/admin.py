"""Admin for analysts: each cluster's price per cycle (every component with its source), with history."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from config.history_admin import GuardedHistoryAdmin
from costs import services
from costs.models import ClusterPrice


@admin.register(ClusterPrice)
class ClusterPriceAdmin(GuardedHistoryAdmin):
    list_display = ["cluster", "cycle", "base", "base_per_gpu_hour", "storage_per_gpu_hour", "egress_per_gpu_hour",
                    "support_per_gpu_hour", "owned_basis", "updated_at"]
    list_filter = ["cycle", "base"]
    search_fields = ["cluster__name", "cluster__provider__name", "cycle__slug", "base_source"]
    list_select_related = ["cluster__provider", "cycle"]
    autocomplete_fields = ["cluster"]
    readonly_fields = ["recorded_by", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["cluster", "cycle"]}),
        ("Effective price ($/GPU-hour, each with its source)", {"fields": [
            "base", "base_per_gpu_hour", "base_source", "storage_per_gpu_hour", "storage_source",
            "egress_per_gpu_hour", "egress_source", "support_per_gpu_hour", "support_source",
        ]}),
        ("Owned basis (producers that own their GPUs)", {"fields": [
            "capex_per_gpu", "discount_rate", "life_years", "hours_per_year", "power_per_gpu_hour",
            "space_per_gpu_hour", "staff_per_gpu_hour", "owned_source",
        ]}),
        (None, {"fields": ["notes", "recorded_by", "created_at", "updated_at"]}),
    ]

    @admin.display(boolean=True, description="owned basis")
    def owned_basis(self, obj: ClusterPrice) -> bool:
        return obj.has_owned_basis

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "cluster", "cycle"] if obj is not None else fields

    def save_model(self, request: HttpRequest, obj: ClusterPrice, form: Any, change: bool) -> None:
        values = {name: getattr(obj, name) for name in services.EDITABLE}
        if change:
            services.cluster_price_update(price=obj, by=request.user, **values)
        else:
            saved = services.cluster_price_record(cluster=obj.cluster, cycle=obj.cycle, by=request.user, **values)
            obj.pk = saved.pk
