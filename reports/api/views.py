"""Report APIs.

* Public, read-only (``/api/public/reports/``): no authentication at all
  (``authentication_classes = ()``, ``permission_classes = (AllowAny,)``, deliberately);
  only published, superseded and withdrawn reports; strong ETag from the content hash,
  ``Cache-Control: public``, 304 on If-None-Match. The detail serves pre-rendered bytes
  from the per-content-hash cache.
* Staff (``/api/v1/reports/``): list drafts too, create drafts, open fact-check, publish,
  correct, withdraw. Each action parses input, calls one service, formats the output.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny, DjangoModelPermissions, IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from providers.models import Cycle
from ratings.models import ScoreSnapshot
from reports import selectors, services
from reports.api.serializers import (
    CorrectionSerializer,
    DraftCreateSerializer,
    NoticeSerializer,
    ReportDetailSerializer,
    ReportSerializer,
)
from reports.errors import ReportInputError
from reports.http import cached_response, public_report_bytes, report_meta
from reports.models import Report


# --- public -----------------------------------------------------------------------------------
class PublicReportList(APIView):
    authentication_classes = ()
    permission_classes = (AllowAny,)

    @extend_schema(
        summary="Published, superseded and withdrawn reports (no drafts)", auth=[], operation_id="public_reports_list",
        responses={200: OpenApiResponse(description="{count, results: [{id, cycle, status, content_hash, ...}]}")},
    )
    def get(self, request: Request) -> Response:
        rows = [
            {
                "id": r.pk, "cycle": r.cycle.slug, "status": r.status, "content_hash": r.content_hash,
                "published_at": r.published_at.isoformat() if r.published_at else None,
                "url": request.build_absolute_uri(reverse("reports:api-report-detail", args=[r.pk])),
            }
            for r in selectors.report_public_list()
        ]
        response = Response({"count": len(rows), "results": rows})
        response["Cache-Control"] = "public, max-age=60"
        return response


class PublicReportDetail(APIView):
    authentication_classes = ()
    permission_classes = (AllowAny,)

    @extend_schema(
        summary="One public report: its frozen document and publication status",
        auth=[], operation_id="public_reports_retrieve",
        responses={200: OpenApiResponse(description="The report"), 304: None, 404: None},
    )
    def get(self, request: Request, pk: int, **kwargs: Any) -> HttpResponse:
        meta = report_meta(pk)
        return cached_response(request, meta, "json", lambda: public_report_bytes(meta["id"]), "application/json")


# --- staff ------------------------------------------------------------------------------------
class ReportModelPermissions(DjangoModelPermissions):
    """Reads need view_report; writes need add/change_report; publishing is checked by the services."""

    perms_map = {**DjangoModelPermissions.perms_map, "GET": ["%(app_label)s.view_%(model_name)s"],
                 "HEAD": ["%(app_label)s.view_%(model_name)s"]}


class ReportViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    permission_classes = (IsAdminUser, ReportModelPermissions)
    filterset_fields = ["status", "cycle__slug"]

    def get_queryset(self) -> QuerySet[Report]:
        return Report.objects.select_related("cycle", "published_by", "superseded_by")

    def get_serializer_class(self) -> type:
        return ReportDetailSerializer if self.action == "retrieve" else ReportSerializer

    def _done(self, report: Report, code: int = status.HTTP_200_OK) -> Response:
        return Response(ReportSerializer(self.get_queryset().get(pk=report.pk)).data, status=code)

    @extend_schema(request=DraftCreateSerializer, responses={201: ReportSerializer})
    def create(self, request: Request) -> Response:
        data = DraftCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        cycle = Cycle.objects.filter(slug=data.validated_data["cycle"]).first()
        if cycle is None:
            return Response({"cycle": ["no cycle with that slug"]}, status=status.HTTP_400_BAD_REQUEST)
        if "score_snapshot" in data.validated_data:
            report = _draft_from_snapshot(cycle, data.validated_data["score_snapshot"], request.user)
        else:
            report = services.report_draft_create(
                cycle=cycle, snapshot_document=data.validated_data["document"], user=request.user
            )
        return self._done(report, status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: ReportSerializer})
    @action(detail=True, methods=["post"], url_path="fact-check")
    def fact_check(self, request: Request, pk: str, **kwargs: Any) -> Response:
        return self._done(services.report_fact_check_open(report=self.get_object(), user=request.user))

    @extend_schema(request=None, responses={200: ReportSerializer})
    @action(detail=True, methods=["post"])
    def publish(self, request: Request, pk: str, **kwargs: Any) -> Response:
        return self._done(services.report_publish(report=self.get_object(), user=request.user))

    @extend_schema(request=CorrectionSerializer, responses={200: ReportSerializer})
    @action(detail=True, methods=["post"])
    def correct(self, request: Request, pk: str, **kwargs: Any) -> Response:
        data = CorrectionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        replacement = Report.objects.filter(pk=data.validated_data["replacement"]).first()
        if replacement is None:
            return Response({"replacement": ["no report with that id"]}, status=status.HTTP_400_BAD_REQUEST)
        report = services.report_correct(
            report=self.get_object(), replacement=replacement, notice=data.validated_data["notice"],
            user=request.user,
        )
        return self._done(report)

    @extend_schema(request=NoticeSerializer, responses={200: ReportSerializer})
    @action(detail=True, methods=["post"])
    def withdraw(self, request: Request, pk: str, **kwargs: Any) -> Response:
        data = NoticeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        report = services.report_withdraw(
            report=self.get_object(), notice=data.validated_data["notice"], user=request.user
        )
        return self._done(report)


def _draft_from_snapshot(cycle: Cycle, snapshot_id: int, user: Any) -> Report:
    snapshot = ScoreSnapshot.objects.filter(pk=snapshot_id, cycle=cycle).first()
    if snapshot is None:
        raise ReportInputError(f"no score snapshot {snapshot_id} for cycle {cycle.slug}")
    return services.report_draft_create_from_snapshot(snapshot=snapshot, user=user)
