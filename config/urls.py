"""Top-level URLs: the admin, the API, and (once built) the public reports."""

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views import defaults

from config.admin_forms import wrap_admin_forms
from config.admin_text import guarded_form
from config.api_errors import json_error_view
from config.constraint_words import worded_form


def healthz(_request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok", content_type="text/plain")


admin.site.site_header = "Opgrade"
admin.site.site_title = "Opgrade admin"
admin.site.index_title = "Ratings of GPU cloud operators"
# every admin form refuses NUL and bidi controls, and checks the DB constraints and says them in words
wrap_admin_forms(admin.site, guarded_form, worded_form)

urlpatterns = [
    path("admin/workbench/", include("workbench.urls")),  # before admin/: the cycle workbench
    path("admin/", admin.site.urls),
    path("api/", include("config.api")),
    path("api-auth/", include("rest_framework.urls")),
    path("healthz", healthz, name="healthz"),
    path("", include("reports.urls")),  # public report pages, exports, /llms.txt, /api/public/
    path("portal/", include("reviews.portal_urls")),
]

# Under /api/ even Django's own error pages answer JSON (config/api_errors.py).
handler400 = json_error_view(400, defaults.bad_request)
handler403 = json_error_view(403, defaults.permission_denied)
handler404 = json_error_view(404, defaults.page_not_found)
handler500 = json_error_view(500, defaults.server_error)
