"""A real browser reads a published report: Debian's chromium driven by Playwright.

Opens the overview on a live server, clicks a provider and checks that the tier the page
shows is the tier in the frozen snapshot; saves a screenshot under artifacts/. Needs
/usr/bin/chromium (scripts/install-browser.sh); Playwright's own browsers are never used.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls made by fixtures
# around it are ordinary blocking calls, which Django would otherwise refuse.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def chromium():
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: run scripts/install-browser.sh as root (`make test` does)")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="opgrade-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=ARGS,
            viewport={"width": 1200, "height": 900}, timeout=60_000,
        )
        try:
            yield context
        finally:
            context.close()


def test_a_reader_opens_the_overview_clicks_a_provider_and_sees_its_tier(live_server, chromium, make_published):
    report = make_published()
    expected = {p["slug"]: p for p in report.content["providers"]}
    page = chromium.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{live_server.url}/")  # the home page redirects to the latest published report
    assert page.url.endswith(f"/reports/{report.pk}/")
    assert page.get_by_test_id("content-hash").inner_text() == report.content_hash
    assert page.locator("#tier-platinum").is_visible()

    page.get_by_role("link", name="Beta Cloud").click()
    page.wait_for_url(f"**/reports/{report.pk}/providers/beta/")
    tier = page.get_by_test_id("provider-tier")
    assert tier.get_attribute("data-tier") == expected["beta"]["tier"] == "gold"
    assert tier.inner_text() == expected["beta"]["tier_label"]
    assert page.get_by_role("heading", name="What would move Beta Cloud up").is_visible()
    # The area chart is server-side SVG, loaded as an image: it must have rendered.
    width = page.locator("img[src$='/charts/areas/beta.svg']").evaluate("img => img.naturalWidth")
    assert width > 0

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-provider-beta.png"
    page.screenshot(path=str(shot), full_page=True)
    page.go_back()
    page.screenshot(path=str(ARTIFACTS / "report-overview.png"), full_page=True)
    assert shot.stat().st_size > 10_000
