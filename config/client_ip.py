"""The client's address, read one way for every per-address limit.

The anonymous API throttle (DRF) and the sign-in lockout (django-axes) both count per client
address. A client can write any `X-Forwarded-For` it likes, so the header is believed only as
far as ``REST_FRAMEWORK["NUM_PROXIES"]`` (``OPGRADE_NUM_PROXIES``) says: with 0 the address is
REMOTE_ADDR, the header ignored; with N trusted proxies it is the N-th address from the right of
the header, the one the outermost of our proxies saw (DRF's rule, reused so the two never differ).
"""

from __future__ import annotations

from typing import Any

from rest_framework.throttling import BaseThrottle


def client_ip(request: Any) -> str | None:
    """The address a per-client limit counts (an HttpRequest or a DRF Request)."""
    return BaseThrottle().get_ident(request) or None
