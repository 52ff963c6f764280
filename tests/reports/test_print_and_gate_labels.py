"""The PDF's print page and the gate-cap labels (issue 15): the Movement cell says "new this cycle"
once, table rows do not split across pages, and a provider already below a failed gate's cap is
not labelled as capped by it."""

from __future__ import annotations

from django.template.loader import render_to_string

from reports import services
from reports.context import group_by_tier
from reports.templatetags.report_format import binding_caps
from tests.reports.conftest import build_document

CAP = {"criterion": "isolation", "cap_tier": "silver"}


def test_a_cap_labels_a_provider_at_or_above_it_and_not_one_already_below_it():
    assert binding_caps({"tier": "silver", "gate_caps": [CAP]}) == [CAP]
    assert binding_caps({"tier": "gold", "gate_caps": [CAP]}) == [CAP]
    assert binding_caps({"tier": "bronze", "gate_caps": [CAP]}) == []
    assert binding_caps({"tier": "not_rated", "gate_caps": [CAP]}) == []


def _published(cycle, publisher):
    doc = build_document(cycle, {"alpha": "platinum", "beta": "gold", "delta": "bronze"})
    for p in doc["providers"]:
        if p["slug"] == "delta":
            p["gate_caps"] = [CAP]
    draft = services.report_draft_create(cycle=cycle, snapshot_document=doc)
    services.report_fact_check_open(report=draft)
    return services.report_publish(report=draft, user=publisher)


def test_the_overview_labels_only_the_caps_that_hold_a_provider(cycle, publisher, client):
    report = _published(cycle, publisher)
    body = client.get(f"/reports/{report.pk}/").content.decode()
    assert body.count("gate cap: isolation") == 1  # beta (gold, capped); delta is bronze, below silver
    delta = client.get(f"/reports/{report.pk}/providers/delta/").content.decode()
    assert "caps the tier at" not in delta


def test_the_print_page_says_new_this_cycle_once_and_keeps_rows_whole(cycle, publisher):
    report = _published(cycle, publisher)
    html = render_to_string("reports/print.html", {
        "report": report, "doc": report.content, "groups": group_by_tier(report.content["providers"]),
        "css": "", "area_charts": {},
    })
    assert "new new this cycle" not in html and "new this cycle" in html
    assert "tr { break-inside: avoid;" in html and "thead { display: table-header-group; }" in html
    assert html.count("gate cap isolation") == 1
