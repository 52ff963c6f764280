"""Reviews API: every view declares which roles may read and write (config.access).

Views parse input, call one service or selector, and shape the output. Querysets are
narrowed to the caller (reviewers: their own rows; provider users: their provider's);
an object outside the caller's queryset is a 404, never its data.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView, get_object_or_404
from rest_framework.request import Request
from rest_framework.response import Response

from config.access import ALL_STAFF_READ, Role, RoleViewSetMixin, queryset_for_user, user_role
from config.api_input import CleanFormParser, CleanMultiPartParser
from providers.models import Cycle
from ratings.models import ScoreOverride
from reviews import selectors, services
from reviews.api import serializers as s
from reviews.feedback_csv import FeedbackFileError, feedback_csv_decode
from reviews.models import (
    AuditEvent,
    ConflictOfInterest,
    FeedbackImport,
    InterviewNote,
    Reconciliation,
    RightOfReply,
)

A, R, P, ADM, PROV = Role.ANALYST, Role.REVIEWER, Role.PUBLISHER, Role.ADMIN, Role.PROVIDER


def _valid(serializer_class: type[Any], request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=request.data, context={"request": request})
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class ConflictViewSet(RoleViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                      viewsets.GenericViewSet):
    """Conflicts of interest. Reviewers declare and see their own; analysts see all."""

    roles = {"read": {A, R, P, ADM}, "write": {A, R, ADM}}
    serializer_class = s.ConflictSerializer

    queryset = ConflictOfInterest.objects.select_related("reviewer", "provider")

    def get_queryset(self) -> QuerySet[ConflictOfInterest]:
        qs = super().get_queryset()
        if getattr(self, "swagger_fake_view", False):
            return qs.none()
        return qs if user_role(self.request.user) in ALL_STAFF_READ else qs.filter(reviewer=self.request.user)

    def perform_create(self, serializer: s.ConflictSerializer) -> None:
        serializer.instance = services.conflict_declare(
            reviewer=self.request.user, provider=serializer.validated_data["provider"],
            note=serializer.validated_data.get("note", ""),
        )


class AssignmentViewSet(RoleViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Review assignments. Reviewers see their own, blind; analysts assign."""

    roles = {"read": {A, R, P, ADM}, "write": {A, ADM}}
    action_roles = {"submit": {R}}
    serializer_class = s.AssignmentSerializer
    filterset_fields = ["status", "slot"]

    def get_queryset(self) -> QuerySet[Any]:
        return selectors.assignment_list(user=self.request.user)

    @extend_schema(request=s.AssignmentCreateSerializer, responses={201: s.AssignmentSerializer})
    def create(self, request: Request) -> Response:
        data = _valid(s.AssignmentCreateSerializer, request)
        reviewer = get_user_model().objects.filter(username=data["reviewer"]).first()
        if reviewer is None:
            raise ValidationError({"reviewer": "no such user"})
        assignment = services.assignment_create(
            cycle=data["cycle"], provider=data["provider"], criterion=data["criterion"], reviewer=reviewer,
            slot=data["slot"], by=request.user,
        )
        return Response(self.get_serializer(assignment).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.SubmitSerializer, responses={200: s.SubmitResultSerializer})
    @action(detail=True, methods=["post"])
    def submit(self, request: Request, pk: str | None = None) -> Response:
        assignment = self.get_object()
        data = _valid(s.SubmitSerializer, request)
        result = services.review_submit(
            assignment=assignment, by=request.user, score=data["score"],
            citations=[dict(c) for c in data["citations"]], notes=data["notes"],
        )
        return Response({
            "assignment": self.get_serializer(result.assignment).data,
            "third_reviewer_assigned": result.third_assignment is not None,
            "needs_third_reviewer": result.needs_third_reviewer,
        })


class ReconciliationViewSet(RoleViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                            viewsets.GenericViewSet):
    """Reconciled documentation-review values, each linked to its raw reviews."""

    roles = {"read": {A, P, ADM}, "write": {A, ADM}}
    serializer_class = s.ReconciliationSerializer
    queryset = Reconciliation.objects.select_related("cycle", "provider", "criterion", "reconciled_by")

    def get_queryset(self) -> QuerySet[Reconciliation]:
        return super().get_queryset().prefetch_related("reviews")

    @extend_schema(request=s.ReconciliationCreateSerializer, responses={201: s.ReconciliationSerializer})
    def create(self, request: Request) -> Response:
        data = _valid(s.ReconciliationCreateSerializer, request)
        rec = services.reconciliation_create(
            cycle=data["cycle"], provider=data["provider"], criterion=data["criterion"], by=request.user,
            value=data["value"], note=data["note"],
        )
        return Response(self.get_serializer(rec).data, status=status.HTTP_201_CREATED)


class AgreementView(RoleViewSetMixin, GenericAPIView):
    """Krippendorff's alpha (ordinal) per criterion for a cycle, flagged below 0.667."""

    roles = {"read": {A, P, ADM}}
    serializer_class = s.AlphaSerializer
    pagination_class = None
    queryset = Cycle.objects.none()  # for the schema only; the view reads through a selector

    @extend_schema(responses={200: s.AlphaSerializer(many=True)})
    def get(self, request: Request, cycle_slug: str) -> Response:
        cycle = get_object_or_404(Cycle.objects.select_related("rubric_version"), slug=cycle_slug)
        return Response([vars(r) for r in selectors.cycle_alpha(cycle=cycle)])


class OverrideViewSet(RoleViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Score overrides: publishers propose; a different publisher approves or rejects."""

    roles = {"read": {A, P, ADM}, "write": {P}}
    serializer_class = s.OverrideSerializer
    queryset = ScoreOverride.objects.select_related(
        "cycle", "provider", "criterion", "proposed_by", "decided_by", "second_decided_by"
    )
    filterset_fields = ["status"]

    @extend_schema(request=s.OverrideCreateSerializer, responses={201: s.OverrideSerializer})
    def create(self, request: Request) -> Response:
        data = _valid(s.OverrideCreateSerializer, request)
        override = services.override_propose(
            cycle=data["cycle"], provider=data["provider"], criterion=data["criterion"], value=data["value"],
            justification=data["justification"], evidence=[dict(e) for e in data["evidence"]], by=request.user,
            reason=data["reason"], evidence_finding=data["evidence_finding"],
        )
        return Response(self.get_serializer(override).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.DecisionSerializer, responses={200: s.OverrideSerializer})
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        data = _valid(s.DecisionSerializer, request)
        override = services.override_decide(override=self.get_object(), by=request.user, approve=True,
                                            note=data["note"])
        return Response(self.get_serializer(override).data)

    @extend_schema(request=s.DecisionSerializer, responses={200: s.OverrideSerializer})
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        data = _valid(s.DecisionSerializer, request)
        override = services.override_decide(override=self.get_object(), by=request.user, approve=False,
                                            note=data["note"])
        return Response(self.get_serializer(override).data)


class FeedbackImportViewSet(RoleViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                            viewsets.GenericViewSet):
    """Customer-feedback CSV imports: a dry run lists every bad row; a bad file writes nothing."""

    roles = {"read": {A, P, ADM}, "write": {A, ADM}}
    serializer_class = s.FeedbackImportSerializer
    queryset = FeedbackImport.objects.select_related("cycle", "imported_by")
    parser_classes = [CleanMultiPartParser, CleanFormParser]

    # A refused file's 400 carries the report too; a bad request (no file, no such cycle) the
    # field errors: config/api_schema.py documents 400 as the Error body, which admits both.
    @extend_schema(request=s.FeedbackUploadSerializer, responses={
        200: s.FeedbackImportReportSerializer, 201: s.FeedbackImportReportSerializer,
    })
    def create(self, request: Request) -> Response:
        data = _valid(s.FeedbackUploadSerializer, request)
        upload = data["file"]
        if upload.size > 20 * 1024 * 1024:
            raise ValidationError({"file": "larger than 20 MiB"})
        try:
            text = feedback_csv_decode(upload.read()).text
        except FeedbackFileError as exc:
            raise ValidationError({"file": str(exc)}) from exc
        report = services.feedback_import(
            cycle=data["cycle"], text=text, filename=upload.name or "upload.csv", by=request.user,
            dry_run=data["dry_run"],
        )
        body = {
            "dry_run": report.dry_run, "ok": report.ok, "valid_rows": len(report.parsed.rows),
            "written": report.written, "batch_id": report.batch_id,
            "errors": [{"line": e.line, "message": e.message} for e in report.parsed.errors],
        }
        code = status.HTTP_400_BAD_REQUEST if not report.ok else (
            status.HTTP_200_OK if report.dry_run else status.HTTP_201_CREATED
        )
        return Response(body, status=code)


class InterviewNoteViewSet(RoleViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                           viewsets.GenericViewSet):
    """Customer interview notes (staff only; providers never see customer words)."""

    roles = {"read": {A, P, ADM}, "write": {A, ADM}}
    serializer_class = s.InterviewNoteSerializer
    queryset = InterviewNote.objects.select_related("cycle", "provider", "interviewer")

    @extend_schema(request=s.InterviewNoteCreateSerializer, responses={201: s.InterviewNoteSerializer})
    def create(self, request: Request) -> Response:
        data = _valid(s.InterviewNoteCreateSerializer, request)
        note = services.interview_note_create(by=request.user, **data)
        return Response(self.get_serializer(note).data, status=status.HTTP_201_CREATED)


class ReplyViewSet(RoleViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Right-of-reply comments: providers file and see their own; staff answer."""

    roles = {"read": {A, P, ADM, PROV}, "write": {PROV}}
    action_roles = {"respond": {A, P, ADM}}
    serializer_class = s.ReplySerializer
    filterset_fields = ["status"]

    def get_queryset(self) -> QuerySet[RightOfReply]:
        return queryset_for_user(
            RightOfReply.objects.select_related("provider", "cycle", "user"), self.request.user
        )

    @extend_schema(request=s.ReplyCreateSerializer, responses={201: s.ReplySerializer})
    def create(self, request: Request) -> Response:
        data = _valid(s.ReplyCreateSerializer, request)
        reply = services.reply_create(by=request.user, **data)
        return Response(self.get_serializer(reply).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.ReplyRespondSerializer, responses={200: s.ReplySerializer})
    @action(detail=True, methods=["post"])
    def respond(self, request: Request, pk: str | None = None) -> Response:
        data = _valid(s.ReplyRespondSerializer, request)
        reply = services.reply_respond(reply=self.get_object(), by=request.user, **data)
        return Response(self.get_serializer(reply).data)


class AuditEventViewSet(RoleViewSetMixin, viewsets.ReadOnlyModelViewSet):
    """The audit trail: who changed what, when, before and after."""

    roles = {"read": {A, P, ADM}}
    serializer_class = s.AuditEventSerializer
    queryset = AuditEvent.objects.all()
    filterset_fields = ["model", "object_id", "username"]
