"""API token format and hashing: the pure part of API tokens (no Django, no clock).

A token is ``opg_<prefix>_<secret>``: 12 random hex characters of public prefix, then 43
URL-safe characters (256 random bits) of secret. Only the prefix and the SHA-256 digest of
the whole token are stored (`reviews.models.ApiToken`); the token itself exists once, in
the answer to whoever issued it. The prefix is the lookup key (unique, indexed: one row per
request, never a scan) and what pages show to tell tokens apart.

A plain SHA-256 is enough here, with no salt or key stretching: the token is random with
256 bits of entropy, so a stolen digest cannot be guessed back (GitHub and Stripe store
their API keys the same way). The digest is compared with `hmac.compare_digest`.

Tokens issued by DRF's old ``authtoken`` app (40 hex characters) were hashed in place by
migration ``reviews 0011``; their prefix is their first 12 characters, so they keep working.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

SCHEME = "opg_"
PREFIX_HEX = 12
SECRET_BYTES = 32
LEGACY_PREFIX_LENGTH = 12
# Longest prefix either format stores (the model's column length).
PREFIX_MAX_LENGTH = len(SCHEME) + PREFIX_HEX

_CURRENT = re.compile(rf"^({SCHEME}[0-9a-f]{{{PREFIX_HEX}}})_[A-Za-z0-9_-]{{43}}$")
_LEGACY = re.compile(r"^[0-9a-f]{40}$")  # rest_framework.authtoken's binascii.hexlify(os.urandom(20))


@dataclass(frozen=True)
class NewToken:
    """A freshly made token: `token` is shown once and never stored; the rest is."""

    token: str
    prefix: str
    digest: str


def token_digest(token: str) -> str:
    """Hex SHA-256 of the whole token, as stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_new() -> NewToken:
    prefix = SCHEME + secrets.token_hex(PREFIX_HEX // 2)
    token = f"{prefix}_{secrets.token_urlsafe(SECRET_BYTES)}"
    return NewToken(token=token, prefix=prefix, digest=token_digest(token))


def token_prefix(token: str) -> str | None:
    """The lookup prefix of a well-formed token (current or legacy format); None otherwise."""
    match = _CURRENT.match(token)
    if match:
        return match.group(1)
    if _LEGACY.match(token):
        return token[:LEGACY_PREFIX_LENGTH]
    return None


def digest_matches(token: str, digest: str) -> bool:
    """True when `token` hashes to the stored `digest` (constant-time comparison)."""
    return hmac.compare_digest(token_digest(token), digest)
