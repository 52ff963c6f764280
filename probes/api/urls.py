from rest_framework.routers import DefaultRouter

from probes.api import views

router = DefaultRouter()
router.register("probe-runs", views.ProbeRunViewSet, basename="probe-run")
router.register("findings", views.FindingViewSet, basename="finding")
router.register("tenant-accounts", views.TenantAccountViewSet, basename="tenant-account")

urlpatterns = router.urls
