"""Encryption of secrets at rest (SSH keys, passwords, API tokens) with MultiFernet.

The first key in settings.OPGRADE_ENCRYPTION_KEYS encrypts; every key decrypts, so keys
rotate by prepending a new one and re-encrypting with `secret_rotate`.
"""

from __future__ import annotations

from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class SecretDecryptionError(Exception):
    """A stored secret could not be decrypted with any configured key."""


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def _current() -> MultiFernet:
    return _fernet(tuple(settings.OPGRADE_ENCRYPTION_KEYS))


def secret_encrypt(plaintext: str) -> str:
    return _current().encrypt(plaintext.encode()).decode()


def secret_decrypt(token: str) -> str:
    try:
        return _current().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretDecryptionError(
            "a stored secret matches none of OPGRADE_ENCRYPTION_KEYS (was a key removed too early?)"
        ) from None


def secret_rotate(token: str) -> str:
    """Re-encrypt `token` under the newest key."""
    return _current().rotate(token.encode()).decode()
