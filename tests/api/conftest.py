"""API hardening tests use the reviews tests' world (every role, two providers, private rows)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.reviews.conftest import _fast_password_hashing, base, world

__all__ = ["_fast_password_hashing", "as_role", "base", "world"]


@pytest.fixture
def as_role(world: Any) -> Any:
    """``as_role("analyst")``: an API client signed in as that role's user."""

    def make(role: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(world.users[role])
        return client

    return make
