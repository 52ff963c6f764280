"""The cost API is documented without schema warnings and answers fuzzed requests as its schema says
(the project's schemathesis run, tests/api/test_fuzz.py, limited to the cost operations)."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator

from tests.api.test_fuzz import _fuzz_operation, _schema, _test_connection_kept, generous_rates
from tests.factories import api_token_for
from tests.reviews.conftest import _fast_password_hashing, base, world

__all__ = ["_fast_password_hashing", "base", "generous_rates", "world"]
pytestmark = pytest.mark.django_db
COST_PATHS = ("/api/v1/cluster-prices/", "/api/v1/cycle-costs/")


def test_the_cost_api_is_documented_without_schema_warnings():
    GENERATOR_STATS.reset()
    with GENERATOR_STATS.silence():
        schema = SchemaGenerator().get_schema(request=None, public=True)
    messages = [*GENERATOR_STATS._warn_cache, *GENERATOR_STATS._error_cache]
    ours = [m for m in messages if "costs/" in m or "costs." in m]
    assert not ours, "\n".join(ours)
    assert {"/api/v1/cluster-prices/", "/api/v1/cluster-prices/{id}/", "/api/v1/cycle-costs/{cycle_slug}/"} <= set(
        schema["paths"]
    )


@pytest.mark.parametrize("role", ["admin", "provider"])
def test_the_cost_api_answers_fuzzed_requests_as_its_schema_says(world: Any, generous_rates: None, role: str):
    user = world.users[role]
    schema = _schema(user)
    headers = {"Authorization": f"Token {api_token_for(user)}"}
    failures: list[str] = []
    operations = [r.ok() for r in schema.get_all_operations()]
    ours = [op for op in operations if op.path.startswith(COST_PATHS)]
    assert ours or role == "provider", [op.path for op in operations][:20]
    with _test_connection_kept():
        for operation in ours:
            _fuzz_operation(operation, headers, failures)
    assert not failures, "\n\n".join(failures)
