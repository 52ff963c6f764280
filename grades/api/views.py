"""Grades API v1: grade definitions (read, export, index per period) and rental price observations.

Staff who read everything (analyst, publisher, admin) read; analysts and admins record prices.
Provider accounts get nothing here (the project default, config.access.NotProviderUser): they
see grades only in published reports. A refused observation answers 400 with the reason and
writes nothing.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from config.access import ALL_STAFF_READ, Role, RoleViewSetMixin
from config.api_negotiation import DocumentExportNegotiation
from grades import selectors, services
from grades.api.serializers import (
    GRADE_DOCUMENT_SCHEMA,
    GradeDefinitionSerializer,
    GradeIndexSerializer,
    PriceObservationSerializer,
)
from grades.tracking import NoObservations

RUNNERS = {Role.ANALYST, Role.ADMIN}


class GradeDefinitionViewSet(RoleViewSetMixin, viewsets.ReadOnlyModelViewSet):
    """Grade definitions; ``export`` gives the canonical YAML, ``index`` one period's reference."""

    roles = {"read": set(ALL_STAFF_READ)}
    serializer_class = GradeDefinitionSerializer

    def get_queryset(self) -> Any:
        return selectors.grade_definition_list()

    @extend_schema(responses={(200, "application/yaml"): GRADE_DOCUMENT_SCHEMA})
    @action(detail=True, methods=["get"], content_negotiation_class=DocumentExportNegotiation)
    def export(self, request: Request, pk: str | None = None, **kwargs: Any) -> HttpResponse:
        grade = self.get_object()
        return HttpResponse(selectors.grade_definition_export(grade=grade), content_type="application/yaml; charset=utf-8")

    @extend_schema(parameters=[OpenApiParameter("period", str, required=True, description="YYYY-MM"),
                               OpenApiParameter("term", str, required=False, description="default: the grade's term")],
                   responses={200: GradeIndexSerializer})
    @action(detail=True, methods=["get"])
    def index(self, request: Request, pk: str | None = None, **kwargs: Any) -> Response:
        """The reference index of one period; 400 when the period has no observations."""
        grade = self.get_object()
        period = str(request.query_params.get("period", ""))
        if len(period) != 7 or period[4] != "-" or not (period[:4] + period[5:]).isdigit():
            raise ValidationError({"period": "expected YYYY-MM"})
        term = str(request.query_params.get("term") or selectors.grade_definition_spec(grade=grade).contract.term)
        try:
            point = selectors.grade_index_period(grade=grade, term=term, period=period)
        except (NoObservations, ValueError) as exc:
            raise ValidationError({"period": f"{grade.label}, {term}: {exc}"}) from exc
        return Response(GradeIndexSerializer({
            "grade": grade.label, "term": term, "period": point.period, "median": point.median, "count": point.count,
            "min": point.low, "max": point.high, "p25": point.p25, "p75": point.p75, "thin": point.thin,
        }).data)


class PriceObservationViewSet(RoleViewSetMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    roles = {"read": set(ALL_STAFF_READ), "write": RUNNERS}
    serializer_class = PriceObservationSerializer
    filterset_fields = ["grade", "cluster", "term"]

    def get_queryset(self) -> Any:
        return selectors.price_observation_list().order_by("-observed_on", "pk")

    def perform_create(self, serializer: PriceObservationSerializer) -> None:
        data = serializer.validated_data
        try:
            serializer.instance = services.price_observation_record(
                grade=data["grade"], cluster=data["cluster"], source=data["source"],
                observed_on=data["observed_on"], term=data["term"], price_per_gpu_hour=data["price_per_gpu_hour"],
                user=self.request.user,
            )
        except services.PriceObservationError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
