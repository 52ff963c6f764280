"""API v1: one place that mounts every app's API routes under /api/v1/.

Each app keeps its own `api/urls.py`; adding an app's API means one line here. Anonymous
requests get 401/403 (IsAuthenticated is the default permission); the published-report API
is the one deliberate exception and says so in its own views.
"""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

urlpatterns = [
    path("v1/", include("rubric.api.urls")),
    path("v1/", include("ratings.api.urls")),
    path("v1/", include("reports.api.urls")),
    path("v1/", include("reviews.api.urls")),
    path("v1/", include("probes.api.urls")),
    path("v1/", include("grades.api.urls")),
    path("v1/", include("costs.api.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script as a file (?script), so the page needs no
    # inline script under the Content-Security-Policy; the UI itself comes from the sidecar.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
]
