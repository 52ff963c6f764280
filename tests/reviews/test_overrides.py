"""Overrides: publishers only, justification and evidence required, four eyes to approve."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from ratings.models import ScoreOverride
from ratings.selectors import ApprovedOverride, overrides_approved_for_cycle
from reviews import services
from tests.reviews.world import World, citation


def _propose(w: World, by_key: str = "publisher", **kw) -> ScoreOverride:
    args = {"cycle": w.cycle, "provider": w.a, "criterion": w.criterion, "value": 0.25,
            "justification": "The docs page was removed after the review.", "evidence": citation()}
    args.update(kw)
    return services.override_propose(by=w.users[by_key], **args)


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_approving_your_own_override_is_refused(base: World):
    override = _propose(base)
    with pytest.raises(services.RoleRefused, match="four eyes"):
        services.override_decide(override=override, by=base.users["publisher"], approve=True)
    response = _api(base.users["publisher"]).post(f"/api/v1/overrides/{override.pk}/approve/", {}, format="json")
    assert response.status_code == 403
    override.refresh_from_db()
    assert override.status == "proposed" and override.decided_by is None


def test_a_second_publisher_approves_and_the_scoring_side_reads_it_as_plain_data(base: World):
    override = _propose(base)
    response = _api(base.users["publisher2"]).post(f"/api/v1/overrides/{override.pk}/approve/", {}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "approved"
    approved = overrides_approved_for_cycle(cycle=base.cycle)
    assert approved == [ApprovedOverride(
        criterion_key=base.criterion.key, provider_slug="alpha", value=0.25,
        justification="The docs page was removed after the review.",
        evidence=(("https://docs.example.com/reliability", "Nodes are replaced within 15 minutes."),),
        proposed_by="pub1", approved_by="pub2", approved_at=approved[0].approved_at,
    )]


def test_proposed_and_rejected_overrides_do_not_count(base: World):
    _propose(base)
    rejected = _propose(base, criterion=base.criterion2)
    with pytest.raises(services.ReviewsError, match="why"):
        services.override_decide(override=rejected, by=base.users["publisher2"], approve=False)
    services.override_decide(override=rejected, by=base.users["publisher2"], approve=False, note="evidence stale")
    assert overrides_approved_for_cycle(cycle=base.cycle) == []


def test_only_publishers_propose_and_a_justification_and_evidence_are_required(base: World):
    with pytest.raises(services.RoleRefused):
        _propose(base, by_key="analyst")
    with pytest.raises(services.RoleRefused):
        _propose(base, by_key="admin")
    with pytest.raises(services.ReviewsError, match="justification"):
        _propose(base, justification="   ")
    with pytest.raises(services.ReviewsError, match="citation"):
        _propose(base, evidence=[])
    with pytest.raises(services.ReviewsError, match="0-1"):
        _propose(base, value=1.5)
    assert not ScoreOverride.objects.exists()


def test_the_database_itself_refuses_self_approval(base: World):
    override = _propose(base)
    with pytest.raises(IntegrityError), transaction.atomic():
        ScoreOverride.objects.filter(pk=override.pk).update(
            status="approved", decided_by=base.users["publisher"], decided_at=timezone.now()
        )


def test_a_decided_override_cannot_be_decided_again(base: World):
    override = _propose(base)
    services.override_decide(override=override, by=base.users["publisher2"], approve=True)
    with pytest.raises(services.ReviewsError, match="already approved"):
        services.override_decide(override=override, by=base.users["publisher2"], approve=False, note="oops")
