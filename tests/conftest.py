"""Project-wide pytest setup: Hypothesis profiles and shared factories' fixtures."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# "ci" runs every property test with at least 200 examples, as the scoring issue requires.
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
