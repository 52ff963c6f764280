"""No role ever sees Django's debug page (issue 24, item 6).

The demo and production run with DEBUG off; so do these tests (pytest-django), and every response
of the access matrix (test_access_matrix.leaks, used by both matrix modules) is checked not to be
one of Django's technical pages. Here: a request that raises, for every role, on a page, in the
portal and in the API, gets a plain 500 (a short page, or JSON under /api/) with no traceback, no
settings and no URLconf; with DEBUG on the same request would show the debug page, which the check
recognises, so the check is not one that cannot fail.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client

from tests.access.test_access_matrix import debug_page, leaks
from tests.reviews.world import ROLES, World

RAISING = ["/matrix-boom/", "/portal/matrix-boom/", "/api/v1/matrix-boom/"]


@pytest.fixture
def raising_urls(settings: Any) -> None:
    settings.ROOT_URLCONF = "tests.access.raising_urls"


def _client(world: World, role: str) -> Client:
    client = Client(raise_request_exception=False)
    user = world.user_for(role)
    if user is not None:
        client.force_login(user)
    return client


def test_the_matrix_runs_with_debug_off_as_the_demo_and_production_do():
    assert django_settings.DEBUG is False


@pytest.mark.django_db
def test_a_request_that_raises_gives_every_role_a_plain_500(world: World, raising_urls: None):
    problems = []
    for role in ROLES:
        client = _client(world, role)
        for url in RAISING:
            response = client.get(url)
            body = response.content.decode(errors="replace")
            where = f"GET {url} as {role}"
            if response.status_code != 500:
                problems.append(f"{where}: {response.status_code}, expected 500")
            if debug_page(body) or "MATRIX-BOOM" in body or "RuntimeError" in body or "SECRET_KEY" in body:
                problems.append(f"{where}: shows the error's details: {body[:200]!r}")
            problems.extend(f"{where}: leaks {leak}" for leak in leaks(world, role, body))
            if url.startswith("/api/"):
                if response["Content-Type"] != "application/json" or set(response.json()) != {"detail"}:
                    problems.append(f"{where}: not a JSON error: {body[:200]!r}")
            elif "Server Error (500)" not in body or len(body) > 2000:
                problems.append(f"{where}: not the plain error page: {body[:200]!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.django_db
def test_an_unknown_page_and_a_csrf_failure_show_no_debug_page_either(world: World):
    for role in ROLES:
        client = _client(world, role)
        assert not debug_page(client.get("/no-such-page/").content.decode())
        strict = Client(enforce_csrf_checks=True, raise_request_exception=False)
        if world.user_for(role) is not None:
            strict.force_login(world.user_for(role))
        refused = strict.post("/admin/logout/", {})
        assert refused.status_code == 403
        assert not debug_page(refused.content.decode())


@pytest.mark.django_db
def test_with_debug_on_the_same_requests_would_show_the_debug_page(world: World, raising_urls: None, settings: Any):
    """The check recognises Django's technical pages (500 HTML and text, 404, CSRF help)."""
    settings.DEBUG = True
    client = _client(world, "admin")
    assert debug_page(client.get("/matrix-boom/").content.decode())
    assert debug_page(client.get("/matrix-boom/", headers={"Accept": "text/plain"}).content.decode())
    assert debug_page(client.get("/no-such-page/").content.decode())
    strict = Client(enforce_csrf_checks=True, raise_request_exception=False)
    assert debug_page(strict.post("/admin/login/", {}).content.decode())
