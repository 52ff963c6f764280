"""Public renderings: pages, exports, charts, text and the public API; drafts never leak."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import xml.etree.ElementTree as ET

import pytest

from reports import services
from reports.rendering import cache, meta_cache
from tests.factories import CycleFactory
from tests.reports.conftest import build_document


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    meta_cache.clear()
    yield
    cache.clear()
    meta_cache.clear()


def _pages(report):
    pk = report.pk
    return [
        f"/reports/{pk}/", f"/reports/{pk}/providers/alpha/", f"/reports/{pk}/providers/gamma/",
        f"/reports/{pk}/providers/alpha.txt", "/methodology/opgrade/test.1/", "/reports/", "/llms.txt",
    ]


def test_the_overview_groups_providers_by_tier_with_movement(client, make_published):
    report = make_published()
    body = client.get(f"/reports/{report.pk}/").content.decode()
    assert body.index('id="tier-platinum"') < body.index('id="tier-gold"') < body.index('id="tier-not_rated"')
    assert "Alpha Cloud" in body and "new this cycle" in body
    assert 'id="tier-silver"' not in body  # empty tiers are not drawn


def test_every_page_shows_the_content_hash(client, make_published):
    report = make_published()
    for url in _pages(report):
        response = client.get(url)
        assert response.status_code == 200, url
        assert report.content_hash in response.content.decode(), url


def test_the_home_page_redirects_to_the_latest_published_report(client, make_published):
    report = make_published()
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == f"/reports/{report.pk}/"


def test_drafts_and_fact_check_reports_are_unreachable_publicly(client, cycle):
    draft = services.report_draft_create(cycle=cycle, snapshot_document=build_document(cycle))
    checking = services.report_draft_create(cycle=cycle, snapshot_document=build_document(cycle, seed=8))
    services.report_fact_check_open(report=checking)
    for report in (draft, checking):
        pk = report.pk
        for url in [
            f"/reports/{pk}/", f"/reports/{pk}/providers/alpha/", f"/reports/{pk}/providers/alpha.txt",
            f"/reports/{pk}/report.json", f"/reports/{pk}/providers.csv", f"/reports/{pk}/criteria.csv",
            f"/reports/{pk}/report.pdf", f"/reports/{pk}/charts/areas/alpha.svg", f"/api/public/reports/{pk}/",
        ]:
            assert client.get(url).status_code == 404, url
    assert client.get("/api/public/reports/").json() == {"count": 0, "results": []}
    assert draft.content_hash not in client.get("/reports/").content.decode()
    assert draft.content_hash not in client.get("/llms.txt").content.decode()
    assert client.get("/methodology/opgrade/test.1/").status_code == 404


def test_the_provider_page_shows_tier_areas_evidence_and_headroom(client, make_published):
    report = make_published()
    body = client.get(f"/reports/{report.pk}/providers/beta/").content.decode()
    assert 'data-tier="gold"' in body
    assert "What would move Beta Cloud up" in body
    # Beta failed the isolation gate: it carries the most weighted headroom (1/3 of the total).
    headroom = body[body.index("What would move"):body.index('id="evidence"')]
    assert headroom.index("Tenant isolation") < headroom.index("Node health checks")
    assert "gate cap" in client.get(f"/reports/{report.pk}/").content.decode()
    assert "6 probe findings" in body


def test_the_public_api_serves_the_frozen_document_with_etag_and_cache_control(client, make_published):
    report = make_published()
    response = client.get(f"/api/public/reports/{report.pk}/")
    assert response.status_code == 200
    payload = response.json()
    assert payload["document"] == report.content and payload["content_hash"] == report.content_hash
    assert payload["status"] == "published"
    assert report.content_hash in response["ETag"]
    assert "public" in response["Cache-Control"] and "max-age=" in response["Cache-Control"]
    again = client.get(f"/api/public/reports/{report.pk}/", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304 and not again.content
    stale = client.get(f"/api/public/reports/{report.pk}/", HTTP_IF_NONE_MATCH='"0000"')
    assert stale.status_code == 200


def test_html_pages_answer_conditional_gets_too(client, make_published):
    report = make_published()
    first = client.get(f"/reports/{report.pk}/")
    assert client.get(f"/reports/{report.pk}/", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304


def test_conditional_gets_follow_http_list_weak_and_star_forms(client, make_published):
    report = make_published()
    url = f"/reports/{report.pk}/"
    etag = client.get(url)["ETag"]
    for header in (f'"0000", {etag}', f"W/{etag}", "*"):
        answer = client.get(url, HTTP_IF_NONE_MATCH=header)
        assert answer.status_code == 304 and answer["ETag"] == etag, header
    assert client.get(url, HTTP_IF_NONE_MATCH='"0000", W/"1111"').status_code == 200


def test_the_public_api_needs_no_login_and_refuses_writes(client, make_published):
    report = make_published()
    assert client.get("/api/public/reports/").json()["results"][0]["id"] == report.pk
    assert client.post(f"/api/public/reports/{report.pk}/", {}).status_code == 405


def test_a_withdrawal_changes_the_etag_and_shows_a_banner(client, make_published, publisher):
    report = make_published()
    before = client.get(f"/api/public/reports/{report.pk}/")["ETag"]
    services.report_withdraw(report=report, notice="Probe data for Beta was invalid.", user=publisher)
    after = client.get(f"/api/public/reports/{report.pk}/", HTTP_IF_NONE_MATCH=before)
    assert after.status_code == 200 and after.json()["status"] == "withdrawn"
    body = client.get(f"/reports/{report.pk}/").content.decode()
    assert "Withdrawn" in body and "Probe data for Beta was invalid." in body


def test_a_superseded_report_links_to_its_correction(client, cycle, make_published, publisher):
    old = make_published()
    replacement = services.report_draft_create(
        cycle=cycle, snapshot_document=build_document(cycle, {"alpha": "gold", "beta": "gold", "gamma": None})
    )
    new = services.report_correct(report=old, replacement=replacement, notice="Alpha mis-keyed.", user=publisher)
    old_body = client.get(f"/reports/{old.pk}/").content.decode()
    assert "Superseded" in old_body and f"/reports/{new.pk}/" in old_body
    new_body = client.get(f"/reports/{new.pk}/").content.decode()
    assert "Correction" in new_body and "Alpha mis-keyed." in new_body
    assert client.get("/").headers["Location"] == f"/reports/{new.pk}/"


def test_movement_is_against_the_last_published_cycle(client, cycle, make_published):
    from reports.context import PublishedCycle

    first = make_published()
    later = CycleFactory(slug="2027-q1", name="2027 Q1", rubric_version=cycle.rubric_version,
                         period_start=dt.date(2027, 1, 1), period_end=dt.date(2027, 3, 31))
    history = (PublishedCycle(cycle_slug=cycle.slug, cycle_name=cycle.name, period_end="2026-12-31",
                              content_hash=first.content_hash, tiers={"alpha": "platinum", "beta": "gold", "gamma": None}),)
    doc = build_document(later, {"alpha": "gold", "beta": "platinum", "gamma": "bronze"}, history=history)
    draft = services.report_draft_create(cycle=later, snapshot_document=doc)
    moves = {p["slug"]: p["movement"]["direction"] for p in draft.content["providers"]}
    assert moves == {"alpha": "down", "beta": "up", "gamma": "new"}
    services.report_fact_check_open(report=draft)
    from django.contrib.auth.models import User

    services.report_publish(report=draft, user=User.objects.get(username="pat-publisher"))
    body = client.get(f"/reports/{draft.pk}/").content.decode()
    assert "▲" in body and "▼" in body
    svg = client.get(f"/reports/{draft.pk}/charts/history/alpha.svg").content.decode()
    assert "2026 Q4: Platinum" in svg and "2027 Q1: Gold" in svg


def test_the_csv_exports_hold_one_row_per_provider_and_per_criterion(client, make_published):
    report = make_published()
    providers = list(csv.DictReader(io.StringIO(client.get(f"/reports/{report.pk}/providers.csv").content.decode())))
    assert [r["provider"] for r in providers] == ["alpha", "beta", "gamma"]
    assert providers[1]["tier"] == "gold" and providers[1]["gate_caps"] == "isolation"
    assert providers[2]["tier"] == "not_rated"
    assert {r["report_content_hash"] for r in providers} == {report.content_hash}
    criteria = list(csv.DictReader(io.StringIO(client.get(f"/reports/{report.pk}/criteria.csv").content.decode())))
    assert len(criteria) == 9
    row = next(r for r in criteria if r["provider"] == "alpha" and r["criterion"] == "nccl-bw")
    assert row["value"] == "350.0" and row["evidence_probe"] == "3" and row["unit"] == "GB/s"


def test_the_csv_export_neutralises_spreadsheet_formulas():
    from reports.rendering import _cell

    assert _cell("=HYPERLINK(1)") == "'=HYPERLINK(1)" and _cell("Alpha") == "Alpha" and _cell(0.5) == 0.5


def test_the_json_export_is_the_document(client, make_published):
    report = make_published()
    assert json.loads(client.get(f"/reports/{report.pk}/report.json").content)["document"] == report.content


def test_the_pdf_is_a_pdf(client, make_published):
    report = make_published()
    response = client.get(f"/reports/{report.pk}/report.pdf")
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert response.content.startswith(b"%PDF-") and len(response.content) > 5000


@pytest.mark.parametrize("chart", ["areas", "history"])
def test_the_svg_charts_parse_and_describe_themselves(client, make_published, chart):
    report = make_published()
    response = client.get(f"/reports/{report.pk}/charts/{chart}/beta.svg")
    assert response["Content-Type"] == "image/svg+xml"
    root = ET.fromstring(response.content)  # noqa: S314 (our own SVG)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg" and root.get("role") == "img"
    assert "Beta Cloud" in root.find(f"{ns}title").text
    if chart == "areas":
        assert "Reliability: 0.70" in root.find(f"{ns}desc").text
        assert len(root.findall(f"{ns}rect")) == 1 + 2  # background + two measured areas


def test_the_plain_text_pages_serve_language_model_readers(client, make_published):
    report = make_published()
    text = client.get(f"/reports/{report.pk}/providers/beta.txt")
    assert text["Content-Type"].startswith("text/plain")
    body = text.content.decode()
    assert body.startswith("# Beta Cloud: Gold (2026 Q4)")
    assert "Capped by failed gates: isolation (cap Silver)" in body and report.content_hash in body
    index = client.get("/llms.txt").content.decode()
    assert index.startswith("# Opgrade\n\n> ")
    assert f"/reports/{report.pk}/providers/beta.txt" in index and "Beta Cloud" in index


def test_the_methodology_page_diffs_against_the_previous_rubric_version(client, cycle, make_published, publisher):
    make_published()
    later = CycleFactory(slug="2027-q1", name="2027 Q1", period_start=dt.date(2027, 1, 1), period_end=dt.date(2027, 3, 31))
    doc = build_document(later)
    doc["rubric"]["version"] = "test.2"
    doc["methodology"]["areas"][0]["criteria"][0]["anchor_best"] = 450.0
    doc["methodology"]["parameters"]["coverage_floor"] = 0.7
    draft = services.report_draft_create(cycle=later, snapshot_document=doc)
    services.report_fact_check_open(report=draft)
    services.report_publish(report=draft, user=publisher)
    body = client.get("/methodology/opgrade/test.2/").content.decode()
    assert "Compared with rubric opgrade test.1" in body
    assert "criterion nccl-bw.anchor_best: 400.0 -&gt; 450.0" in body
    assert "parameter coverage_floor: 0.6 -&gt; 0.7" in body
    assert "first published rubric version" in client.get("/methodology/opgrade/test.1/").content.decode()


def test_clients_that_accept_gzip_get_the_same_document_compressed(client, make_published):
    import gzip

    report = make_published()
    plain = client.get(f"/api/public/reports/{report.pk}/")
    packed = client.get(f"/api/public/reports/{report.pk}/", HTTP_ACCEPT_ENCODING="gzip, br")
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    assert gzip.decompress(packed.content) == plain.content
    assert len(packed.content) < len(plain.content) / 3
    assert packed["ETag"] != plain["ETag"]
    assert client.get(f"/api/public/reports/{report.pk}/", HTTP_ACCEPT_ENCODING="gzip",
                      HTTP_IF_NONE_MATCH=packed["ETag"]).status_code == 304
