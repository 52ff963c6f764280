"""Probes API v1: start runs, read runs and findings, register tenant accounts.

Each view declares its roles: staff read; analysts and admins write, and writes need the
probes model permissions too (starting runs: ``probes.add_proberun``). Each write parses input and calls one service. Secrets go in and never come out.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
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


class ProbeRunViewSet(RoleViewSetMixin, viewsets.ReadOnlyModelViewSet):
    roles = ROLES
    queryset = ProbeRun.objects.select_related("cluster").order_by("-created_at")
    serializer_class = ProbeRunSerializer
    filterset_fields = ["cluster", "status", "probe_id", "flagged"]

    @extend_schema(request=ProbeRunStartSerializer, responses=ProbeRunSerializer(many=True))
    @action(detail=False, methods=["post"], permission_classes=[RolePermission, DjangoModelPermissions])
    def start(self, request: Request, **kwargs: object) -> Response:
        data = ProbeRunStartSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        cluster = get_object_or_404(Cluster, pk=data.validated_data["cluster"])
        runs = services.probe_runs_start(cluster=cluster, probe_ids=data.validated_data["probes"])
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
