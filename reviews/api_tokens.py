"""API tokens: issue, rotate, revoke, list and authenticate (`reviews.models.ApiToken`).

A token belongs to one user and acts as that user in the API (a provider user's token sees
only what that provider user sees). Only the token's public prefix and the SHA-256 digest
are stored (`reviews.tokens`); `api_token_issue` and `api_token_rotate` return the token
itself exactly once, for the page that shows it to whoever asked, and nothing keeps it.

Who may act on a token: its owner (the provider portal, `reviews.portal_tokens`) or an
admin (the admin site, `reviews.token_admin`). Revoking keeps the row; rotating revokes the
old token and issues a new one with the same name, in one transaction.

Authentication costs one indexed SELECT per request (by prefix, the user joined), plus
an UPDATE of `last_used_at` at most once a minute per token: never a scan of all tokens.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from config.access import Role, user_role
from reviews.models import ApiToken
from reviews.services import ReviewsError, RoleRefused
from reviews.tokens import digest_matches, token_digest, token_new, token_prefix

MAX_ACTIVE_PER_USER = 20
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)  # last_used_at is written at most this often
NAME_MAX_LENGTH = 100


@dataclass(frozen=True)
class IssuedToken:
    """A new token's row and the token itself: show `token` once, then let it go."""

    row: ApiToken
    token: str


def _may_manage(*, by: Any, owner: Any) -> None:
    if getattr(by, "pk", None) is not None and by.pk == owner.pk:
        return
    if user_role(by) == Role.ADMIN:
        return
    raise RoleRefused(f"{getattr(by, 'username', 'anonymous')!s} may not manage another user's API tokens")


def _name_clean(name: str) -> str:
    name = " ".join(str(name).split())
    if not name:
        raise ReviewsError("Give the token a name that says what it is for.")
    if len(name) > NAME_MAX_LENGTH:
        raise ReviewsError(f"A token's name has at most {NAME_MAX_LENGTH} characters.")
    return name


def _issue(*, user: Any, name: str, by: Any) -> IssuedToken:
    new = token_new()
    row = ApiToken.objects.create(user=user, name=name, prefix=new.prefix, digest=new.digest, created_by=by)
    return IssuedToken(row=row, token=new.token)


@transaction.atomic
def api_token_issue(*, user: Any, name: str, by: Any) -> IssuedToken:
    """A new token for `user`, issued by its owner or an admin."""
    _may_manage(by=by, owner=user)
    name = _name_clean(name)
    if not user.is_active:
        raise ReviewsError("This account is inactive: it cannot hold API tokens.")
    # Lock the owner's row so that two concurrent issues cannot both pass the cap.
    get_user_model()._default_manager.select_for_update().filter(pk=user.pk).first()
    if ApiToken.objects.filter(user=user, revoked_at__isnull=True).count() >= MAX_ACTIVE_PER_USER:
        raise ReviewsError(f"At most {MAX_ACTIVE_PER_USER} active tokens per account: revoke one first.")
    return _issue(user=user, name=name, by=by)


def _lock_active(token: ApiToken) -> ApiToken:
    row = ApiToken.objects.select_for_update().select_related("user").filter(pk=token.pk).first()
    if row is None or row.revoked_at is not None:
        raise ReviewsError(f"Token {token.prefix}… is already revoked.")
    return row


@transaction.atomic
def api_token_rotate(*, token: ApiToken, by: Any) -> IssuedToken:
    """Revoke `token` and issue its replacement (same owner and name); the old one stops at once."""
    _may_manage(by=by, owner=token.user)
    row = _lock_active(token)
    row.revoked_at, row.revoked_by = timezone.now(), by
    row.save(update_fields=["revoked_at", "revoked_by"])
    return _issue(user=row.user, name=row.name, by=by)


@transaction.atomic
def api_token_revoke(*, token: ApiToken, by: Any) -> ApiToken:
    """Revoke `token`: it authenticates no more; its row stays (prefix, who, when)."""
    _may_manage(by=by, owner=token.user)
    row = _lock_active(token)
    row.revoked_at, row.revoked_by = timezone.now(), by
    row.save(update_fields=["revoked_at", "revoked_by"])
    return row


def api_token_list(*, user: Any) -> QuerySet[ApiToken]:
    """`user`'s own tokens, newest first (active and revoked)."""
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-id")


def api_token_of_owner(*, user: Any, token_id: int) -> ApiToken | None:
    """`user`'s active token with this id, or None (another user's id is None too)."""
    return ApiToken.objects.filter(user=user, pk=token_id, revoked_at__isnull=True).select_related("user").first()


def api_token_authenticate(*, token: str) -> ApiToken | None:
    """The active token row that `token` is, with its user; None for anything else.

    One indexed lookup by prefix, then a constant-time digest comparison.
    """
    prefix = token_prefix(token)
    if prefix is None:
        return None
    row = ApiToken.objects.select_related("user").filter(prefix=prefix, revoked_at__isnull=True).first()
    if row is None:
        token_digest(token)  # the same work as a match, so timing tells nothing about prefixes
        return None
    if not digest_matches(token, row.digest):
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=row.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        ).update(last_used_at=now)
        row.last_used_at = now
    return row
