from rest_framework.routers import DefaultRouter

from ratings.api import views

router = DefaultRouter()
router.register("providers", views.ProviderViewSet, basename="provider")
router.register("clusters", views.ClusterViewSet, basename="cluster")
router.register("cycles", views.CycleViewSet, basename="cycle")
router.register("score-snapshots", views.ScoreSnapshotViewSet, basename="score-snapshot")
router.register("tier-assignments", views.TierAssignmentViewSet, basename="tier-assignment")

urlpatterns = router.urls
