"""Serializers for rubric versions, areas and criteria (output), and the small write inputs."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from rubric.models import Area, Criterion, RubricVersion


class AreaSerializer(serializers.ModelSerializer):
    class Meta:
        model = Area
        fields = ["id", "key", "title", "description", "weight", "position"]


class CriterionSerializer(serializers.ModelSerializer):
    area = serializers.SlugRelatedField(slug_field="key", read_only=True)

    class Meta:
        model = Criterion
        fields = [
            "id", "key", "area", "title", "description", "weight", "evidence_kinds", "probe_id", "probe_metric",
            "unit", "direction", "scale", "anchor_best", "anchor_worst", "is_gate", "gate_cap_tier",
            "gate_threshold", "position",
        ]
        read_only_fields = ["id", "key", "area"]


class RubricVersionSerializer(serializers.ModelSerializer):
    label = serializers.CharField(read_only=True)
    parent = serializers.SlugRelatedField(slug_field="label", read_only=True)
    areas = AreaSerializer(many=True, read_only=True)
    criteria = CriterionSerializer(many=True, read_only=True)

    class Meta:
        model = RubricVersion
        fields = [
            "id", "label", "name", "version", "title", "description", "status", "frozen_at", "fingerprint",
            "parent", "created_at", "coverage_floor", "area_coverage_floor", "bootstrap_size",
            "boundary_confidence", "borderline_threshold", "hysteresis_threshold", "feedback_prior_strength",
            "tier_floor_platinum", "tier_floor_gold", "tier_floor_silver", "tier_floor_bronze",
            "feedback_prior_mean", "boundary_min_gap", "areas", "criteria",
        ]
        read_only_fields = ["id", "name", "version", "status", "frozen_at", "fingerprint", "parent", "created_at"]


class CloneInputSerializer(serializers.Serializer):
    version = serializers.CharField(max_length=32)
    name = serializers.CharField(max_length=64, required=False)


class ImportResultSerializer(serializers.Serializer):
    created = serializers.BooleanField()
    frozen_now = serializers.BooleanField()
    message = serializers.CharField()
    rubric_version = RubricVersionSerializer()


class RubricVersionDiffSerializer(serializers.Serializer):
    """What ``GET rubric-versions/{id}/diff/`` answers: a diff, not a rubric version."""

    text = serializers.CharField(help_text="The diff as readable text, one change per line.")
    to = serializers.CharField(help_text="Label (name@version) of the version asked about.")
    areas_added = serializers.ListField(child=serializers.CharField(), help_text="Area keys.")
    areas_removed = serializers.ListField(child=serializers.CharField(), help_text="Area keys.")
    areas_changed = serializers.ListField(child=serializers.CharField(), help_text="Area keys.")
    criteria_added = serializers.ListField(child=serializers.CharField(), help_text="Criterion keys.")
    criteria_removed = serializers.ListField(child=serializers.CharField(), help_text="Criterion keys.")
    criteria_changed = serializers.ListField(child=serializers.CharField(), help_text="Criterion keys.")

    def get_fields(self) -> dict[str, serializers.Field]:
        # `from` is a Python keyword, so it cannot be declared in the class body.
        return {"from": serializers.CharField(help_text="Label (name@version) of the version compared against."),
                **super().get_fields()}


def _object(properties: dict[str, Any], required: list[str], description: str = "") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    return {**schema, "description": description} if description else schema


_TEXT: dict[str, Any] = {"type": "string"}
_NUMBER: dict[str, Any] = {"type": "number"}

# ``GET rubric-versions/{id}/export/``: the canonical YAML document (rubric/yaml_format.py,
# format ``opgrade-rubric/1``), served as application/yaml. Its top level and the shape of its
# areas and criteria; each criterion's scoring keys depend on its kind (rubric/spec.py).
RUBRIC_DOCUMENT_SCHEMA: dict[str, Any] = _object(
    {
        "format": {"type": "string", "enum": ["opgrade-rubric/1"]},
        "name": _TEXT,
        "version": _TEXT,
        "title": _TEXT,
        "description": _TEXT,
        "scoring": _object({"tier_floors": {"type": "object", "additionalProperties": _NUMBER}}, ["tier_floors"]),
        "areas": {"type": "array", "items": _object(
            {"key": _TEXT, "title": _TEXT, "weight": _NUMBER, "description": _TEXT}, ["key", "title", "weight"]
        )},
        "criteria": {"type": "array", "items": _object(
            {"key": _TEXT, "area": _TEXT, "title": _TEXT, "description": _TEXT, "weight": _NUMBER,
             "evidence": {"type": "array", "items": _TEXT}},
            ["key", "area", "title", "weight", "evidence"],
        )},
    },
    ["format", "name", "version", "title", "scoring", "areas", "criteria"],
    "The rubric version as its canonical YAML document (format opgrade-rubric/1; rubric/spec.py, "
    "rubric/yaml_format.py): importing it again recreates the same content.",
)
