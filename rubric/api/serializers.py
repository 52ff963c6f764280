"""Serializers for rubric versions, areas and criteria (output), and the small write inputs."""

from __future__ import annotations

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
