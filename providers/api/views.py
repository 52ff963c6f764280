"""Read-only API for providers, clusters and cycles: staff read them (providers use the portal)."""

from rest_framework import viewsets

from config.access import STAFF_ROLES, RoleViewSetMixin
from providers.api.serializers import ClusterSerializer, CycleSerializer, ProviderSerializer
from providers.models import Cluster, Cycle, Provider

STAFF_READ = {"read": set(STAFF_ROLES)}


class ProviderViewSet(RoleViewSetMixin, viewsets.ReadOnlyModelViewSet):
    roles = STAFF_READ
    queryset = Provider.objects.all()
    serializer_class = ProviderSerializer
    lookup_field = "slug"
    filterset_fields = ["status"]


class ClusterViewSet(RoleViewSetMixin, viewsets.ReadOnlyModelViewSet):
    roles = STAFF_READ
    queryset = Cluster.objects.select_related("provider")
    serializer_class = ClusterSerializer
    filterset_fields = ["provider__slug", "orchestrator", "gpu_model"]


class CycleViewSet(RoleViewSetMixin, viewsets.ReadOnlyModelViewSet):
    roles = STAFF_READ
    queryset = Cycle.objects.select_related("rubric_version").prefetch_related("providers")
    serializer_class = CycleSerializer
    lookup_field = "slug"
    filterset_fields = ["status"]
