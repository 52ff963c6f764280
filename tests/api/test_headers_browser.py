"""Pages still work under the Content-Security-Policy, in a real browser (Debian's chromium).

Every CSP violation a page causes is collected from the DOM's ``securitypolicyviolation``
events and the console; the report pages, the admin (signed in through its login form) and
Swagger UI must cause none that matter (scripts), and must render.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.reports.conftest import cycle, make_published, publisher  # noqa: F401
from tests.reports.test_browser import chromium  # noqa: F401

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

COLLECT = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""


def _open(page: Any, url: str) -> list[str]:
    page.goto(url, wait_until="load")
    return page.evaluate("window.__csp")


def test_report_pages_the_admin_and_swagger_ui_render_without_script_violations(
    live_server: Any, chromium: Any, make_published: Any,  # noqa: F811
) -> None:
    report = make_published()
    get_user_model().objects.create_superuser("root", password="a long browser password 1")
    page = chromium.new_page()
    page.set_default_timeout(60_000)
    page.add_init_script(COLLECT)
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text))

    violations = _open(page, f"{live_server.url}/reports/{report.pk}/")
    assert page.get_by_test_id("content-hash").inner_text() == report.content_hash
    violations += _open(page, f"{live_server.url}/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "a long browser password 1")
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    violations += page.evaluate("window.__csp")
    violations += _open(page, f"{live_server.url}/admin/rubric/rubricversion/")
    assert page.locator("#changelist").is_visible()
    violations += _open(page, f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=60_000)  # the operations rendered
    violations += page.evaluate("window.__csp")

    scripts = [v for v in violations if v.startswith("script-src")]
    assert scripts == [], scripts
    assert not [c for c in console if "Content Security Policy" in c and "script" in c], console
