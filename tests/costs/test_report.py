"""The cost section in reports: frozen through the snapshot hook, in HTML, PDF, CSV, JSON, the public
API and its own page, and the cost API; a report never changes a tier because of it."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from xml.etree import ElementTree

import pytest
from django.contrib.auth.models import Group, User

from config.access import Role
from costs.models import ClusterPrice
from reports import services
from reports.costs_section import cost_curve_svg
from tests.costs.conftest import DAY, price, samples, serving

pytestmark = pytest.mark.django_db
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def scored(db):
    """The seeded sample cycle with real tiers; two providers priced and measured, one unmeasured."""
    from ratings.sample import sample_cycle_create
    from ratings.services import cycle_scores_compute

    cycle = sample_cycle_create(slug="cost-2026q4", providers=3, seed=11)
    clusters = {c.provider.slug: c for p in cycle.providers.all() for c in p.clusters.all()}
    cheap, dear, unpriced = (clusters[f"cost-2026q4-provider-{i}"] for i in (1, 2, 3))
    for cluster, t, g in ((cheap, 120.0, 0.95), (dear, 60.0, 0.7)):
        price(cluster, cycle, "2.00")
        for delta in (0.0, 5.0, -5.0):
            serving(cluster, cycle, t + delta, g, when=DAY.replace(month=11))
        samples(cluster, cycle, usable=9, unusable=1)
    return cycle, cycle_scores_compute(cycle=cycle, seed=5), (cheap, dear, unpriced)


@pytest.fixture
def published(scored, django_user_model):
    _cycle, snapshot, clusters = scored
    publisher = django_user_model.objects.create_user("pub-costs", password="x-not-used-9876", is_staff=True)
    publisher.groups.add(Group.objects.get_or_create(name=Role.PUBLISHER.value)[0])
    draft = services.report_draft_create_from_snapshot(snapshot=snapshot, user=publisher)
    services.report_fact_check_open(report=draft, user=publisher)
    return services.report_publish(report=draft, user=User.objects.get(pk=publisher.pk)), snapshot, clusters


def test_the_hook_freezes_the_cost_section_beside_unchanged_tiers(published):
    report, snapshot, (cheap, dear, unpriced) = published
    doc = report.content
    tiers = {a.provider.slug: a.tier for a in snapshot.assignments.select_related("provider")}
    assert {p["slug"]: p["tier"] for p in doc["providers"]} == tiers  # costs never change a tier
    section = doc["costs"]
    assert section["schema"] == "opgrade.costs/1"
    order = [c["provider"] for c in section["clusters"]]
    assert order == [cheap.provider.slug, dear.provider.slug, unpriced.provider.slug]
    first, second, third = section["clusters"]
    assert first["cost_per_useful_mtok"]["point"] < second["cost_per_useful_mtok"]["point"]
    assert first["cost_per_useful_mtok"]["high"] < second["cost_per_useful_mtok"]["low"]  # intervals apart
    assert first["price"]["components"][0] == {"name": "negotiated", "per_gpu_hour": 2.0, "source": "contract 42"}
    a = first["availability"]
    assert (a["usable_samples"], a["measured_samples"]) == (9, 10)
    # the sample cycle's node_replacement_time findings are downtime: A = 9/10 x (1 - D/H)
    assert a["point"] == pytest.approx(0.9 * (1 - a["downtime_s"] / a["period_s"]), abs=1e-6)
    assert len(first["throughput"]["replicates"]) == 3
    assert third["known"] is False and third["reason"] == "no serving_goodput measurement in this cycle"
    assert "A = (U / N) x (1 - D / H)" in doc["methodology"]["text"]


def test_html_pdf_page_svg_csv_json_and_public_api_carry_the_same_figures(published, client):
    report, _, (cheap, dear, _unpriced) = published
    section = report.content["costs"]
    point = section["clusters"][0]["cost_per_useful_mtok"]["point"]
    overview = client.get(f"/reports/{report.pk}/").content.decode()
    assert "Cost of useful output" in overview and f"/reports/{report.pk}/cost-curve.svg" in overview
    page = client.get(f"/reports/{report.pk}/costs/")
    assert page.status_code == 200 and "contract 42" in page.content.decode()
    svg = client.get(f"/reports/{report.pk}/cost-curve.svg")
    assert svg["Content-Type"] == "image/svg+xml"
    root = ElementTree.fromstring(svg.content)  # noqa: S314 - our own SVG
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("data-provider")]
    assert [b.get("data-provider") for b in bars] == [cheap.provider.slug, dear.provider.slug]
    assert f"{point:.3g}" in root.find(f"{SVG}desc").text
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/{report.pk}/costs.csv").content.decode())))
    assert [r["provider"] for r in rows] == [c["provider"] for c in section["clusters"]]
    assert float(rows[0]["cost_per_useful_mtok"]) == point and rows[0]["report_content_hash"] == report.content_hash
    assert "negotiated 2.0 (contract 42)" in rows[0]["price_components"]
    assert json.loads(client.get(f"/reports/{report.pk}/report.json").content)["document"]["costs"] == section
    assert json.loads(client.get(f"/api/public/reports/{report.pk}/").content)["document"]["costs"] == section
    pdf = client.get(f"/reports/{report.pk}/report.pdf")
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")


def test_a_report_without_costs_still_renders(client, make_published_plain):
    report = make_published_plain
    assert client.get(f"/reports/{report.pk}/costs/").status_code == 200
    assert "no cost section" in client.get(f"/reports/{report.pk}/costs/").content.decode()
    rows = client.get(f"/reports/{report.pk}/costs.csv").content.decode().splitlines()
    assert len(rows) == 1 and rows[0].startswith("cycle,provider,cluster")


@pytest.fixture
def make_published_plain(db, django_user_model):
    from tests.factories import CycleFactory, ProviderFactory
    from tests.reports.conftest import build_document

    cycle = CycleFactory(providers=[ProviderFactory(slug=s) for s in ("alpha", "beta", "gamma")])
    publisher = django_user_model.objects.create_user("pub-plain", password="x-not-used-9876", is_staff=True)
    publisher.groups.add(Group.objects.get_or_create(name=Role.PUBLISHER.value)[0])
    draft = services.report_draft_create(cycle=cycle, snapshot_document=build_document(cycle))
    services.report_fact_check_open(report=draft)
    return services.report_publish(report=draft, user=User.objects.get(pk=publisher.pk))


def test_the_svg_escapes_labels_and_names_unknown_costs():
    clusters = [{"provider": "x", "provider_name": "<Evil & Co>", "cluster": "c", "gpu_count": 0,
                 "cost_per_useful_mtok": {"point": 1.0, "low": 0.5, "high": None, "level": 0.9}, "reason": ""},
                {"provider": "y", "provider_name": "Why", "cluster": "d", "gpu_count": 4,
                 "cost_per_useful_mtok": None, "reason": "no price recorded"}]
    root = ElementTree.fromstring(cost_curve_svg(clusters))  # noqa: S314 - our own SVG
    text = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "<Evil & Co>" in text and "unbounded" in text and "GPUs not stated" in text
    assert "cost unknown (no price recorded)" in text


# --- the cost API ---------------------------------------------------------------------------
def _user(django_user_model, role: Role):
    from reviews.services import user_role_set

    user = django_user_model.objects.create_user(f"{role.value}-costs", password="x-not-used-9876")
    user_role_set(user=user, role=role)
    return user


def test_an_analyst_records_a_price_through_the_api_and_bad_input_writes_nothing(scored, client, django_user_model):
    cycle, _, (cheap, dear, unpriced) = scored
    client.force_login(_user(django_user_model, Role.ANALYST))
    url = "/api/v1/cluster-prices/"
    good = {"cluster": unpriced.pk, "cycle": cycle.slug, "base": "negotiated", "base_per_gpu_hour": "3.10",
            "base_source": "order form 7", "egress_per_gpu_hour": "0.05", "egress_source": "egress page"}
    before = ClusterPrice.objects.count()
    for bad, field in (({"base_per_gpu_hour": "-1"}, "base_per_gpu_hour"), ({"base_source": ""}, "base_source"),
                       ({"egress_source": ""}, "egress_source"), ({"base_per_gpu_hour": "NaN"}, "base_per_gpu_hour"),
                       ({"capex_per_gpu": "30000"}, "discount_rate"), ({"discount_rate": "1.5", "capex_per_gpu": "1",
                                                                      "life_years": "5", "owned_source": "x"},
                                                                     "discount_rate")):
        response = client.post(url, {**good, **bad}, content_type="application/json")
        assert response.status_code == 400, (bad, response.content)
        assert field in response.json(), (bad, response.json())
    assert ClusterPrice.objects.count() == before
    response = client.post(url, good, content_type="application/json")
    assert response.status_code == 201, response.content
    row = ClusterPrice.objects.get(pk=response.json()["id"])
    assert row.base_per_gpu_hour == Decimal("3.10") and row.history.count() == 1
    assert row.history.first().history_user.username == "analyst-costs"
    response = client.patch(f"{url}{row.pk}/", {"support_per_gpu_hour": "0.2"}, content_type="application/json")
    assert response.status_code == 400 and "support_source" in response.json()
    row.refresh_from_db()
    assert row.support_per_gpu_hour == 0
    costs = client.get(f"/api/v1/cycle-costs/{cycle.slug}/").json()
    assert [c["provider"] for c in costs["clusters"]][:2] == [cheap.provider.slug, dear.provider.slug]


def test_a_publisher_reads_but_cannot_write_prices(scored, client, django_user_model):
    cycle, _, (_, _, unpriced) = scored
    client.force_login(_user(django_user_model, Role.PUBLISHER))
    assert client.get("/api/v1/cluster-prices/").status_code == 200
    response = client.post("/api/v1/cluster-prices/", {"cluster": unpriced.pk, "cycle": cycle.slug,
                                                        "base_source": "x"}, content_type="application/json")
    assert response.status_code == 403


def test_a_price_for_a_cluster_outside_the_peer_set_is_refused(scored, client, django_user_model):
    from tests.factories import ClusterFactory

    cycle, _, _ = scored
    client.force_login(_user(django_user_model, Role.ANALYST))
    stranger = ClusterFactory(list_price_per_gpu_hour=Decimal("2"))
    response = client.post("/api/v1/cluster-prices/", {"cluster": stranger.pk, "cycle": cycle.slug,
                                                        "base_source": "price page"}, content_type="application/json")
    assert response.status_code == 400 and "not in the peer set" in json.dumps(response.json())
