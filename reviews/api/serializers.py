"""Serializers for the reviews API: input parsing and output shaping only.

Output serializers never carry more than the caller's role may see: reviewers get no
other reviewer's identity and no peer score while blind; provider users get only their
own replies. Writes go through reviews.services.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.access import ALL_STAFF_READ, user_role
from providers.models import Cycle, Provider
from ratings.models import ScoreOverride
from reviews.models import (
    AuditEvent,
    ConflictOfInterest,
    FeedbackImport,
    InterviewNote,
    Reconciliation,
    ReviewAssignment,
    RightOfReply,
)
from reviews.selectors import peer_scores, peer_scores_for_page
from rubric.models import Criterion


class CitationSerializer(serializers.Serializer):
    url = serializers.URLField(max_length=2000)
    quote = serializers.CharField(max_length=2000)


class PeerScoreSerializer(serializers.Serializer):
    slot = serializers.CharField()
    score = serializers.IntegerField(allow_null=True)
    status = serializers.CharField()


class UnitInputSerializer(serializers.Serializer):
    """cycle x provider x criterion named by slug / slug / key."""

    cycle = serializers.SlugRelatedField(slug_field="slug", queryset=Cycle.objects.all())
    provider = serializers.SlugRelatedField(slug_field="slug", queryset=Provider.objects.all())
    criterion = serializers.CharField(max_length=96, help_text="Criterion key in the cycle's rubric.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        criterion = Criterion.objects.filter(
            rubric_version_id=attrs["cycle"].rubric_version_id, key=attrs["criterion"]
        ).first()
        if criterion is None:
            raise serializers.ValidationError({"criterion": "no such criterion in the cycle's rubric"})
        attrs["criterion"] = criterion
        return attrs


class ConflictSerializer(serializers.ModelSerializer):
    reviewer = serializers.SlugRelatedField(slug_field="username", read_only=True)
    provider = serializers.SlugRelatedField(slug_field="slug", queryset=Provider.objects.all())

    class Meta:
        model = ConflictOfInterest
        fields = ["id", "reviewer", "provider", "declared_at", "note"]
        read_only_fields = ["id", "reviewer", "declared_at"]


class AssignmentListSerializer(serializers.ListSerializer):
    """Reads the page's peer scores in one query (selectors.peer_scores_for_page), not one per row."""

    def to_representation(self, data: Any) -> list[Any]:
        items = list(data.all() if hasattr(data, "all") else data)
        self.child.context["peer_scores"] = peer_scores_for_page(
            assignments=items, user=self.context["request"].user
        )
        return super().to_representation(items)


class AssignmentSerializer(serializers.ModelSerializer):
    cycle = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    provider = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    criterion = serializers.SlugRelatedField(slug_field="key", read_only=True)
    reviewer = serializers.SerializerMethodField()
    peer_scores = serializers.SerializerMethodField(
        help_text="Other reviewers' scores of this unit; null while the review is blind."
    )

    class Meta:
        model = ReviewAssignment
        fields = [
            "id", "cycle", "provider", "criterion", "reviewer", "slot", "status", "score", "citations", "notes",
            "created_at", "submitted_at", "peer_scores",
        ]
        list_serializer_class = AssignmentListSerializer

    def _user(self) -> Any:
        return self.context["request"].user

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_reviewer(self, obj: ReviewAssignment) -> str | None:
        user = self._user()
        if obj.reviewer_id == user.pk or user_role(user) in ALL_STAFF_READ:
            return obj.reviewer.get_username()
        return None

    @extend_schema_field(PeerScoreSerializer(many=True, allow_null=True))
    def get_peer_scores(self, obj: ReviewAssignment) -> list[dict[str, Any]] | None:
        page = self.context.get("peer_scores")
        scores = page[obj.pk] if page is not None and obj.pk in page else peer_scores(
            assignment=obj, user=self._user()
        )
        return None if scores is None else [vars(s) for s in scores]


class AssignmentCreateSerializer(UnitInputSerializer):
    reviewer = serializers.CharField(help_text="Username of a reviewer.")
    slot = serializers.ChoiceField(choices=ReviewAssignment.Slot.choices)


class SubmitSerializer(serializers.Serializer):
    score = serializers.IntegerField(min_value=0, max_value=4)
    citations = CitationSerializer(many=True, allow_empty=False)
    notes = serializers.CharField(required=False, allow_blank=True, default="")


class SubmitResultSerializer(serializers.Serializer):
    assignment = AssignmentSerializer()
    third_reviewer_assigned = serializers.BooleanField()
    needs_third_reviewer = serializers.BooleanField()


class ReconciliationSerializer(serializers.ModelSerializer):
    cycle = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    provider = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    criterion = serializers.SlugRelatedField(slug_field="key", read_only=True)
    reviews = serializers.PrimaryKeyRelatedField(many=True, read_only=True)
    reconciled_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Reconciliation
        fields = ["id", "cycle", "provider", "criterion", "value", "method", "reviews", "note", "reconciled_by",
                  "created_at"]


class ReconciliationCreateSerializer(UnitInputSerializer):
    value = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=4, default=None)
    note = serializers.CharField(required=False, allow_blank=True, default="")


class AlphaSerializer(serializers.Serializer):
    criterion_key = serializers.CharField()
    alpha = serializers.FloatField(allow_null=True)
    units = serializers.IntegerField()
    flagged = serializers.BooleanField()
    reason = serializers.CharField()


class OverrideSerializer(serializers.ModelSerializer):
    cycle = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    provider = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    criterion = serializers.SlugRelatedField(slug_field="key", read_only=True)
    proposed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    second_decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    disputed_findings = serializers.ListField(child=serializers.IntegerField(), read_only=True)

    class Meta:
        model = ScoreOverride
        fields = ["id", "cycle", "provider", "criterion", "value", "reason", "justification", "evidence",
                  "evidence_finding", "disputed_findings", "status", "proposed_by", "decided_by", "decision_note",
                  "second_decided_by", "second_decided_at", "created_at", "decided_at"]


class OverrideCreateSerializer(UnitInputSerializer):
    value = serializers.FloatField(min_value=0, max_value=1, help_text="Normalised criterion score, 0-1.")
    reason = serializers.ChoiceField(
        choices=ScoreOverride.Reason.choices, default=ScoreOverride.Reason.JUDGEMENT,
        help_text="A gate failed by a critical finding takes only 'measurement_wrong' (with evidence_finding).",
    )
    justification = serializers.CharField()
    evidence = CitationSerializer(many=True, allow_empty=False)
    evidence_finding = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1,
        help_text="measurement_wrong: id of the later, passing, non-critical finding of the same probe that shows it.",
    )


class DecisionSerializer(serializers.Serializer):
    note = serializers.CharField(required=False, allow_blank=True, default="")


class FeedbackImportSerializer(serializers.ModelSerializer):
    cycle = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    imported_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = FeedbackImport
        fields = ["id", "cycle", "filename", "sha256", "row_count", "imported_by", "created_at"]


class FeedbackUploadSerializer(serializers.Serializer):
    cycle = serializers.SlugRelatedField(slug_field="slug", queryset=Cycle.objects.all())
    file = serializers.FileField(help_text="UTF-8 CSV; columns documented in reviews.feedback_csv.")
    dry_run = serializers.BooleanField(default=True)


class RowErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    message = serializers.CharField()


class FeedbackImportReportSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    ok = serializers.BooleanField()
    valid_rows = serializers.IntegerField()
    written = serializers.IntegerField()
    batch_id = serializers.IntegerField(allow_null=True)
    errors = RowErrorSerializer(many=True)


class InterviewNoteSerializer(serializers.ModelSerializer):
    cycle = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    provider = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    interviewer = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = InterviewNote
        fields = ["id", "cycle", "provider", "area_or_criterion", "rating", "respondent_org_hash", "notes",
                  "interviewed_on", "interviewer", "created_at"]


class InterviewNoteCreateSerializer(serializers.Serializer):
    cycle = serializers.SlugRelatedField(slug_field="slug", queryset=Cycle.objects.all())
    provider = serializers.SlugRelatedField(slug_field="slug", queryset=Provider.objects.all())
    area_or_criterion = serializers.SlugField(max_length=96)
    rating = serializers.IntegerField(min_value=1, max_value=5, required=False, allow_null=True, default=None)
    respondent_org = serializers.CharField(max_length=200, write_only=True)
    notes = serializers.CharField()
    interviewed_on = serializers.DateField()


class ReplySerializer(serializers.ModelSerializer):
    provider = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    cycle = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    user = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = RightOfReply
        fields = ["id", "provider", "user", "cycle", "report_id", "fact_ref", "text", "status", "response",
                  "created_at"]


class ReplyCreateSerializer(serializers.Serializer):
    cycle = serializers.SlugRelatedField(slug_field="slug", queryset=Cycle.objects.all())
    fact_ref = serializers.CharField(max_length=200)
    text = serializers.CharField(max_length=10_000)
    report_id = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                         max_value=2**63 - 1)


class ReplyRespondSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=[RightOfReply.Status.ACCEPTED, RightOfReply.Status.DECLINED])
    response = serializers.CharField()


class AuditEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = ["id", "at", "username", "model", "object_id", "object_repr", "action", "changes"]
