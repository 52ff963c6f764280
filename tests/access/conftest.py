"""The access matrix uses the reviews tests' world: one per test module, built once inside an
outer transaction that is rolled back (see tests/reviews/conftest.py)."""

from tests.reviews.conftest import _fast_password_hashing, world

__all__ = ["_fast_password_hashing", "world"]
