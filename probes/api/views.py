"""Probes API v1: start runs, read runs and findings, register tenant accounts.

Each view declares its roles: staff read; analysts and admins write, and writes need the
probes model permissions too (starting runs: ``probes.add_proberun``). Each write parses input and calls one service. Secrets go in and never come out.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import DjangoModelPermissions
from rest_framework.request import Request
from rest_framework.response import Response

from config.access import STAFF_ROLES, Role, RolePermission, RoleViewSetMixin
from probes import services
from probes.api.serializers import (
    FindingSerializer,
    ProbeRunSerializer,
    ProbeRunStartSerializer,
    TenantAccountSerializer,
)
from probes.models import Finding, ProbeRun, TenantAccount
from providers.models import Cluster

ROLES = {"read": set(STAFF_ROLES), "write": {Role.ANALYST, Role.ADMIN}}


class QueueUnavailableError(exceptions.APIException):
    """503: the task queue does not answer; no run was started and nothing was written."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = services.QueueUnavailable.message
    default_code = "queue_unavailable"


class ProbeRunViewSet(RoleViewSetMixin, viewsets.ReadOnlyModelViewSet):
    roles = ROLES
    queryset = ProbeRun.objects.select_related("cluster").order_by("-created_at")
    serializer_class = ProbeRunSerializer
    filterset_fields = ["cluster", "status", "probe_id", "flagged"]

    @extend_schema(
        request=ProbeRunStartSerializer,
        responses={201: ProbeRunSerializer(many=True), 503: OpenApiResponse(description=services.QueueUnavailable.message)},
    )
    @action(detail=False, methods=["post"], permission_classes=[RolePermission, DjangoModelPermissions])
    def start(self, request: Request, **kwargs: object) -> Response:
        data = ProbeRunStartSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        cluster = get_object_or_404(Cluster, pk=data.validated_data["cluster"])
        try:
            runs = services.probe_runs_start(cluster=cluster, probe_ids=data.validated_data["probes"])
        except services.QueueUnavailable as exc:  # checked before any write: all or nothing
            raise QueueUnavailableError(
                {"detail": services.QueueUnavailable.message, "code": QueueUnavailableError.default_code}
            ) from exc
        return Response(ProbeRunSerializer(runs, many=True).data, status=status.HTTP_201_CREATED)


class FindingViewSet(RoleViewSetMixin, viewsets.ReadOnlyModelViewSet):
    roles = ROLES
    queryset = Finding.objects.order_by("-created_at")
    serializer_class = FindingSerializer
    filterset_fields = ["run", "probe_id", "outcome", "target", "critical"]


class TenantAccountViewSet(RoleViewSetMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    roles = ROLES
    queryset = TenantAccount.objects.select_related("cluster").order_by("cluster", "label")
    serializer_class = TenantAccountSerializer
    filterset_fields = ["cluster"]
    permission_classes = [RolePermission, DjangoModelPermissions]

    def perform_create(self, serializer: TenantAccountSerializer) -> None:
        data = serializer.validated_data
        account = TenantAccount(cluster=data["cluster"], label=data["label"], username=data["username"])
        try:
            services.tenant_account_set_secrets(
                account=account,
                private_key=data.get("private_key") or None,
                passphrase=data.get("passphrase") or None,
                password=data.get("password") or None,
            )
        except services.ProbeRunError as exc:
            raise ValidationError({"private_key": [str(exc)]}) from exc
        serializer.instance = account
