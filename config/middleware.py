"""Small middlewares Django has no setting for.

* ``PermissionsPolicyMiddleware``: Permissions-Policy on every response (no Opgrade page uses
  a camera, sensor or payment API); Django sets Content-Security-Policy itself (``SECURE_CSP``).
  The value is ``OPGRADE_PERMISSIONS_POLICY``.
* ``ApiJsonErrorsMiddleware``: error pages under /api/ are JSON, DEBUG or not.
* ``DatabaseUnavailableMiddleware``: a request that finds PostgreSQL away (restarting, failing
  over) answers 503 with Retry-After, never a 500: it is an outage of ours, and the request wrote
  nothing (Django rolls its transaction back). Only an outage: a database error while the database
  still answers (a missing table, a broken query) is a server error, a 500 with its traceback in
  the log, never hidden as "try again" (``database_reachable`` tells the two apart by connecting).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)


class PermissionsPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        policy = getattr(settings, "OPGRADE_PERMISSIONS_POLICY", "")
        if policy and "Permissions-Policy" not in response:
            response["Permissions-Policy"] = policy
        return response


class ApiJsonErrorsMiddleware:
    """Under /api/, an error page is JSON: ``{"detail": ...}`` with the same status.

    DRF views already answer JSON (config/api_errors.py), but some refusals happen before a
    view runs (an unknown URL, a bad Host header, too many form fields) and Django answers
    those with an HTML page, a debug page when DEBUG is on. API clients get JSON instead;
    the error itself is still logged as usual. Outermost, so it sees every such page.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code >= 400
            and request.path_info.startswith("/api/")
            and response.get("Content-Type", "").startswith("text/html")
        ):
            detail = response.reason_phrase or "Error"
            json_response = JsonResponse({"detail": f"{detail}."}, status=response.status_code)
            for header in ("Retry-After", "Allow", "WWW-Authenticate"):
                if header in response:
                    json_response[header] = response[header]
            return json_response
        return response


class DatabaseUnavailableMiddleware:
    """A view that cannot reach the database answers 503 (JSON under /api/), with Retry-After."""

    retry_after_s = 15

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError | InterfaceError) or database_reachable():
            return None
        logger.error("database unavailable for %s %s: %s", request.method, request.path, exception)
        detail = "The database is unavailable for a moment; nothing was changed. Try again shortly."
        if request.path_info.startswith("/api/"):
            response: HttpResponse = JsonResponse({"detail": detail, "code": "database_unavailable"}, status=503)
        else:
            response = HttpResponse(detail, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(self.retry_after_s)
        return response


def database_reachable(alias: str = DEFAULT_DB_ALIAS) -> bool:
    """Whether a fresh connection to the database answers a trivial query now (the failed request's
    connection may be broken, so it is closed first and Django opens a new one)."""
    connection = connections[alias]
    try:
        connection.close()
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        return False
