"""Serializers for the staff report API (the public API serves frozen bytes, see views)."""

from __future__ import annotations

from rest_framework import serializers

from reports.models import Report


class ReportSerializer(serializers.ModelSerializer):
    cycle = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    published_by = serializers.StringRelatedField()
    superseded_by = serializers.SerializerMethodField()

    class Meta:
        model = Report
        fields = [
            "id", "cycle", "status", "content_hash", "supersedes", "superseded_by", "correction_notice",
            "created_at", "fact_check_opened_at", "published_at", "published_by", "superseded_at",
            "withdrawn_at", "withdrawal_notice",
        ]
        read_only_fields = fields

    def get_superseded_by(self, report: Report) -> int | None:
        successor = getattr(report, "superseded_by", None)
        return successor.pk if successor else None


class ReportDetailSerializer(ReportSerializer):
    class Meta(ReportSerializer.Meta):
        fields = [*ReportSerializer.Meta.fields, "content"]
        read_only_fields = fields


class DraftCreateSerializer(serializers.Serializer):
    cycle = serializers.SlugField(help_text="Slug of the cycle the document reports on.")
    document = serializers.JSONField(required=False, help_text="A report document (reports.context).")
    score_snapshot = serializers.IntegerField(required=False, help_text="Build the document from this snapshot.")

    def validate(self, attrs: dict) -> dict:
        if ("document" in attrs) == ("score_snapshot" in attrs):
            raise serializers.ValidationError("give exactly one of document or score_snapshot")
        return attrs


class NoticeSerializer(serializers.Serializer):
    notice = serializers.CharField(max_length=4000, help_text="The public notice shown with the report.")


class CorrectionSerializer(NoticeSerializer):
    replacement = serializers.IntegerField(help_text="Id of the draft or fact-check report to publish instead.")
