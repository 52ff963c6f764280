"""Documentation review: conflicts block assignment, reviews are blind, gaps go to a third reviewer."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from config.access import Role
from reviews import selectors, services
from reviews.models import ReviewAssignment
from tests.reviews.world import World, _user, citation


def _pair(w: World, provider=None) -> tuple[ReviewAssignment, ReviewAssignment]:
    provider = provider or w.a
    by = w.users["analyst"]
    first = services.assignment_create(cycle=w.cycle, provider=provider, criterion=w.criterion,
                                       reviewer=w.users["reviewer"], slot="first", by=by)
    second = services.assignment_create(cycle=w.cycle, provider=provider, criterion=w.criterion,
                                        reviewer=w.users["reviewer2"], slot="second", by=by)
    return first, second


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_declared_conflict_of_interest_blocks_assignment(base: World):
    services.conflict_declare(reviewer=base.users["reviewer"], provider=base.a, note="former employee")
    with pytest.raises(services.ConflictOfInterestError, match="conflict of interest with alpha"):
        services.assignment_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                   reviewer=base.users["reviewer"], slot="first", by=base.users["analyst"])
    assert not ReviewAssignment.objects.exists()
    # ...but not for another provider.
    services.assignment_create(cycle=base.cycle, provider=base.b, criterion=base.criterion,
                               reviewer=base.users["reviewer"], slot="first", by=base.users["analyst"])


def test_the_api_refuses_a_conflicted_assignment_with_a_clear_error(base: World):
    _api(base.users["reviewer"]).post("/api/v1/conflicts/", {"provider": "alpha", "note": "shares"}, format="json")
    response = _api(base.users["analyst"]).post("/api/v1/assignments/", {
        "cycle": base.cycle.slug, "provider": "alpha", "criterion": base.criterion.key, "reviewer": "rev1",
        "slot": "first",
    }, format="json")
    assert response.status_code == 400
    assert "conflict of interest" in response.json()["detail"]
    assert not ReviewAssignment.objects.exists()


def test_only_analysts_assign_and_only_reviewers_are_assigned(base: World):
    with pytest.raises(services.RoleRefused):
        services.assignment_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                   reviewer=base.users["reviewer"], slot="first", by=base.users["publisher"])
    with pytest.raises(services.ReviewsError, match="not a reviewer"):
        services.assignment_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                   reviewer=base.users["publisher"], slot="first", by=base.users["analyst"])


def test_a_reviewer_never_sees_the_other_score_until_both_have_submitted(base: World):
    first, second = _pair(base)
    services.review_submit(assignment=second, by=base.users["reviewer2"], score=1, citations=citation())
    # First reviewer, not yet submitted: blind, in the selector and in the API.
    assert selectors.peer_scores(assignment=first, user=base.users["reviewer"]) is None
    detail = _api(base.users["reviewer"]).get(f"/api/v1/assignments/{first.pk}/").json()
    assert detail["peer_scores"] is None
    listing = _api(base.users["reviewer"]).get("/api/v1/assignments/").json()["results"]
    assert [row["id"] for row in listing] == [first.pk]  # not the other reviewer's row
    # The second reviewer, although submitted, is still blind: the first is not in.
    assert selectors.peer_scores(assignment=second, user=base.users["reviewer2"]) is None
    assert _api(base.users["reviewer2"]).get(f"/api/v1/assignments/{first.pk}/").status_code == 404

    submitted = _api(base.users["reviewer"]).post(
        f"/api/v1/assignments/{first.pk}/submit/", {"score": 2, "citations": citation()}, format="json"
    )
    assert submitted.status_code == 200, submitted.content
    peers = _api(base.users["reviewer"]).get(f"/api/v1/assignments/{first.pk}/").json()["peer_scores"]
    assert peers == [{"slot": "second", "score": 1, "status": "submitted"}]
    assert "rev2" not in str(peers)  # scores, never the other reviewer's identity


def test_a_review_needs_a_score_from_0_to_4_and_a_citation_and_is_submitted_once(base: World):
    first, _ = _pair(base)
    reviewer = base.users["reviewer"]
    with pytest.raises(services.ReviewsError, match="0 to 4"):
        services.review_submit(assignment=first, by=reviewer, score=5, citations=citation())
    with pytest.raises(services.ReviewsError, match="citation"):
        services.review_submit(assignment=first, by=reviewer, score=3, citations=[])
    with pytest.raises(services.ReviewsError, match="http"):
        services.review_submit(assignment=first, by=reviewer, score=3, citations=[{"url": "ftp://x", "quote": "q"}])
    with pytest.raises(services.RoleRefused):
        services.review_submit(assignment=first, by=base.users["reviewer2"], score=3, citations=citation())
    services.review_submit(assignment=first, by=reviewer, score=3, citations=citation())
    with pytest.raises(services.ReviewsError, match="already submitted"):
        services.review_submit(assignment=first, by=reviewer, score=1, citations=citation())
    first.refresh_from_db()
    assert first.score == 3


def test_a_gap_of_two_points_assigns_a_third_reviewer_without_a_conflict(base: World):
    services.conflict_declare(reviewer=base.users["reviewer3"], provider=base.a)
    spare = _user("rev4", Role.REVIEWER)  # a fourth reviewer, with no conflict
    first, second = _pair(base)
    services.review_submit(assignment=first, by=base.users["reviewer"], score=0, citations=citation())
    result = services.review_submit(assignment=second, by=base.users["reviewer2"], score=2, citations=citation())
    assert result.third_assignment is not None
    assert result.third_assignment.slot == "third"
    assert result.third_assignment.reviewer == spare  # rev3 declared a conflict with alpha


def test_a_gap_below_two_points_needs_no_third_reviewer(base: World):
    first, second = _pair(base)
    services.review_submit(assignment=first, by=base.users["reviewer"], score=2, citations=citation())
    result = services.review_submit(assignment=second, by=base.users["reviewer2"], score=3, citations=citation())
    assert result.third_assignment is None and not result.needs_third_reviewer
    rec = services.reconciliation_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                         by=base.users["analyst"])
    assert rec.value == 2.5 and rec.method == "mean"
    assert set(rec.reviews.all()) == {first, second}


def test_the_reconciled_value_after_a_third_review_is_the_median_and_keeps_its_links(base: World):
    first, second = _pair(base)
    services.review_submit(assignment=first, by=base.users["reviewer"], score=0, citations=citation())
    with pytest.raises(services.ReviewsError, match="both the first and second"):
        services.reconciliation_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                       by=base.users["analyst"])
    third = services.review_submit(
        assignment=second, by=base.users["reviewer2"], score=3, citations=citation()
    ).third_assignment
    assert third is not None and third.reviewer == base.users["reviewer3"]
    with pytest.raises(services.ReviewsError, match="third reviewer"):
        services.reconciliation_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                       by=base.users["analyst"])
    services.review_submit(assignment=third, by=base.users["reviewer3"], score=2, citations=citation())
    rec = services.reconciliation_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                         by=base.users["analyst"])
    assert (rec.value, rec.method) == (2.0, "median")
    assert sorted(r.score for r in rec.reviews.all()) == [0, 2, 3]


def test_the_database_refuses_a_score_outside_0_to_4(base: World):
    first, _ = _pair(base)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewAssignment.objects.filter(pk=first.pk).update(score=7)


def test_alpha_per_criterion_uses_first_and_second_reviews(base: World):
    for provider, (s1, s2) in ((base.a, (0, 0)), (base.b, (2, 2))):
        first, second = _pair(base, provider)
        services.review_submit(assignment=first, by=base.users["reviewer"], score=s1, citations=citation())
        services.review_submit(assignment=second, by=base.users["reviewer2"], score=s2, citations=citation())
    response = _api(base.users["analyst"]).get(f"/api/v1/agreement/{base.cycle.slug}/")
    assert response.status_code == 200
    by_key = {row["criterion_key"]: row for row in response.json()}
    assert by_key[base.criterion.key]["alpha"] == pytest.approx(1.0)
    assert by_key[base.criterion.key]["flagged"] is False
    assert by_key[base.criterion2.key]["flagged"] is True  # nobody reviewed it


def test_a_submitted_review_is_written_as_doc_review_evidence(base: World):
    first, _ = _pair(base)
    services.review_submit(assignment=first, by=base.users["reviewer"], score=3, citations=citation(), notes="ok")
    first.refresh_from_db()
    doc = first.doc_review
    assert doc is not None and not doc.is_reconciled
    assert (doc.reviewer, doc.score, doc.citations, doc.notes) == (base.users["reviewer"], 3.0, citation(), "ok")
    assert (doc.cycle, doc.provider, doc.criterion) == (base.cycle, base.a, base.criterion)


def test_the_reconciled_value_is_a_reconciled_doc_review_linked_to_the_raw_ones(base: World):
    first, second = _pair(base)
    services.review_submit(assignment=first, by=base.users["reviewer"], score=2, citations=citation("one"))
    services.review_submit(assignment=second, by=base.users["reviewer2"], score=3, citations=citation("two"))
    rec = services.reconciliation_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                         by=base.users["analyst"])
    first.refresh_from_db()
    second.refresh_from_db()
    assert set(rec.doc_reviews.all()) == {first.doc_review, second.doc_review}
    assert rec.doc_review.is_reconciled and rec.doc_review.score == 2.5
    assert {c["quote"] for c in rec.doc_review.citations} == {"one", "two"}
    # Reconciling again (by hand) updates the same reconciled row.
    again = services.reconciliation_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                           by=base.users["analyst"], value=3.0, note="second look at the docs")
    assert again.doc_review_id == rec.doc_review_id
    again.doc_review.refresh_from_db()
    assert again.doc_review.score == 3.0 and again.method == "manual"
