"""A bounded fuzz run of the whole API against its own OpenAPI schema (issue 11, item 11).

Schemathesis reads /api/schema/ and generates requests for every operation, as an admin and
as a provider user (token clients, so the provider's narrowed querysets and refusals are
exercised too), with a fixed seed and a bounded number of examples per operation. Any 5xx,
or a response whose status code, content type or body the schema does not describe, fails
the test with the operation, the request and what was wrong. Requests go in-process through
the WSGI application, in the test's transaction, against the reviews tests' world.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.factories import api_token_for

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("OPGRADE_FUZZ_EXAMPLES", "6"))
SEED = 20261101
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@contextmanager
def _test_connection_kept() -> Iterator[None]:
    """The WSGI handler closes the database connection when a request starts and finishes;
    the test's transaction lives on it. Django's own test client unhooks the same handler
    (and hooks it back after each of its requests, hence this wraps the fuzzing only)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def generous_rates(settings: Any) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"anon": "100000/min", "user": "100000/min",
                                                               "token": "100000/min"},
    }


def _schema(user: Any) -> Any:
    client = APIClient()
    client.force_authenticate(user)
    raw = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = get_wsgi_application()
    return schema


def _fuzz(user: Any) -> list[str]:
    schema = _schema(user)
    headers = {"Authorization": f"Token {api_token_for(user)}"}
    failures: list[str] = []
    with _test_connection_kept():
        for result in schema.get_all_operations():
            _fuzz_operation(result.ok(), headers, failures)
    return failures


def _fuzz_operation(operation: Any, headers: dict[str, str], failures: list[str]) -> None:
    @seed(SEED)
    @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=st.one_of(operation.as_strategy(GenerationMode.POSITIVE),
                          operation.as_strategy(GenerationMode.NEGATIVE)))
    def run(case: Any) -> None:
        case.call_and_validate(headers=headers, checks=CHECKS)

    try:
        run()
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis' FailureGroup is a BaseExceptionGroup
        failures.append(f"{operation.label}: {str(exc)[:1500]}")


def test_the_api_answers_an_admin_as_its_schema_says(world: Any, generous_rates: None) -> None:
    failures = _fuzz(world.users["admin"])
    assert not failures, "\n\n".join(failures)


def test_the_api_answers_a_provider_user_as_its_schema_says(world: Any, generous_rates: None) -> None:
    failures = _fuzz(world.users["provider"])
    assert not failures, "\n\n".join(failures)
