"""Rubric API routes under /api/v1/: rubric-versions (read, import, export, freeze, clone, diff) and criteria."""

from rest_framework.routers import DefaultRouter

from rubric.api import views

router = DefaultRouter()
router.register("rubric-versions", views.RubricVersionViewSet, basename="rubricversion")
router.register("criteria", views.CriterionViewSet, basename="criterion")

urlpatterns = router.urls
