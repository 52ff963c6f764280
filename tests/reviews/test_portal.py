"""The provider portal shows a provider its own data only, and takes right-of-reply comments."""

from __future__ import annotations

import pytest
from django.test import Client

from reviews.models import RightOfReply
from tests.reviews.world import B_SECRET, PASSWORD, RAW_ORG, World

pytestmark = pytest.mark.django_db


def _client(world: World, key: str = "provider") -> Client:
    client = Client()
    client.force_login(world.users[key])
    return client


def test_a_provider_user_signs_in_with_a_password_and_lands_on_their_provider(world: World):
    client = Client()
    response = client.post("/portal/login/", {"username": "prov-a", "password": PASSWORD}, follow=True)
    assert response.status_code == 200
    assert "Alpha Cloud" in response.content.decode()


def test_the_cycle_page_shows_own_findings_tier_and_draft_section_but_nothing_of_b(world: World):
    body = _client(world).get(f"/portal/cycles/{world.cycle.slug}/").content.decode()
    assert "A-OWN finding summary" in body
    assert "A-OWN draft section" in body
    assert "A-OWN reply text" in body
    assert B_SECRET not in body and "b-secret-cluster" not in body
    assert RAW_ORG not in body


def test_customers_appear_only_as_counts_and_means(world: World):
    body = _client(world).get(f"/portal/cycles/{world.cycle.slug}/").content.decode()
    assert "A-OWN feedback comment" not in body and "A-OWN interview notes" not in body
    hashes = {r.respondent_org_hash for r in world.objects["b_feedback_import"].rows.all()}
    assert not any(h in body for h in hashes)
    assert "<td>reliability</td><td>2</td>" in body  # alpha: one survey answer, one interview


def test_reviewer_identities_never_reach_the_portal(world: World):
    body = _client(world).get(f"/portal/cycles/{world.cycle.slug}/").content.decode()
    assert "rev1" not in body and "rev2" not in body


def test_a_cycle_the_provider_is_not_rated_in_is_not_found(world: World):
    assert _client(world).get(f"/portal/cycles/{world.cycle_b_only.slug}/").status_code == 404
    assert _client(world, "provider_b").get(f"/portal/cycles/{world.cycle_b_only.slug}/").status_code == 200


def test_a_provider_files_a_right_of_reply_for_its_own_provider_only(world: World):
    response = _client(world).post(
        f"/portal/cycles/{world.cycle.slug}/replies/",
        {"fact_ref": "F12", "text": "The node came back in 9 minutes, see ticket 4411.", "report_id": ""},
    )
    assert response.status_code == 302
    reply = RightOfReply.objects.get(fact_ref="F12")
    assert reply.provider == world.a and reply.user == world.users["provider"]
    # Posting into a cycle of B is refused without writing.
    response = _client(world).post(f"/portal/cycles/{world.cycle_b_only.slug}/replies/",
                                   {"fact_ref": "F1", "text": "x"})
    assert response.status_code == 404
    assert not RightOfReply.objects.filter(provider=world.a, cycle=world.cycle_b_only).exists()


def test_staff_and_anonymous_users_are_kept_out_of_the_portal(world: World):
    assert _client(world, "admin").get("/portal/").status_code == 403
    response = Client().get("/portal/")
    assert response.status_code == 302 and "/portal/login/" in response["Location"]


def test_provider_users_are_refused_by_every_other_api_by_default(world: World):
    for path in ("/api/v1/providers/", "/api/v1/clusters/", "/api/v1/cycles/", "/api/v1/assignments/"):
        assert _client(world).get(path).status_code == 403, path
    replies = _client(world).get("/api/v1/replies/").json()["results"]
    assert {r["provider"] for r in replies} == {"alpha"}


def test_a_report_section_in_the_engine_document_shape_is_rendered_as_tables(world: World):
    report = world.objects["b_report"]
    report.content = {"providers": [
        {"slug": "alpha", "name": "Alpha Cloud", "tier_label": "Gold", "composite": 0.71, "coverage": 0.9,
         "areas": [{"key": "reliability", "title": "Reliability", "score": 0.7}],
         "criteria": [{"key": "docs-replacement", "title": "Node replacement documented", "value": 3.0,
                       "unit": "", "normalised": 0.75}]},
        {"slug": "bravo", "name": "Bravo Cloud", "tier_label": "Bronze", "areas": [],
         "criteria": [{"key": "x", "title": f"{B_SECRET} criterion", "value": 1, "unit": "", "normalised": 0.1}]},
    ]}
    report.save(update_fields=["content"])
    body = _client(world).get(f"/portal/cycles/{world.cycle.slug}/").content.decode()
    assert "Draft tier: <strong>Gold</strong>" in body
    assert "<td>docs-replacement</td>" in body and "<td>Reliability</td><td>0.7</td>" in body
    assert B_SECRET not in body and "Bronze" not in body


def test_the_tier_of_the_latest_snapshot_is_shown_without_its_breakdown(world: World):
    body = _client(world).get(f"/portal/cycles/{world.cycle.slug}/").content.decode()
    assert "<td>gold</td>" in body and "<td>bronze</td>" not in body
