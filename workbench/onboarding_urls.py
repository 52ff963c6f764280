"""URLs of the cluster onboarding flow, under /admin/workbench/clusters/ (workbench/urls.py)."""

from django.contrib import admin
from django.urls import path

from workbench import onboarding_views as views

urlpatterns = [
    path("<int:pk>/onboard/", admin.site.admin_view(views.onboard), name="onboard"),
    path("<int:pk>/onboard/access/", admin.site.admin_view(views.onboard_access), name="onboard_access"),
    path("<int:pk>/onboard/tenants/", admin.site.admin_view(views.onboard_tenants), name="onboard_tenants"),
    path("<int:pk>/onboard/hostkeys/", admin.site.admin_view(views.onboard_hostkeys), name="onboard_hostkeys"),
    path("<int:pk>/onboard/settings/", admin.site.admin_view(views.onboard_settings), name="onboard_settings"),
    path("<int:pk>/onboard/check/", admin.site.admin_view(views.onboard_check), name="onboard_check"),
    path("<int:pk>/onboard/evidence/", admin.site.admin_view(views.onboard_evidence), name="onboard_evidence"),
]
