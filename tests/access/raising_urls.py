"""The project's URLs plus pages that raise, for the debug-page checks (test_no_debug_page.py)."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from config import urls


def _raise(_request: HttpRequest) -> HttpResponse:
    raise RuntimeError("MATRIX-BOOM: a bug in a view")


urlpatterns = [
    path("matrix-boom/", _raise),
    path("api/v1/matrix-boom/", _raise),
    path("portal/matrix-boom/", _raise),
    *urls.urlpatterns,
]
handler400, handler403, handler404, handler500 = urls.handler400, urls.handler403, urls.handler404, urls.handler500
