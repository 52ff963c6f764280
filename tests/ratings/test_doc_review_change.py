"""A stored documentation review changes only through a service that records who, when and why;
a reviewer's changed score after reconciliation needs a new reconciliation (issue 14)."""

from __future__ import annotations

import pytest

from ratings.engine_types import ScoringInputError
from ratings.models import DocReview, DocReviewChangeRefused
from ratings.sample import default_rubric_get
from ratings.selectors import cycle_evidence_get
from ratings.services import doc_review_change, doc_review_record
from rubric.models import Criterion
from tests.factories import CycleFactory, ProviderFactory

pytestmark = pytest.mark.django_db
CITE = [{"url": "https://docs.example/x", "quote": "We run NHC in the prolog."}]


@pytest.fixture
def unit(django_user_model):  # type: ignore[no-untyped-def]
    rubric = default_rubric_get()
    provider = ProviderFactory(slug="doc-a")
    cycle = CycleFactory(rubric_version=rubric)
    cycle.providers.add(provider)
    criterion = Criterion.objects.filter(rubric_version=rubric, evidence_kinds__contains=["doc_review"]).first()
    users = [django_user_model.objects.create(username=name) for name in ("rev1", "rev2", "lead")]
    return cycle, provider, criterion, users


def record(unit, reviewer, score, reconciled=False):  # type: ignore[no-untyped-def]
    cycle, provider, criterion, _ = unit
    return doc_review_record(cycle=cycle, provider=provider, criterion=criterion, reviewer=reviewer, score=score,
                             citations=CITE, is_reconciled=reconciled)


def test_a_direct_save_of_a_stored_review_is_refused(unit):
    review = record(unit, unit[3][0], 3)
    review.score = 4
    with pytest.raises(DocReviewChangeRefused):
        review.save()
    assert DocReview.objects.get(pk=review.pk).score == 3


def test_a_change_through_the_service_records_who_when_and_why(unit):
    first = unit[3][0]
    review = record(unit, first, 3)
    with pytest.raises(ScoringInputError, match="reason"):
        doc_review_change(review=review, changed_by=first, reason=" ", score=4)
    doc_review_change(review=review, changed_by=first, reason="misread the runbook page", score=4)
    latest = review.history.latest()
    assert (latest.score, latest.history_user, latest.history_change_reason) == (4, first, "misread the runbook page")
    assert latest.history_date is not None


def test_a_changed_score_after_reconciliation_supersedes_it_until_a_new_one_is_recorded(unit):
    cycle, _, criterion, (first, second, lead) = unit
    review = record(unit, first, 3)
    record(unit, second, 2)
    reconciled = record(unit, lead, 3, reconciled=True)
    assert {(r.score, r.reconciled) for r in cycle_evidence_get(cycle=cycle, seed=1).doc_scores} == {
        (3.0, False), (2.0, False), (3.0, True)}
    doc_review_change(review=review, changed_by=first, reason="the page was updated before the deadline", score=1)
    reconciled.refresh_from_db()
    assert reconciled.superseded
    assert reconciled.history.latest().history_change_reason.startswith("superseded:")
    # the engine no longer sees the stale reconciled value: it scores the reviewers' median
    assert {(r.score, r.reconciled) for r in cycle_evidence_get(cycle=cycle, seed=1).doc_scores} == {
        (1.0, False), (2.0, False)}
    with pytest.raises(ScoringInputError, match="history"):
        doc_review_change(review=reconciled, changed_by=lead, reason="try to revive it", score=2)
    record(unit, lead, 1.5, reconciled=True)  # a new reconciliation is allowed and used
    assert (1.5, True) in {(r.score, r.reconciled) for r in cycle_evidence_get(cycle=cycle, seed=1).doc_scores}
    assert criterion.key in {r.criterion for r in cycle_evidence_get(cycle=cycle, seed=1).doc_scores}
