"""The reviews workflow hands its evidence to the scoring engine exactly once.

Submissions and reconciliations are written as ratings.DocReview rows (the evidence the
engine reads); approved overrides reach it through the engine's input. A review must
never reach the engine twice (once as a DocReview, once as the assignment it came from).
"""

from __future__ import annotations

import pytest

from config.access import Role
from ratings.sample import sample_cycle_create
from ratings.selectors import cycle_evidence_get
from ratings.services import cycle_scores_compute
from reviews import services
from rubric.models import Criterion
from tests.reviews.world import _user, citation

pytestmark = pytest.mark.django_db


@pytest.fixture
def handoff(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cycle = sample_cycle_create(slug="handoff", providers=3, seed=7)
    provider = cycle.providers.order_by("slug").first()
    criterion = Criterion.objects.filter(rubric_version=cycle.rubric_version, key="security_attestation").get()
    cycle.doc_reviews.filter(provider=provider, criterion=criterion).delete()  # the sample's own reviews
    users = {name: _user(name, role) for name, role in (
        ("ana", Role.ANALYST), ("r1", Role.REVIEWER), ("r2", Role.REVIEWER), ("p1", Role.PUBLISHER),
        ("p2", Role.PUBLISHER),
    )}
    return cycle, provider, criterion, users


def _review_pair(cycle, provider, criterion, users, scores=(1, 2)):
    for slot, name, score in (("first", "r1", scores[0]), ("second", "r2", scores[1])):
        assignment = services.assignment_create(cycle=cycle, provider=provider, criterion=criterion,
                                                reviewer=users[name], slot=slot, by=users["ana"])
        services.review_submit(assignment=assignment, by=users[name], score=score, citations=citation())


def test_submitted_reviews_and_a_reconciliation_reach_the_engine_once(handoff):
    cycle, provider, criterion, users = handoff
    _review_pair(cycle, provider, criterion, users)
    services.reconciliation_create(cycle=cycle, provider=provider, criterion=criterion, by=users["ana"])
    rows = [r for r in cycle_evidence_get(cycle=cycle, seed=1).doc_scores
            if r.provider == provider.slug and r.criterion == criterion.key]
    assert sorted((r.reconciled, r.score) for r in rows) == [(False, 1.0), (False, 2.0), (True, 1.5)]
    snapshot = cycle_scores_compute(cycle=cycle)
    row = snapshot.assignments.get(provider=provider)
    assert {c["key"]: c for c in row.criteria}[criterion.key]["score"] == pytest.approx(1.5 / 4)


def test_an_approved_override_replaces_the_criterion_score(handoff):
    cycle, provider, criterion, users = handoff
    override = services.override_propose(cycle=cycle, provider=provider, criterion=criterion, value=0.2,
                                         justification="Attestation lapsed in October.", evidence=citation(),
                                         by=users["p1"])
    services.override_decide(override=override, by=users["p2"], approve=True)
    snapshot = cycle_scores_compute(cycle=cycle)
    row = snapshot.assignments.get(provider=provider)
    assert {c["key"]: c for c in row.criteria}[criterion.key]["score"] == pytest.approx(0.2)
    assert f"override:{criterion.key}" in row.flags
