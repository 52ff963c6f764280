"""Serializers for the probes API. Secrets are ``write_only``: accepted, never rendered."""

from __future__ import annotations

from rest_framework import serializers

from probes.catalog import probe_list
from probes.models import Finding, ProbeRun, TenantAccount


class FindingSerializer(serializers.ModelSerializer):
    class Meta:
        model = Finding
        fields = [
            "id", "run", "probe_id", "probe_version", "target", "metric", "outcome", "value", "unit", "critical",
            "summary", "evidence", "threshold_ref", "started_at", "finished_at", "attempt", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class ProbeRunSerializer(serializers.ModelSerializer):
    progress = serializers.CharField(read_only=True)

    class Meta:
        model = ProbeRun
        fields = [
            "id", "cluster", "cycle", "schedule", "probe_id", "probe_version", "status", "attempt", "progress",
            "progress_done", "progress_total", "flagged", "error_code", "error_message", "scheduled_for",
            "started_at", "finished_at", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class ProbeRunStartSerializer(serializers.Serializer):
    cluster = serializers.IntegerField()
    probes = serializers.ListField(child=serializers.CharField(max_length=96), allow_empty=False)

    def validate_probes(self, value: list[str]) -> list[str]:
        unknown = [p for p in value if p not in {cls.id for cls in probe_list()}]
        if unknown:
            raise serializers.ValidationError(f"unknown probes: {', '.join(unknown)}")
        return value


class TenantAccountSerializer(serializers.ModelSerializer):
    private_key = serializers.CharField(
        write_only=True, required=False, allow_blank=True, trim_whitespace=False
    )
    passphrase = serializers.CharField(write_only=True, required=False, allow_blank=True)
    password = serializers.CharField(write_only=True, required=False, allow_blank=True)
    auth_kind = serializers.CharField(read_only=True)

    class Meta:
        model = TenantAccount
        fields = ["id", "cluster", "label", "username", "auth_kind", "private_key", "passphrase", "password",
                  "created_at"]  # fmt: skip
        read_only_fields = ["id", "auth_kind", "created_at"]

    def validate(self, attrs: dict) -> dict:
        if not (attrs.get("private_key") or attrs.get("password")):
            raise serializers.ValidationError("give a private key or a password")
        return attrs
