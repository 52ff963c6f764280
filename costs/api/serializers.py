"""Serializers for cluster prices: the figures in, every component with its source."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from costs.models import ClusterPrice
from costs.services import EDITABLE
from providers.models import Cluster, Cycle


class ClusterPriceSerializer(serializers.ModelSerializer):
    cluster = serializers.PrimaryKeyRelatedField(queryset=Cluster.objects.select_related("provider"))
    cycle = serializers.SlugRelatedField(slug_field="slug", queryset=Cycle.objects.all())
    provider = serializers.CharField(source="cluster.provider.slug", read_only=True)
    components = serializers.SerializerMethodField()
    recorded_by = serializers.StringRelatedField()

    class Meta:
        model = ClusterPrice
        fields = ["id", "cluster", "provider", "cycle", *EDITABLE, "components", "recorded_by", "created_at",
                  "updated_at"]
        read_only_fields = ["id", "provider", "components", "recorded_by", "created_at", "updated_at"]
        validators: list[Any] = []  # the service validates (model clean and constraints), in words

    def get_components(self, obj: ClusterPrice) -> list[dict[str, Any]]:
        return [{**p, "amount": None if p["amount"] is None else str(p["amount"])} for p in obj.components()]
