"""Grades API, mounted under /api/v1/ by config/api.py."""

from rest_framework.routers import DefaultRouter

from grades.api import views

router = DefaultRouter()
router.register("grade-definitions", views.GradeDefinitionViewSet, basename="grade-definition")
router.register("price-observations", views.PriceObservationViewSet, basename="price-observation")

urlpatterns = router.urls
