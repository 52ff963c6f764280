"""Public report URLs (no login): pages, exports, charts, /llms.txt and the public API."""

from django.urls import path

from reports import costs_section, views
from reports.api import views as api_views

app_name = "reports"

urlpatterns = [
    path("", views.home, name="home"),
    path("llms.txt", views.llms_txt, name="llms-txt"),
    path("reports/", views.report_index, name="index"),
    path("reports/<int:pk>/", views.overview, name="overview"),
    path("reports/<int:pk>/report.json", views.export_json, name="json"),
    path("reports/<int:pk>/report.pdf", views.export_pdf, name="pdf"),
    path("reports/<int:pk>/<str:table>.csv", views.export_csv, name="csv"),
    path("reports/<int:pk>/providers/<slug:slug>/", views.provider_page, name="provider"),
    path("reports/<int:pk>/providers/<slug:slug>.txt", views.provider_text, name="provider-text"),
    path("reports/<int:pk>/charts/<slug:chart>/<slug:slug>.svg", views.chart_svg, name="chart"),
    path("reports/<int:pk>/costs/", costs_section.costs_page, name="costs"),
    path("reports/<int:pk>/cost-curve.svg", costs_section.cost_curve, name="cost-curve"),
    path("methodology/<slug:name>/<str:version>/", views.methodology, name="methodology"),
    path("api/public/reports/", api_views.PublicReportList.as_view(), name="api-report-list"),
    path("api/public/reports/<int:pk>/", api_views.PublicReportDetail.as_view(), name="api-report-detail"),
]
