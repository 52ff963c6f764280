"""Integration: a scored sample cycle, a grade that reads it, recorded prices -> the grades part of
the report (sheet, index, tracking), its CSV tables and its SVG chart, frozen with the report."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import pytest
from django.core.management import call_command

from grades.services import grade_definition_import, price_observation_record
from reports import services as report_services
from tests.grades.conftest import SAMPLE_GRADE

pytestmark = pytest.mark.integration


@pytest.fixture
def scored(db):
    from ratings.sample import sample_cycle_create
    from ratings.services import cycle_scores_compute

    cycle = sample_cycle_create(slug="gr-2026q4", providers=4, seed=11)
    snapshot = cycle_scores_compute(cycle=cycle, seed=5)
    grade = grade_definition_import(text=SAMPLE_GRADE, filename="sample.yaml", freeze=True).grade
    return cycle, snapshot, grade


def _record_prices(cycle, grade) -> None:  # type: ignore[no-untyped-def]
    """Each provider's cluster, four months; rents that move with each other except the last provider's."""
    from providers.models import Cluster

    clusters = list(Cluster.objects.filter(provider__in=cycle.providers.all()).order_by("provider__slug"))
    for i, cluster in enumerate(clusters):
        for month, factor in enumerate((1.0, 1.1, 0.99, 1.089)):
            if i == len(clusters) - 1:
                factor = (1.0, 0.9, 0.99, 0.891)[month]  # moves against the others
            price = Decimal(str(round((1.0 + 0.1 * i) * factor, 4)))
            price_observation_record(grade=grade, cluster=cluster, source="list price", term="on-demand",
                                     observed_on=dt.date(2026, 8 + month, 15), price_per_gpu_hour=price)


def test_the_report_freezes_the_grade_sheet_index_and_tracking(scored, client, publisher):
    cycle, snapshot, grade = scored
    _record_prices(cycle, grade)
    draft = report_services.report_draft_create_from_snapshot(snapshot=snapshot)
    section = draft.content["grades"]
    (sheet,) = section["sheets"]
    tiers = {a.provider.slug: a.tier for a in snapshot.assignments.select_related("provider")}
    for c in sheet["clusters"]:
        verdicts = {k["requirement"]: k["verdict"] for k in c["checks"]}
        assert set(verdicts) == {"gpu_model", "orchestrator", "tier", "log_isolation", "provisioning"}
        # Each status follows from the checks: qualifies only when every one is met.
        assert (c["status"] == "qualifies") == all(v == "met" for v in verdicts.values())
        if tiers[c["provider"]] == "not_rated":
            assert verdicts["tier"] == "unknown" and c["status"] != "qualifies"
        for s in c["shortfalls"]:
            assert s["verdict"] in ("missed", "unknown") and s["evidence"]
            if s["verdict"] == "missed" and s["kind"] != "gate":
                assert s["gap_text"]
    gated = [c for c in sheet["clusters"] if any(
        k["requirement"] == "log_isolation" and k["verdict"] == "missed" for k in c["checks"])]
    assert gated, "the sample's provider 1 fails tenant log isolation"
    assert all(s["gap_text"] == "gate failed" for c in gated for s in c["shortfalls"]
               if s["requirement"] == "log_isolation")
    (series,) = section["index"]
    assert [p["period"] for p in series["points"]] == ["2026-08", "2026-09", "2026-10", "2026-11"]
    assert all(p["count"] == 4 and not p["thin"] for p in series["points"])
    tracked = {t["provider"]: t for t in section["tracking"]}
    assert len(tracked) == 4 and all(t["correlation"]["n"] == 3 for t in tracked.values())
    contrarian = sorted(tracked)[-1]
    assert tracked[contrarian]["poor_hedge"] is True
    assert sum(1 for t in tracked.values() if t["poor_hedge"] is False) == 3

    report_services.report_fact_check_open(report=draft)
    published = report_services.report_publish(report=draft, user=publisher)
    page = client.get(f"/reports/{published.pk}/").content.decode()
    assert "Compute grades" in page and "Sample grade T" in page and "poor hedge match" in page
    csv_text = client.get(f"/reports/{published.pk}/grades.csv").content.decode()
    assert csv_text.startswith("cycle,grade,cluster,provider,status,requirement")
    assert "log_isolation" in csv_text and "gate failed" in csv_text
    assert "2026-11" in client.get(f"/reports/{published.pk}/grade-index.csv").content.decode()
    assert "poor_hedge" in client.get(f"/reports/{published.pk}/grade-tracking.csv").content.decode()
    svg = client.get(f"/reports/{published.pk}/charts/grade-index/sample-t-1-on-demand.svg")
    assert svg.status_code == 200 and svg["Content-Type"].startswith("image/svg+xml")
    assert b"<script" not in svg.content and b"Reference index" in svg.content
    assert client.get(f"/reports/{published.pk}/charts/grade-index/nothing-here.svg").status_code == 404
    api = client.get(f"/api/public/reports/{published.pk}/").json()
    assert api["document"]["grades"]["sheets"][0]["grade"] == "sample-t@1"
    slug = gated[0]["provider"]
    assert "Compute grades" in client.get(f"/reports/{published.pk}/providers/{slug}/").content.decode()

    # Later observations do not change the published snapshot.
    from providers.models import Cluster

    price_observation_record(grade=grade, cluster=Cluster.objects.filter(provider__slug=slug).first(),
                             source="quote", term="on-demand", observed_on=dt.date(2026, 11, 20),
                             price_per_gpu_hour=Decimal("4.5"))
    published.refresh_from_db()
    assert published.content["grades"] == section


def test_the_sheet_command_prints_verdicts_with_reasons(scored):
    cycle, _snapshot, _grade = scored
    out = io.StringIO()
    call_command("grade", "sheet", cycle.slug, stdout=out)
    text = out.getvalue()
    assert text.startswith("sample-t@1: Sample grade T")
    assert "missed log_isolation (gate tenant_log_isolation failed): gate failed" in text
