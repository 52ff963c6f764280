"""Cost API routes, mounted under /api/v1/ by config/api.py."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from costs.api import views

router = DefaultRouter()
router.register("cluster-prices", views.ClusterPriceViewSet, basename="cluster-price")

urlpatterns = [
    *router.urls,
    path("cycle-costs/<slug:cycle_slug>/", views.CycleCostsView.as_view(), name="cycle-costs"),
]
