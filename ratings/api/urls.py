from rest_framework.routers import DefaultRouter

from providers.api import views as provider_views
from ratings.api import views

router = DefaultRouter()
router.register("providers", provider_views.ProviderViewSet, basename="provider")
router.register("clusters", provider_views.ClusterViewSet, basename="cluster")
router.register("cycles", provider_views.CycleViewSet, basename="cycle")
router.register("score-snapshots", views.ScoreSnapshotViewSet, basename="score-snapshot")
router.register("tier-assignments", views.TierAssignmentViewSet, basename="tier-assignment")

urlpatterns = router.urls
