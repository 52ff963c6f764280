"""Permissions-Policy on every response: no Opgrade page uses a camera, sensor or payment API.

Django sets Content-Security-Policy itself (``SECURE_CSP``); it has no setting for this
header, hence this small middleware. The value is ``OPGRADE_PERMISSIONS_POLICY``.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class PermissionsPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        policy = getattr(settings, "OPGRADE_PERMISSIONS_POLICY", "")
        if policy and "Permissions-Policy" not in response:
            response["Permissions-Policy"] = policy
        return response
