"""The workbench's review actions: assigning reviews for unreviewed criteria (conflicts of
interest respected and shown), and reviewer agreement (Krippendorff's alpha) with low-agreement flags."""

from __future__ import annotations

import pytest
from django.test import Client

from config.access import Role
from reviews import services as review_services
from reviews.models import AuditEvent, ReviewAssignment
from tests.factories import AreaFactory, CriterionFactory, CycleFactory, ProviderFactory
from tests.workbench.builders import user
from workbench import services

pytestmark = pytest.mark.django_db


def _client(u) -> Client:
    c = Client()
    c.force_login(u)
    return c


@pytest.fixture
def world(db):
    area = AreaFactory(key="docs", title="Documentation")
    doc1 = CriterionFactory(area=area, key="runbooks", title="Runbooks", position=0, evidence_kinds=["doc_review"])
    doc2 = CriterionFactory(area=area, key="sla_terms", title="SLA terms", position=1, evidence_kinds=["doc_review"])
    CriterionFactory(area=area, key="probe_only", position=2, evidence_kinds=["probe"], probe_id="ssh_reachable")
    other_version = CriterionFactory(key="elsewhere", evidence_kinds=["doc_review"])  # another rubric version
    aurora, borealis = ProviderFactory(name="Aurora", slug="aurora"), ProviderFactory(name="Borealis", slug="borealis")
    cycle = CycleFactory(rubric_version=area.rubric_version, slug="rev", providers=[aurora, borealis])
    revs = [user(f"rev-{n}", Role.REVIEWER) for n in "abc"]
    analyst = user("ana", Role.ANALYST)
    review_services.conflict_declare(reviewer=revs[0], provider=borealis, note="former employee")
    return {"cycle": cycle, "doc1": doc1, "doc2": doc2, "other": other_version, "aurora": aurora,
            "borealis": borealis, "revs": revs, "analyst": analyst}


def test_the_preview_fills_first_and_second_slots_never_with_a_conflicted_reviewer_and_says_who_was_skipped(world):
    plan = services.cycle_reviews_plan(cycle=world["cycle"], by=world["analyst"])
    assert plan.units == 4  # 2 providers x 2 doc-review criteria; the probe-only criterion is not one
    assert len(plan.assignments) == 8
    assert not ReviewAssignment.objects.exists()  # a preview writes nothing
    for provider, _criterion, _slot, reviewer in plan.assignments:
        if provider == world["borealis"]:
            assert reviewer != world["revs"][0]
    assert plan.skipped == ["rev-a for Borealis: declared a conflict of interest (former employee)"]
    units = {}
    for provider, criterion, slot, reviewer in plan.assignments:
        units.setdefault((provider.pk, criterion.pk), set()).add((slot, reviewer.pk))
    assert all({s for s, _ in u} == {"first", "second"} and len({r for _, r in u}) == 2 for u in units.values())


def test_assigning_goes_through_the_reviews_service_audited_and_leaves_filled_slots_alone(world):
    cycle, analyst = world["cycle"], world["analyst"]
    review_services.assignment_create(cycle=cycle, provider=world["aurora"], criterion=world["doc1"],
                                      reviewer=world["revs"][2], slot="first", by=analyst)
    plan = services.cycle_reviews_plan(cycle=cycle, by=analyst, assign=True)
    assert plan.assigned and len(plan.assignments) == 7 and not plan.refused
    assert ReviewAssignment.objects.filter(cycle=cycle).count() == 8
    assert not ReviewAssignment.objects.filter(provider=world["borealis"], reviewer=world["revs"][0]).exists()
    assert ReviewAssignment.objects.get(provider=world["aurora"], criterion=world["doc1"], slot="first").reviewer == \
        world["revs"][2]
    assert all(a.assigned_by == analyst for a in ReviewAssignment.objects.exclude(pk__in=[]))
    audited = AuditEvent.objects.filter(model="reviews.reviewassignment", action="+", user=analyst)
    assert audited.count() == 8
    again = services.cycle_reviews_plan(cycle=cycle, by=analyst, assign=True)
    assert again.assignments == [] and ReviewAssignment.objects.count() == 8


def test_a_slot_no_unconflicted_reviewer_can_take_is_left_empty_and_named(world):
    for r in world["revs"][1:]:
        review_services.conflict_declare(reviewer=r, provider=world["borealis"])
    plan = services.cycle_reviews_plan(cycle=world["cycle"], by=world["analyst"], provider=world["borealis"])
    assert plan.assignments == []
    assert len(plan.unfilled) == 4 and all("no reviewer left without a conflict of interest" in u
                                           for u in plan.unfilled)
    assert len(plan.skipped) == 3


def test_only_the_cycles_doc_review_criteria_may_be_chosen_and_roles_are_checked(world):
    cycle = world["cycle"]
    with pytest.raises(services.WorkbenchError, match="not a documentation-review criterion"):
        services.cycle_reviews_plan(cycle=cycle, by=world["analyst"], criterion=world["other"])
    publisher = user("pub", Role.PUBLISHER)
    assert services.cycle_reviews_plan(cycle=cycle, by=publisher).assignments  # may preview
    with pytest.raises(services.WorkbenchError, match="only analysts and admins"):
        services.cycle_reviews_plan(cycle=cycle, by=publisher, assign=True)
    with pytest.raises(services.WorkbenchError):
        services.cycle_reviews_plan(cycle=cycle, by=world["revs"][1])
    assert not ReviewAssignment.objects.exists()


def test_the_page_lists_labelled_criteria_of_the_cycles_rubric_previews_and_assigns_on_post(world):
    cycle, c = world["cycle"], _client(world["analyst"])
    page = c.get(f"/admin/workbench/{cycle.slug}/reviews/").content.decode()
    assert "Documentation · Runbooks (runbooks)" in page and "Documentation · SLA terms (sla_terms)" in page
    assert "elsewhere" not in page and "probe_only" not in page
    assert "rev-a for Borealis: declared a conflict of interest (former employee)" in page
    assert not ReviewAssignment.objects.exists()
    one = c.get(f"/admin/workbench/{cycle.slug}/reviews/", {"criterion": world["doc2"].pk,
                                                              "provider": world["borealis"].pk})
    assert one.context["plan"].units == 1
    refused = c.get(f"/admin/workbench/{cycle.slug}/reviews/", {"criterion": world["other"].pk}).content.decode()
    assert "Select a valid choice" in refused
    resp = c.post(f"/admin/workbench/{cycle.slug}/reviews/", {"criterion": world["doc2"].pk, "provider": ""},
                  follow=True)
    text = resp.content.decode()
    assert "Assigned 4 reviews" in text and "Skipped rev-a for Borealis" in text
    assert set(ReviewAssignment.objects.values_list("criterion__key", flat=True)) == {"sla_terms"}


def test_a_publisher_previews_but_may_not_assign_and_a_reviewer_is_refused(world):
    cycle = world["cycle"]
    pub = _client(user("pub", Role.PUBLISHER))
    assert pub.get(f"/admin/workbench/{cycle.slug}/reviews/").status_code == 200
    assert pub.post(f"/admin/workbench/{cycle.slug}/reviews/", {}).status_code == 403
    rev = _client(world["revs"][1])
    assert rev.get(f"/admin/workbench/{cycle.slug}/reviews/").status_code == 403
    assert rev.post(f"/admin/workbench/{cycle.slug}/reviews/", {}).status_code == 403
    assert not ReviewAssignment.objects.exists()


def _submit(a: ReviewAssignment, score: int) -> None:
    review_services.review_submit(assignment=a, by=a.reviewer, score=score,
                                  citations=[{"url": "https://docs.example/x", "quote": "q"}])


def test_the_workbench_flags_criteria_whose_reviewers_disagree(world):
    cycle, analyst = world["cycle"], world["analyst"]
    services.cycle_reviews_plan(cycle=cycle, by=analyst, assign=True)
    # runbooks: the two reviewers agree on both providers; sla_terms: they disagree by one point each way
    scores = {("aurora", "runbooks"): (1, 1), ("borealis", "runbooks"): (3, 3),
              ("aurora", "sla_terms"): (1, 2), ("borealis", "sla_terms"): (3, 2)}
    for (slug, key), (first, second) in scores.items():
        unit = ReviewAssignment.objects.filter(cycle=cycle, provider__slug=slug, criterion__key=key)
        _submit(unit.get(slot="first"), first)
        _submit(unit.get(slot="second"), second)
    resp = _client(analyst).get(f"/admin/workbench/{cycle.slug}/")
    flags = {a.criterion_key: a for a in resp.context["alpha_flags"]}
    assert set(flags) == {"sla_terms"} and flags["sla_terms"].alpha < 0.667
    page = resp.content.decode()
    assert 'id="wb-alpha-flags"' in page and "Low reviewer agreement on 1 criterion: sla_terms" in page
    agreement = {a.criterion_key: a for a in resp.context["agreement"]}
    assert agreement["runbooks"].alpha == pytest.approx(1.0) and not agreement["runbooks"].flagged
