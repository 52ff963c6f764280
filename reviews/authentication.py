"""DRF authentication by API token (`Authorization: Token <token>`), hashed at rest.

It keeps DRF's header handling (it subclasses `TokenAuthentication`, so drf-spectacular
still documents ``tokenAuth`` and `config.throttles` still recognises token clients) and
replaces the lookup: `reviews.api_tokens.api_token_authenticate`, one indexed row by the
token's prefix and a constant-time digest comparison. `request.auth` is the `ApiToken` row.
"""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions


class ApiTokenAuthentication(authentication.TokenAuthentication):
    keyword = "Token"

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        from reviews.api_tokens import api_token_authenticate  # models load after settings

        row = api_token_authenticate(token=key)
        if row is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not row.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return row.user, row
