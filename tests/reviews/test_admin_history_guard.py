"""The admin's history pages obey the change page's rules (issue: hardening, items 1 and 2).

Reproductions from the report, each of which went through before the fix: an analyst with
view-only access "reverting" a provider membership to another provider; a reviewer reading
a peer's blind review through its history list; a reviewer reverting a peer's submitted
review and a peer's conflict-of-interest note.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from reviews.models import ConflictOfInterest, ProviderMembership, ReviewAssignment
from tests.reviews.world import World

pytestmark = pytest.mark.django_db


def _client(world: World, role: str) -> Client:
    client = Client()
    client.force_login(world.users[role])
    return client


def _history_url(obj: Any) -> str:
    opts = obj._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_history", args=[obj.pk])


def _version_url(obj: Any) -> str:
    opts = obj._meta
    record = obj.history.order_by("history_id").first()
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_simple_history", args=[obj.pk, record.history_id])


def test_an_analyst_cannot_move_a_provider_account_to_another_provider_through_a_revert(world: World):
    membership = world.objects["b_membership"]
    response = _client(world, "analyst").post(
        _version_url(membership),
        {"user": membership.user_id, "provider": world.a.pk, "_save": "Revert"},
    )
    assert response.status_code == 403
    assert ProviderMembership.objects.get(pk=membership.pk).provider_id == world.b.pk


def test_the_change_page_and_the_revert_refuse_the_same_edit(world: World):
    membership = world.objects["b_membership"]
    change = reverse("admin:reviews_providermembership_change", args=[membership.pk])
    client = _client(world, "analyst")
    assert client.post(change, {"user": membership.user_id, "provider": world.a.pk}).status_code == 403
    assert client.post(_version_url(membership), {"provider": world.a.pk}).status_code == 403


def test_no_role_can_revert_through_the_history_not_even_admin(world: World):
    membership = world.objects["b_membership"]
    response = _client(world, "admin").post(_version_url(membership), {"user": membership.user_id,
                                                                        "provider": world.a.pk, "_save": "Revert"})
    assert response.status_code == 403
    assert ProviderMembership.objects.get(pk=membership.pk).provider_id == world.b.pk


def test_a_reviewer_cannot_read_a_peers_blind_review_through_its_history(world: World):
    peer_review = world.objects["a_assignment_other"]  # rev2's submitted review; rev1 has not submitted
    client = _client(world, "reviewer")
    for url in (_history_url(peer_review), _version_url(peer_review)):
        response = client.get(url)
        assert response.status_code == 404, url
        body = response.content.decode()
        assert "A-OWN review notes" not in body and "A-OWN quote" not in body and "rev2" not in body


def test_a_reviewer_cannot_wipe_a_peers_submitted_review_through_a_revert(world: World):
    peer_review = world.objects["b_assignment_other"]
    before = ReviewAssignment.objects.values().get(pk=peer_review.pk)
    response = _client(world, "reviewer").post(
        _version_url(peer_review), {"notes": "", "score": "", "citations_text": "", "_save": "Revert"}
    )
    assert response.status_code in {403, 404}
    assert ReviewAssignment.objects.values().get(pk=peer_review.pk) == before


def test_a_reviewer_cannot_read_or_rewrite_a_peers_conflict_note(world: World):
    conflict = world.objects["b_conflict"]  # rev3's declaration
    client = _client(world, "reviewer")
    for url in (_history_url(conflict), _version_url(conflict)):
        response = client.get(url)
        assert response.status_code == 404
        assert "B-SECRET coi" not in response.content.decode()
    client.post(_version_url(conflict), {"provider": world.b.pk, "note": "rewritten", "_save": "Revert"})
    assert ConflictOfInterest.objects.get(pk=conflict.pk).note == "B-SECRET coi"


def test_a_reviewer_still_reads_the_history_of_their_own_review(world: World):
    own = world.objects["b_assignment"]  # rev1's own, submitted
    client = _client(world, "reviewer")
    assert client.get(_history_url(own)).status_code == 200
    page = client.get(_version_url(own))
    assert page.status_code == 200
    assert b"read-only" in page.content


def test_an_earlier_version_is_shown_read_only_with_no_revert_button(world: World):
    membership = world.objects["b_membership"]
    page = _client(world, "admin").get(_version_url(membership))
    assert page.status_code == 200
    body = page.content.decode()
    assert 'name="_save"' not in body and "<select" not in body and 'name="provider"' not in body
    assert world.b.name in body


def test_a_version_of_another_object_or_a_malformed_version_id_is_not_found(world: World):
    membership = world.objects["b_membership"]
    other = world.users["provider"].provider_membership
    other_version = other.history.order_by("history_id").first().history_id
    client = _client(world, "admin")
    base = reverse("admin:reviews_providermembership_history", args=[membership.pk])
    assert client.get(f"{base}{other_version}/").status_code == 404
    assert client.get(f"{base}x1/").status_code == 404
    assert client.get(f"{base}{2**70}/").status_code == 404


def test_a_reviewer_reads_a_version_of_their_own_open_review(world: World):
    """The version page of a review the reviewer has still to submit (whose change page shows the
    submit form's `citations_text`) answered 500 with AttributeError (issue 24, item 6)."""
    own_open = world.objects["a_assignment"]  # rev1's own, not submitted yet
    assert not own_open.is_submitted
    page = _client(world, "reviewer").get(_version_url(own_open))
    assert page.status_code == 200
    body = page.content.decode()
    assert "read-only" in body and 'name="_save"' not in body and "<textarea" not in body
    assert "A-OWN review notes" not in body and "rev2" not in body
