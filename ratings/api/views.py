"""Read-only API for score snapshots and tier assignments (providers, clusters, cycles: providers/api)."""

from django.db.models import Prefetch
from rest_framework import viewsets

from config.access import STAFF_ROLES, RoleViewSetMixin
from ratings.api.serializers import (
    ScoreSnapshotSerializer,
    TierAssignmentSerializer,
)
from ratings.models import TierAssignment
from ratings.selectors import score_snapshot_list, tier_assignment_list


class ScoreSnapshotViewSet(RoleViewSetMixin, viewsets.ReadOnlyModelViewSet):
    """Immutable engine runs: provenance (seed, hashes, versions) and each provider's tier."""

    roles = {"read": set(STAFF_ROLES)}  # staff only until published (reports serve the public copy)
    queryset = score_snapshot_list().prefetch_related(
        Prefetch("assignments", queryset=TierAssignment.objects.select_related("provider"))
    )
    serializer_class = ScoreSnapshotSerializer
    filterset_fields = ["cycle__slug", "content_hash"]


class TierAssignmentViewSet(RoleViewSetMixin, viewsets.ReadOnlyModelViewSet):
    """One provider's tier in one snapshot with probabilities, CI and area/criterion breakdowns."""

    roles = {"read": set(STAFF_ROLES)}
    queryset = tier_assignment_list()
    serializer_class = TierAssignmentSerializer
    filterset_fields = ["snapshot", "provider__slug", "tier", "snapshot__cycle__slug"]
