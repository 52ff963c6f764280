"""Serializers for providers, clusters and cycles (read-only)."""

from rest_framework import serializers

from providers.models import Cluster, Cycle, Provider


class ProviderSerializer(serializers.ModelSerializer):
    class Meta:
        model = Provider
        fields = ["id", "name", "slug", "website", "status", "created_at"]


class ClusterSerializer(serializers.ModelSerializer):
    provider = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Cluster
        fields = [
            "id", "provider", "name", "region", "gpu_model", "gpu_count", "orchestrator",
            "list_price_per_gpu_hour", "created_at",
        ]


class CycleSerializer(serializers.ModelSerializer):
    rubric_version = serializers.StringRelatedField()
    providers = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)

    class Meta:
        model = Cycle
        fields = [
            "id", "name", "slug", "rubric_version", "period_start", "period_end", "providers", "status",
            "created_at",
        ]
