"""Publishing, correcting and withdrawing through the staff API and the admin."""

from __future__ import annotations

import pytest

from reports import services
from reports.models import Report
from tests.reports.conftest import build_document


@pytest.fixture
def publisher_client(client, publisher):
    client.force_login(publisher)
    return client


def _staff_with_report_perms(django_user_model, name):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user(name, password="not-used-1234567", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="reports",
                                                        codename__in=["view_report", "add_report", "change_report"]))
    return user


def test_the_whole_lifecycle_works_through_the_api(publisher_client, cycle):
    created = publisher_client.post("/api/v1/reports/", {"cycle": cycle.slug, "document": build_document(cycle)},
                                    content_type="application/json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    assert created.json()["status"] == "draft"
    assert publisher_client.post(f"/api/v1/reports/{pk}/publish/").status_code == 409  # fact-check first: a state clash
    assert publisher_client.post(f"/api/v1/reports/{pk}/fact-check/").json()["status"] == "fact_check"
    assert publisher_client.post(f"/api/v1/reports/{pk}/publish/").json()["status"] == "published"

    replacement = publisher_client.post(
        "/api/v1/reports/",
        {"cycle": cycle.slug, "document": build_document(cycle, {"alpha": "gold", "beta": "gold", "gamma": None})},
        content_type="application/json",
    ).json()["id"]
    corrected = publisher_client.post(f"/api/v1/reports/{pk}/correct/",
                                      {"replacement": replacement, "notice": "Alpha mis-keyed."})
    assert corrected.status_code == 200, corrected.content
    assert corrected.json()["supersedes"] == pk and corrected.json()["status"] == "published"
    withdrawn = publisher_client.post(f"/api/v1/reports/{replacement}/withdraw/", {"notice": "Data invalid."})
    assert withdrawn.json()["status"] == "withdrawn"
    assert Report.objects.get(pk=pk).status == "superseded"


def test_the_api_refuses_publishing_by_a_non_publisher(client, cycle, django_user_model):
    analyst = _staff_with_report_perms(django_user_model, "ana")
    client.force_login(analyst)
    draft = services.report_fact_check_open(
        report=services.report_draft_create(cycle=cycle, snapshot_document=build_document(cycle))
    )
    response = client.post(f"/api/v1/reports/{draft.pk}/publish/")
    assert response.status_code == 403 and "only publishers" in response.json()["detail"]
    assert Report.objects.get(pk=draft.pk).status == "fact_check"


def test_the_staff_api_is_closed_to_anonymous_users(client, make_published):
    make_published()
    assert client.get("/api/v1/reports/").status_code in (401, 403)
    assert client.post("/api/v1/reports/", {}).status_code in (401, 403)


def test_the_api_refuses_a_bad_document_and_writes_nothing(publisher_client, cycle):
    response = publisher_client.post("/api/v1/reports/", {"cycle": cycle.slug, "document": {"schema": "x"}},
                                     content_type="application/json")
    assert response.status_code == 400 and "schema" in response.json()["detail"]
    assert not Report.objects.exists()


def test_the_admin_publishes_and_withdraws_through_the_services(admin_client, cycle, publisher):
    draft = services.report_draft_create(cycle=cycle, snapshot_document=build_document(cycle))
    url = "/admin/reports/report/"
    admin_client.post(url, {"action": "action_fact_check", "_selected_action": [draft.pk]})
    admin_client.post(url, {"action": "action_publish", "_selected_action": [draft.pk]})
    report = Report.objects.get(pk=draft.pk)
    assert report.status == "published"
    page = admin_client.get(f"/admin/reports/report/{report.pk}/change/").content.decode()
    assert report.content_hash in page and 'name="content"' not in page  # read-only
    redirect = admin_client.post(url, {"action": "action_withdraw", "_selected_action": [report.pk]})
    assert redirect["Location"].endswith(f"/admin/reports/report/{report.pk}/withdraw/")
    admin_client.post(redirect["Location"], {"notice": "Withdrawn for a data error."})
    assert Report.objects.get(pk=report.pk).status == "withdrawn"
    assert admin_client.get(url).status_code == 200


def test_the_admin_corrects_with_a_chosen_replacement(admin_client, cycle, make_published):
    old = make_published()
    replacement = services.report_draft_create(
        cycle=cycle, snapshot_document=build_document(cycle, {"alpha": "gold", "beta": "gold", "gamma": None})
    )
    response = admin_client.post(f"/admin/reports/report/{old.pk}/correct/",
                                 {"replacement": replacement.pk, "notice": "Alpha mis-keyed."})
    assert response.status_code == 302
    assert Report.objects.get(pk=replacement.pk).supersedes_id == old.pk


def test_the_admin_shows_refusals_and_keeps_the_report(client, cycle, django_user_model):
    analyst = _staff_with_report_perms(django_user_model, "ana")
    client.force_login(analyst)
    draft = services.report_fact_check_open(
        report=services.report_draft_create(cycle=cycle, snapshot_document=build_document(cycle))
    )
    response = client.post("/admin/reports/report/", {"action": "action_publish", "_selected_action": [draft.pk]},
                           follow=True)
    assert "only publishers" in response.content.decode()
    assert Report.objects.get(pk=draft.pk).status == "fact_check"


def test_the_admin_changelist_queries_do_not_grow_with_rows(admin_client, cycle):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get("/admin/reports/report/").status_code == 200
        return len(queries)

    services.report_draft_create(cycle=cycle, snapshot_document=build_document(cycle))
    one = count()
    for seed in range(8, 13):
        services.report_draft_create(cycle=cycle, snapshot_document=build_document(cycle, seed=seed))
    assert count() == one


def test_the_api_actions_accept_a_format_suffix(publisher_client, cycle):
    draft = services.report_draft_create(cycle=cycle, snapshot_document=build_document(cycle))
    response = publisher_client.post(f"/api/v1/reports/{draft.pk}/fact-check.json")
    assert response.status_code == 200 and response.json()["status"] == "fact_check"
