"""Serializers for score snapshots and tier assignments (read-only)."""

from rest_framework import serializers

from ratings.models import ScoreSnapshot, TierAssignment


class TierAssignmentSerializer(serializers.ModelSerializer):
    provider = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    cycle = serializers.SlugRelatedField(source="snapshot.cycle", slug_field="slug", read_only=True)

    class Meta:
        model = TierAssignment
        fields = [
            "id", "snapshot", "cycle", "provider", "tier", "tier_point", "previous_tier", "hysteresis_held",
            "probabilities", "ci_low", "ci_high", "composite", "composite_pessimistic", "coverage", "borderline",
            "outlook", "floor_capped", "gate_caps", "areas", "criteria", "flags",
        ]
        read_only_fields = fields


class ScoreSnapshotSerializer(serializers.ModelSerializer):
    """A snapshot's provenance and its per-provider tiers (the breakdowns live on /tier-assignments/)."""

    cycle = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    rubric_version = serializers.StringRelatedField()
    tiers = serializers.SerializerMethodField()

    class Meta:
        model = ScoreSnapshot
        fields = [
            "id", "cycle", "rubric_version", "engine_version", "seed", "bootstrap_size", "inputs_hash",
            "content_hash", "created_at", "tiers",
        ]
        read_only_fields = fields

    def get_tiers(self, obj: ScoreSnapshot) -> dict[str, str]:
        return {a.provider.slug: a.tier for a in obj.assignments.all()}
