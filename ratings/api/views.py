"""Read-only API for providers, clusters, cycles, score snapshots and tier assignments."""

from django.db.models import Prefetch
from rest_framework import viewsets

from ratings.api.serializers import (
    ClusterSerializer,
    CycleSerializer,
    ProviderSerializer,
    ScoreSnapshotSerializer,
    TierAssignmentSerializer,
)
from ratings.models import Cluster, Cycle, Provider, TierAssignment
from ratings.selectors import score_snapshot_list, tier_assignment_list


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


class ScoreSnapshotViewSet(viewsets.ReadOnlyModelViewSet):
    """Immutable engine runs: provenance (seed, hashes, versions) and each provider's tier."""

    queryset = score_snapshot_list().prefetch_related(
        Prefetch("assignments", queryset=TierAssignment.objects.select_related("provider"))
    )
    serializer_class = ScoreSnapshotSerializer
    filterset_fields = ["cycle__slug", "content_hash"]


class TierAssignmentViewSet(viewsets.ReadOnlyModelViewSet):
    """One provider's tier in one snapshot with probabilities, CI and area/criterion breakdowns."""

    queryset = tier_assignment_list()
    serializer_class = TierAssignmentSerializer
    filterset_fields = ["snapshot", "provider__slug", "tier", "snapshot__cycle__slug"]
