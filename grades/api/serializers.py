"""Serializers of the grades API: grade definitions (read) and price observations (read, create)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from grades.models import GradeDefinition, PriceObservation
from grades.spec import TERMS
from providers.models import Cluster


class GradeDefinitionSerializer(serializers.ModelSerializer):
    label = serializers.CharField(read_only=True)

    class Meta:
        model = GradeDefinition
        fields = ["id", "label", "name", "version", "title", "rubric_label", "gpu_model", "status", "frozen_at",
                  "fingerprint", "parent", "created_at"]
        read_only_fields = fields


class PriceObservationSerializer(serializers.ModelSerializer):
    """Create input is checked by grades.services (band, duplicate, frozen grade, GPU model)."""

    grade = serializers.PrimaryKeyRelatedField(queryset=GradeDefinition.objects.all())
    cluster = serializers.PrimaryKeyRelatedField(queryset=Cluster.objects.select_related("provider"))
    term = serializers.ChoiceField(choices=TERMS)
    price_per_gpu_hour = serializers.DecimalField(max_digits=8, decimal_places=4)
    grade_label = serializers.CharField(source="grade.label", read_only=True)
    provider = serializers.CharField(source="cluster.provider.slug", read_only=True)
    recorded_by = serializers.CharField(source="recorded_by.get_username", read_only=True, default=None,
                                        allow_null=True)

    class Meta:
        model = PriceObservation
        fields = ["id", "grade", "grade_label", "cluster", "provider", "source", "observed_on", "term",
                  "price_per_gpu_hour", "recorded_by", "created_at"]
        read_only_fields = ["id", "grade_label", "provider", "recorded_by", "created_at"]
        validators: list[Any] = []  # the service checks duplicates and says which row it duplicates
