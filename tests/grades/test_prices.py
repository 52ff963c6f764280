"""Price observations: analysts and admins record them (API and admin) after every check; bad input
gets a clear error and writes nothing; a period with no observations is an error, not a zero."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.test import Client

from config.access import Role
from grades.models import PriceObservation
from grades.services import PriceObservationError, price_observation_record
from tests.factories import ClusterFactory
from tests.grades.conftest import GRADES, role_user

pytestmark = pytest.mark.django_db
DAY = dt.date(2026, 11, 3)


@pytest.fixture
def h100_grade(rubric_2026_2):
    from grades.services import grade_definition_import

    path = GRADES / "h100-sxm-managed-b.yaml"
    return grade_definition_import(text=path.read_text(), filename=path.name, freeze=True).grade


@pytest.fixture
def cluster(db):
    return ClusterFactory(gpu_model="H100-SXM-80GB")


def _record(grade, cluster, **kw):  # type: ignore[no-untyped-def]
    args = {"source": "public price list", "observed_on": DAY, "term": "on-demand", "price_per_gpu_hour": "2.49"}
    args.update(kw)
    return price_observation_record(grade=grade, cluster=cluster, **args)


@pytest.mark.parametrize(("change", "message"), [
    ({"price_per_gpu_hour": "249"}, "outside the plausible band for H100-SXM-80GB"),
    ({"price_per_gpu_hour": "0.02"}, "outside the plausible band"),
    ({"term": "forever"}, "term: 'forever' is not one of"),
    ({"source": "  "}, "source: say where"),
    ({"observed_on": dt.date(2099, 1, 1)}, "in the future"),
])
def test_bad_observations_are_refused_with_the_reason_and_write_nothing(h100_grade, cluster, change, message):
    with pytest.raises(PriceObservationError, match=message):
        _record(h100_grade, cluster, **change)
    assert PriceObservation.objects.count() == 0


def test_a_duplicate_observation_names_the_row_it_duplicates(h100_grade, cluster):
    first = _record(h100_grade, cluster)
    with pytest.raises(PriceObservationError, match=rf"duplicate: .* already recorded \(#{first.pk}"):
        _record(h100_grade, cluster, price_per_gpu_hour="2.99")
    assert PriceObservation.objects.count() == 1


def test_a_cluster_of_another_gpu_model_and_a_draft_grade_are_refused(h100_grade, testbed_grade, cluster):
    with pytest.raises(PriceObservationError, match=r"grade testbed-slurm-t1@2026\.1 is for 'none'"):
        _record(testbed_grade, cluster, price_per_gpu_hour="1.0")
    from grades.services import grade_definition_clone

    draft = grade_definition_clone(source=h100_grade, version="draft-1")
    with pytest.raises(PriceObservationError, match="is a draft"):
        _record(draft, cluster)
    assert PriceObservation.objects.count() == 0


def _client(role: Role, name: str) -> Client:
    client = Client()
    client.force_login(role_user(name, role))
    return client


def test_analysts_record_through_the_api_and_publishers_only_read(h100_grade, cluster):
    body = {"grade": h100_grade.pk, "cluster": cluster.pk, "source": "quote from sales", "observed_on": "2026-11-02",
            "term": "on-demand", "price_per_gpu_hour": "2.35"}
    analyst = _client(Role.ANALYST, "ana")
    created = analyst.post("/api/v1/price-observations/", body, content_type="application/json")
    assert created.status_code == 201, created.content
    assert created.json()["recorded_by"] == "ana" and created.json()["grade_label"] == "h100-sxm-managed-b@2026.1"
    again = analyst.post("/api/v1/price-observations/", body, content_type="application/json")
    assert again.status_code == 400 and "duplicate" in again.json()["detail"]
    band = analyst.post("/api/v1/price-observations/", {**body, "price_per_gpu_hour": "235"},
                        content_type="application/json")
    assert band.status_code == 400 and "plausible band" in band.json()["detail"]
    publisher = _client(Role.PUBLISHER, "pub")
    assert publisher.post("/api/v1/price-observations/", {**body, "source": "other"},
                          content_type="application/json").status_code == 403
    assert publisher.get("/api/v1/price-observations/").json()["count"] == 1
    assert _client(Role.REVIEWER, "rev").get("/api/v1/price-observations/").status_code == 403
    assert Client().get("/api/v1/price-observations/").status_code in (401, 403)
    assert PriceObservation.objects.count() == 1


def test_the_index_of_a_period_with_no_observations_is_a_clear_error(h100_grade, cluster):
    for i, price in enumerate(("2.10", "2.50", "2.30")):
        _record(h100_grade, ClusterFactory(gpu_model="H100-SXM-80GB", name=f"c{i}"), price_per_gpu_hour=price)
    analyst = _client(Role.ANALYST, "ana")
    ok = analyst.get(f"/api/v1/grade-definitions/{h100_grade.pk}/index/?period=2026-11")
    assert ok.status_code == 200
    assert ok.json()["median"] == 2.3 and ok.json()["count"] == 3 and ok.json()["thin"] is False
    empty = analyst.get(f"/api/v1/grade-definitions/{h100_grade.pk}/index/?period=2026-10")
    assert empty.status_code == 400 and "no price observations in period 2026-10" in empty.json()["period"]
    bad = analyst.get(f"/api/v1/grade-definitions/{h100_grade.pk}/index/?period=oct")
    assert bad.status_code == 400


def test_the_admin_form_refuses_an_implausible_price_and_records_a_good_one(h100_grade, cluster):
    admin = _client(Role.ADMIN, "adm")
    form = {"grade": h100_grade.pk, "cluster": cluster.pk, "source": "invoice", "observed_on": "2026-11-01",
            "term": "12-month", "price_per_gpu_hour": "24.9"}
    refused = admin.post("/admin/grades/priceobservation/add/", form)
    assert refused.status_code == 200 and "outside the plausible band" in refused.content.decode()
    assert PriceObservation.objects.count() == 0
    saved = admin.post("/admin/grades/priceobservation/add/", {**form, "price_per_gpu_hour": "2.49"})
    assert saved.status_code == 302
    row = PriceObservation.objects.get()
    assert row.price_per_gpu_hour == Decimal("2.4900") and row.recorded_by.username == "adm"
