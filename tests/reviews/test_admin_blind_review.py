"""A reviewer completes a double-blind review of one criterion in the admin.

The clicks, as a reviewer (staff account in the "reviewer" group):
1. Sign in at /admin/, open "Reviews and access" > "Review assignments": the page is
   titled "My assignments" and lists only your own rows.
2. Click your assignment: the form shows the criterion and what to judge, a Score (0-4)
   select, a Citations box (one "URL | quote" per line) and Notes; the "Other reviewers
   of this criterion" box says "Hidden: blind review".
3. Pick a score, paste at least one citation, click "Save". The assignment is submitted.
4. Once both first and second reviews are in, reopening it shows the other score (never
   the other reviewer's name). A 2+ point gap assigns a third reviewer automatically.
"""

from __future__ import annotations

from django.test import Client

from reviews import services
from reviews.models import ReviewAssignment
from tests.reviews.world import World, citation


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _post_review(client: Client, assignment: ReviewAssignment, score: int) -> object:
    return client.post(f"/admin/reviews/reviewassignment/{assignment.pk}/change/", {
        "score": str(score),
        "citations_text": "https://docs.alpha.example/nodes | Failed nodes are replaced within 15 minutes.",
        "notes": "Clear, dated runbook.",
        "_save": "Save",
    })


def test_two_reviewers_complete_a_double_blind_review_in_the_admin(base: World):
    by = base.users["analyst"]
    first = services.assignment_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                       reviewer=base.users["reviewer"], slot="first", by=by)
    second = services.assignment_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                        reviewer=base.users["reviewer2"], slot="second", by=by)
    rev1, rev2 = _client(base.users["reviewer"]), _client(base.users["reviewer2"])

    listing = rev1.get("/admin/reviews/reviewassignment/").content.decode()
    assert "My assignments" in listing
    assert f"/admin/reviews/reviewassignment/{first.pk}/change/" in listing
    assert f"/admin/reviews/reviewassignment/{second.pk}/change/" not in listing
    # Another reviewer's assignment cannot be opened.
    assert rev1.get(f"/admin/reviews/reviewassignment/{second.pk}/change/").status_code == 302

    form = rev1.get(f"/admin/reviews/reviewassignment/{first.pk}/change/").content.decode()
    assert "Submit your blind review" in form and "Hidden: blind review" in form
    assert 'name="citations_text"' in form and 'name="score"' in form

    response = _post_review(rev1, first, 1)
    assert response.status_code == 302, response.content.decode()[:2000]
    first.refresh_from_db()
    assert first.status == "submitted" and first.score == 1
    assert first.citations == [{"url": "https://docs.alpha.example/nodes",
                                "quote": "Failed nodes are replaced within 15 minutes."}]
    # Still blind for the first reviewer: the second has not submitted.
    assert "Hidden: blind review" in rev1.get(f"/admin/reviews/reviewassignment/{first.pk}/change/").content.decode()
    # The second reviewer, before submitting, does not see the first score either.
    page = rev2.get(f"/admin/reviews/reviewassignment/{second.pk}/change/").content.decode()
    assert "Hidden: blind review" in page and "first reviewer: 1" not in page

    assert _post_review(rev2, second, 2).status_code == 302
    after = rev1.get(f"/admin/reviews/reviewassignment/{first.pk}/change/").content.decode()
    assert "second reviewer: 2" in after and "rev2" not in after


def test_a_submission_without_citations_is_refused_with_the_reason(base: World):
    first = services.assignment_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                       reviewer=base.users["reviewer"], slot="first", by=base.users["analyst"])
    response = _client(base.users["reviewer"]).post(
        f"/admin/reviews/reviewassignment/{first.pk}/change/",
        {"score": "3", "citations_text": "no url here", "notes": "", "_save": "Save"},
    )
    assert response.status_code == 200
    assert "write &#x27;URL | quote&#x27;" in response.content.decode()
    first.refresh_from_db()
    assert first.status == "assigned"


def test_the_admin_refuses_to_assign_a_conflicted_reviewer(base: World):
    services.conflict_declare(reviewer=base.users["reviewer"], provider=base.a, note="advisor")
    response = _client(base.users["analyst"]).post("/admin/reviews/reviewassignment/add/", {
        "cycle": base.cycle.pk, "provider": base.a.pk, "criterion": base.criterion.pk,
        "reviewer": base.users["reviewer"].pk, "slot": "first", "_save": "Save",
    })
    assert response.status_code == 200
    assert "declared a conflict of interest" in response.content.decode()
    assert not ReviewAssignment.objects.exists()
    ok = _client(base.users["analyst"]).post("/admin/reviews/reviewassignment/add/", {
        "cycle": base.cycle.pk, "provider": base.a.pk, "criterion": base.criterion.pk,
        "reviewer": base.users["reviewer2"].pk, "slot": "first", "_save": "Save",
    })
    assert ok.status_code == 302
    assert ReviewAssignment.objects.get().reviewer == base.users["reviewer2"]


def test_the_submitted_review_keeps_its_citations_visible_to_analysts(base: World):
    first = services.assignment_create(cycle=base.cycle, provider=base.a, criterion=base.criterion,
                                       reviewer=base.users["reviewer"], slot="first", by=base.users["analyst"])
    services.review_submit(assignment=first, by=base.users["reviewer"], score=4, citations=citation("Quoted."))
    page = _client(base.users["analyst"]).get(f"/admin/reviews/reviewassignment/{first.pk}/change/").content.decode()
    assert "Quoted." in page and "rev1" in page
