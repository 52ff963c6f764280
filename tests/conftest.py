"""Project-wide pytest setup: Hypothesis profiles, shared fixtures, and no silent skips (a test that
cannot run here fails naming what is missing; tests/no_silent_skips.py)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from tests.no_silent_skips import pytest_runtest_makereport  # noqa: F401 (the hook, by its name)

# "ci" runs every property test with at least 200 examples, as the scoring issue requires.
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _fresh_throttle_counters() -> None:
    """Each test starts with no API throttle counts (they live in Django's per-process cache);
    tests/api/test_throttling.py proves the throttles answer 429 at their rates."""
    from django.core.cache import cache

    cache.clear()
