"""URLs of the cycle workbench, mounted under /admin/workbench/ (config/urls.py)."""

from django.contrib import admin
from django.urls import include, path

from workbench import views

app_name = "workbench"

urlpatterns = [
    path("", admin.site.admin_view(views.cycle_index), name="index"),
    path("reports/<int:pk>/preview/", admin.site.admin_view(views.report_preview), name="report_preview"),
    path("clusters/", include("workbench.onboarding_urls")),  # cluster onboarding (issue 15.3)
    path("<slug:slug>/", admin.site.admin_view(views.cycle_page), name="cycle"),
    path("<slug:slug>/probes/", admin.site.admin_view(views.probes_run), name="probes_run"),
    path("<slug:slug>/feedback/", admin.site.admin_view(views.feedback_import), name="feedback_import"),
    path("<slug:slug>/reviews/", admin.site.admin_view(views.reviews_assign), name="reviews_assign"),
    path("<slug:slug>/tiers/", admin.site.admin_view(views.tiers), name="tiers"),
    path("<slug:slug>/report/", admin.site.admin_view(views.report_draft), name="report_draft"),
]
