"""Bad input answers a JSON 4xx, writes nothing, and never shows a debug page (issue 11, items 5-11)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from reviews.models import RightOfReply
from rubric.models import Criterion

pytestmark = pytest.mark.django_db

# Every paginated list the API serves (the access matrix lists the same endpoints).
LISTS = [
    "/api/v1/rubric-versions/", "/api/v1/criteria/", "/api/v1/providers/", "/api/v1/clusters/",
    "/api/v1/cycles/", "/api/v1/score-snapshots/", "/api/v1/tier-assignments/", "/api/v1/reports/",
    "/api/v1/conflicts/", "/api/v1/assignments/", "/api/v1/reconciliations/", "/api/v1/overrides/",
    "/api/v1/feedback-imports/", "/api/v1/interview-notes/", "/api/v1/replies/", "/api/v1/audit-events/",
    "/api/v1/probe-runs/", "/api/v1/findings/", "/api/v1/tenant-accounts/",
]


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize("query", ["limit=9223372036854775808", "limit=1180591620717411303424",
                                   "offset=9223372036854775808", "limit=5&offset=99999999999999999999999"])
def test_a_huge_limit_or_offset_gives_a_page_not_a_500_on_every_list(world: Any, query: str) -> None:
    admin = _client(world.users["admin"])
    for url in LISTS:
        response = admin.get(f"{url}?{query}")
        assert response.status_code == 200, (url, response.status_code)
        assert len(response.json()["results"]) <= 500


def test_a_huge_limit_is_clamped_to_the_largest_page(world: Any) -> None:
    response = _client(world.users["admin"]).get("/api/v1/audit-events/?limit=9223372036854775808")
    assert response.status_code == 200
    assert "limit=500" in (response.json()["next"] or "limit=500")


def test_the_provider_role_gets_a_page_for_a_huge_limit_too(world: Any) -> None:
    response = _client(world.users["provider"]).get("/api/v1/replies/?limit=9223372036854775808")
    assert response.status_code == 200


@pytest.mark.parametrize("report_id", [2**63, 2**70, -1, 0])
def test_a_reply_to_an_impossible_report_id_is_a_400_and_stores_nothing(world: Any, report_id: int) -> None:
    before = RightOfReply.objects.count()
    response = _client(world.users["provider"]).post(
        "/api/v1/replies/", {"cycle": world.cycle.slug, "fact_ref": "F9", "text": "our reply", "report_id": report_id},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "report_id" in response.json()
    assert RightOfReply.objects.count() == before


def test_a_reply_to_another_cycles_report_is_refused(world: Any) -> None:
    from reports.models import Report

    other = Report.objects.create(cycle=world.cycle_b_only, status="draft", content={}, content_hash="1" * 64)
    response = _client(world.users["provider_b"]).post(
        "/api/v1/replies/", {"cycle": world.cycle.slug, "fact_ref": "F9", "text": "reply", "report_id": other.pk},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert not RightOfReply.objects.filter(fact_ref="F9").exists()


def test_a_reply_to_its_cycles_draft_report_is_stored(world: Any) -> None:
    report = world.objects["b_report"]
    response = _client(world.users["provider_b"]).post(
        "/api/v1/replies/", {"cycle": world.cycle.slug, "fact_ref": "F9", "text": "reply", "report_id": report.pk},
        format="json",
    )
    assert response.status_code == 201, response.content


def test_deeply_nested_json_is_a_400_on_any_json_endpoint(world: Any) -> None:
    body = "[" * 100_000 + "]" * 100_000
    for role, method, url in (("provider", "post", "/api/v1/replies/"), ("reviewer", "post", "/api/v1/conflicts/"),
                              ("analyst", "patch", f"/api/v1/criteria/{world.criterion.pk}/")):
        client = _client(world.users[role])
        response = getattr(client, method)(url, body, content_type="application/json")
        assert response.status_code == 400, (url, response.status_code)
        assert "deeper than" in response.json()["detail"]


def test_a_400_digit_number_in_json_is_a_400(world: Any) -> None:
    body = '{"cycle": "cycle-ab", "fact_ref": "F", "text": "t", "report_id": ' + "9" * 400 + "}"
    response = _client(world.users["provider"]).post("/api/v1/replies/", body, content_type="application/json")
    assert response.status_code == 400
    assert "longer than" in response.json()["detail"]


@pytest.mark.parametrize("change", [
    {"weight": 0}, {"anchor_best": 5.0, "anchor_worst": 5.0}, {"is_gate": True, "gate_cap_tier": ""},
    {"scale": "log", "anchor_best": -1.0, "anchor_worst": 10.0},
])
def test_a_patch_that_breaks_a_criterion_constraint_is_a_json_400(world: Any, change: dict[str, Any]) -> None:
    criterion = Criterion.objects.get(pk=world.criterion.pk)
    before = {key: getattr(criterion, key) for key in change}
    response = _client(world.users["admin"]).patch(f"/api/v1/criteria/{criterion.pk}/", change, format="json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/json")
    criterion.refresh_from_db()
    assert {key: getattr(criterion, key) for key in change} == before


@pytest.mark.parametrize("change", [{"coverage_floor": 2.0}, {"tier_floor_bronze": 0.99}])
def test_a_patch_that_breaks_a_rubric_version_constraint_is_a_json_400(world: Any, change: dict[str, Any]) -> None:
    version = world.criterion.rubric_version
    response = _client(world.users["admin"]).patch(f"/api/v1/rubric-versions/{version.pk}/", change, format="json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("text", ["nul\x00inside", "bidi \u202eevil\u202c", "isolate \u2066x\u2069"])
def test_nul_and_bidi_controls_are_refused_in_stored_text(world: Any, text: str) -> None:
    before = RightOfReply.objects.count()
    response = _client(world.users["provider"]).post(
        "/api/v1/replies/", {"cycle": world.cycle.slug, "fact_ref": "F1", "text": text}, format="json"
    )
    assert response.status_code == 400
    assert "text" in response.json()["detail"]
    assert RightOfReply.objects.count() == before


def test_right_to_left_marks_are_not_refused(world: Any) -> None:
    response = _client(world.users["provider"]).post(
        "/api/v1/replies/", {"cycle": world.cycle.slug, "fact_ref": "F1", "text": "\u05e9\u05dc\u05d5\u05dd \u200f"},
        format="json",
    )
    assert response.status_code == 201, response.content


def test_form_bodies_refuse_nul_too(world: Any) -> None:
    response = _client(world.users["provider"]).post(
        "/api/v1/replies/", {"cycle": world.cycle.slug, "fact_ref": "F1", "text": "a\x00b"}
    )
    assert response.status_code == 400


def test_an_unknown_api_url_answers_json_not_html(world: Any) -> None:
    response = _client(world.users["admin"]).get("/api/v1/no-such-thing/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert json.loads(response.content) == {"detail": "Not found."}


@pytest.mark.parametrize("debug", [True, False])
def test_refusals_before_any_view_answer_json_under_debug_too(world: Any, settings: Any, debug: bool) -> None:
    settings.DEBUG = debug
    client = _client(world.users["admin"])
    unknown = client.get("/api/v1/no-such-thing/")
    bad_host = client.get("/api/v1/providers/", HTTP_HOST="evil.example")
    too_many = _client(world.users["provider"]).post(
        "/api/v1/replies/", "&".join(f"f{i}=x" for i in range(2000)), content_type="application/x-www-form-urlencoded"
    )
    for response, code in ((unknown, 404), (bad_host, 400), (too_many, 400)):
        assert response.status_code == code
        assert response["Content-Type"].startswith("application/json"), response.content[:200]
        assert "detail" in json.loads(response.content)


def test_pages_outside_the_api_keep_their_html_error_pages(settings: Any) -> None:
    response = APIClient().get("/reports/999999/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("fields", [
    {"report_id": str(2**63)}, {"report_id": str(2**70)}, {"report_id": "-1"}, {"text": "bidi \u202e here"},
    {"fact_ref": "nul\x00"},
])
def test_the_portal_reply_form_refuses_impossible_ids_and_unsafe_text(world: Any, fields: dict[str, str]) -> None:
    from django.test import Client

    client = Client()
    client.force_login(world.users["provider"])
    before = RightOfReply.objects.count()
    response = client.post(f"/portal/cycles/{world.cycle.slug}/replies/",
                           {"fact_ref": "F77", "text": "our reply", "report_id": "", **fields})
    assert response.status_code == 302  # back to the cycle page, with the form's problem as a message
    assert RightOfReply.objects.count() == before
