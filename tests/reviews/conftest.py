"""One world per test module: built once inside an outer transaction that is rolled back.

Each test still runs in its own savepoint (pytest-django's django_db), so what a test
writes is undone before the next; the world itself is undone when the module ends.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import transaction
from django.test import override_settings

from tests.reviews.world import World, world_build

FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: pytest.FixtureRequest) -> Iterator[World]:
    with django_db_blocker.unblock(), override_settings(PASSWORD_HASHERS=FAST_HASHERS), transaction.atomic():  # type: ignore[attr-defined]
        built = world_build()
        yield built
        transaction.set_rollback(True)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: pytest.FixtureRequest) -> None:
    settings.PASSWORD_HASHERS = FAST_HASHERS  # type: ignore[attr-defined]


@pytest.fixture
def base(db: None) -> World:
    """Users of every role, providers A and B in one cycle, two doc-review criteria; no rows."""
    return world_build(private_data=False)
