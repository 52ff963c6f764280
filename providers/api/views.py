"""Read-only API for providers, clusters and cycles."""

from rest_framework import viewsets

from providers.api.serializers import ClusterSerializer, CycleSerializer, ProviderSerializer
from providers.models import Cluster, Cycle, Provider


class ProviderViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Provider.objects.all()
    serializer_class = ProviderSerializer
    lookup_field = "slug"
    filterset_fields = ["status"]


class ClusterViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Cluster.objects.select_related("provider")
    serializer_class = ClusterSerializer
    filterset_fields = ["provider__slug", "orchestrator", "gpu_model"]


class CycleViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Cycle.objects.select_related("rubric_version").prefetch_related("providers")
    serializer_class = CycleSerializer
    lookup_field = "slug"
    filterset_fields = ["status"]
