"""Staff report API, mounted under /api/v1/ by config/api.py."""

from rest_framework.routers import DefaultRouter

from reports.api import views

router = DefaultRouter()
router.register("reports", views.ReportViewSet, basename="report")

urlpatterns = router.urls
