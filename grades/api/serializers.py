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


_TEXT: dict[str, Any] = {"type": "string"}

# ``GET grade-definitions/{id}/export/``: the canonical YAML document (grades/spec.py, format
# ``opgrade-grade/1``), byte for byte as frozen, served as application/yaml.
GRADE_DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The grade definition as its canonical YAML document (format opgrade-grade/1; "
                   "grades/spec.py), byte for byte as stored and fingerprinted.",
    "properties": {
        "format": {"type": "string", "enum": ["opgrade-grade/1"]},
        "name": _TEXT, "version": _TEXT, "title": _TEXT, "description": _TEXT, "rubric": _TEXT,
        "hardware": {"type": "object", "properties": {"gpu_model": _TEXT}, "required": ["gpu_model"]},
        "scope": {"type": "object", "properties": {"orchestrator": _TEXT}, "required": ["orchestrator"]},
        "requirements": {"type": "array", "items": {
            "type": "object", "properties": {"key": _TEXT, "title": _TEXT, "kind": _TEXT},
            "required": ["key", "title", "kind"],
        }},
        "contract": {"type": "object", "properties": {"term": _TEXT, "support": _TEXT},
                     "required": ["term", "support"]},
    },
    "required": ["format", "name", "version", "title", "rubric", "hardware", "scope", "requirements", "contract"],
}


class GradeIndexSerializer(serializers.Serializer):
    """What ``GET grade-definitions/{id}/index/`` answers: one period's reference index."""

    grade = serializers.CharField(help_text="The grade's label (name@version).")
    term = serializers.CharField()
    period = serializers.CharField(help_text="YYYY-MM")
    median = serializers.FloatField(help_text="Median price per GPU-hour of the period's observations.")
    count = serializers.IntegerField(help_text="Observations in the period.")
    min = serializers.FloatField()
    max = serializers.FloatField()
    p25 = serializers.FloatField()
    p75 = serializers.FloatField()
    thin = serializers.BooleanField(help_text="Too few observations to rely on.")
