"""Content-Security-Policy and Permissions-Policy on every page; Swagger UI from our own static
files, never a CDN (issue 11, item 4). tests/api/test_headers_browser.py renders them in chromium."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_(db: None) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="x" * 16))
    return client


def _policy(response: Any) -> dict[str, list[str]]:
    directives = [d.strip().split() for d in response["Content-Security-Policy"].split(";") if d.strip()]
    return {d[0]: d[1:] for d in directives}


@pytest.mark.parametrize("url", ["/admin/login/", "/portal/login/", "/reports/", "/healthz", "/api/public/reports/"])
def test_every_page_carries_a_csp_and_a_permissions_policy(url: str) -> None:
    response = Client().get(url)
    assert response.status_code < 400
    policy = _policy(response)
    assert policy["default-src"] == ["'self'"]
    assert "'unsafe-inline'" not in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"]
    assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]
    assert "camera=()" in response["Permissions-Policy"] and "geolocation=()" in response["Permissions-Policy"]


def test_the_admin_pages_carry_the_policy_too(admin_client_: Client) -> None:
    for url in ("/admin/", "/admin/rubric/rubricversion/", "/api/docs/"):
        response = admin_client_.get(url)
        assert response.status_code == 200, url
        assert "script-src 'self'" in response["Content-Security-Policy"]


def test_swagger_ui_comes_from_our_static_files_not_a_cdn(admin_client_: Client) -> None:
    page = admin_client_.get("/api/docs/").content.decode()
    assert "cdn." not in page and "https://" not in page and "http://" not in page
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert "<script>" not in page  # its start-up script is a file (?script), allowed by script-src 'self'
    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    script = admin_client_.get("/api/docs/?script")
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in script.content.decode()
