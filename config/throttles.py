"""API throttles: anonymous clients, signed-in (session) users and token clients.

Each kind has its own rate (``DEFAULT_THROTTLE_RATES``: ``anon``, ``user``, ``token``; set by
``OPGRADE_THROTTLE_ANON``, ``_USER``, ``_TOKEN``) and answers 429 with ``Retry-After`` once
spent. Exactly one applies to a request: a token client is counted per token user under
``token`` (scripts are expected to be busier than people), a session user under ``user``,
anyone else per client address under ``anon``. Counters live in Django's cache.
"""

from __future__ import annotations

from typing import Any

from rest_framework.authentication import TokenAuthentication
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


def _is_token_client(request: Request) -> bool:
    # The project's token scheme subclasses DRF's (reviews.authentication): ask which one
    # authenticated the request rather than naming an app's token model from config.
    return isinstance(getattr(request, "successful_authenticator", None), TokenAuthentication)


class _CurrentRates:
    """DRF copies the rates into a class attribute at import; read them per request instead,
    so that a changed setting (a test's, or a reload) applies at once."""

    scope: str

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class AnonThrottle(_CurrentRates, AnonRateThrottle):
    scope = "anon"


class SessionUserThrottle(_CurrentRates, UserRateThrottle):
    """Signed-in users who are not token clients."""

    scope = "user"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not request.user or not request.user.is_authenticated or _is_token_client(request):
            return None
        return super().get_cache_key(request, view)


class TokenThrottle(_CurrentRates, UserRateThrottle):
    """Clients authenticated with an API token."""

    scope = "token"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not _is_token_client(request):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}
