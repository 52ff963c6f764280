"""Cost API: cluster prices (analysts and admins write, staff readers read) and a cycle's costs."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.access import ALL_STAFF_READ, Role, RolePermission, RoleViewSetMixin
from costs import services
from costs.api.serializers import ClusterPriceSerializer
from costs.document import cost_section
from costs.models import ClusterPrice
from providers.models import Cycle

READ_WRITE = {"read": set(ALL_STAFF_READ), "write": {Role.ANALYST, Role.ADMIN}}


class ClusterPriceViewSet(RoleViewSetMixin, mixins.CreateModelMixin, mixins.UpdateModelMixin,
                          viewsets.ReadOnlyModelViewSet):
    """A cluster's effective price in a cycle (and its owned basis); never deleted, history kept."""

    roles = READ_WRITE
    queryset = ClusterPrice.objects.select_related("cluster__provider", "cycle", "recorded_by")
    serializer_class = ClusterPriceSerializer
    filterset_fields = ["cycle__slug", "cluster", "cluster__provider__slug"]

    def perform_create(self, serializer: Any) -> None:
        data = dict(serializer.validated_data)
        cluster, cycle = data.pop("cluster"), data.pop("cycle")
        serializer.instance = services.cluster_price_record(cluster=cluster, cycle=cycle, by=self.request.user, **data)

    def perform_update(self, serializer: Any) -> None:
        data = dict(serializer.validated_data)
        for fixed in ("cluster", "cycle"):
            if fixed in data and data.pop(fixed) != getattr(serializer.instance, fixed):
                from rest_framework.exceptions import ValidationError

                raise ValidationError({fixed: "A price's cluster and cycle never change; record a new price."})
        serializer.instance = services.cluster_price_update(price=serializer.instance, by=self.request.user, **data)


class CycleCostsView(RoleViewSetMixin, APIView):
    """The cycle's cost per useful Mtok per cluster, live from its rows (reports freeze the same section)."""

    permission_classes = [RolePermission]
    roles = {"read": set(ALL_STAFF_READ)}

    @extend_schema(summary="A cycle's cost per useful Mtok, with P, T, g and A and their inputs",
                   responses={200: OpenApiResponse(description="The cost section (schema opgrade.costs/1)")})
    def get(self, request: Request, cycle_slug: str) -> Response:
        cycle = get_object_or_404(Cycle, slug=cycle_slug)
        return Response(cost_section(cycle), status=status.HTTP_200_OK)
