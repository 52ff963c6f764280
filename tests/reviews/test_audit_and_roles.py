"""Audit trail (who, when, before/after, in the admin) and the role groups."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client

from config.access import ROLE_PERMISSIONS, Role, user_provider, user_role
from reviews import services
from reviews.models import AuditEvent
from tests.reviews.world import World, citation


def test_a_rubric_change_is_recorded_with_who_when_and_before_after(base: World):
    criterion = base.criterion
    criterion._history_user = base.users["analyst"]
    criterion.weight = 2.5
    criterion.save()
    event = AuditEvent.objects.filter(model="rubric.criterion", object_id=str(criterion.pk), action="~").get()
    assert event.username == "ana"
    assert {"field": "weight", "before": "1.0", "after": "2.5"} in event.changes
    assert all(c["field"] != "title" for c in event.changes)  # only what changed


def test_overrides_and_reviews_are_audited_with_their_actor(base: World):
    override = services.override_propose(
        cycle=base.cycle, provider=base.a, criterion=base.criterion, value=0.4, justification="why",
        evidence=citation(), by=base.users["publisher"],
    )
    services.override_decide(override=override, by=base.users["publisher2"], approve=True)
    events = list(AuditEvent.objects.filter(model="ratings.scoreoverride", object_id=str(override.pk)).order_by("id"))
    assert [(e.action, e.username) for e in events] == [("+", "pub1"), ("~", "pub2")]
    assert {"field": "status", "before": "proposed", "after": "approved"} in events[1].changes


def test_hashes_and_secrets_are_redacted_in_the_audit_log(base: World):
    import datetime as dt

    services.interview_note_create(
        cycle=base.cycle, provider=base.a, area_or_criterion="reliability", respondent_org="Acme", notes="n",
        interviewed_on=dt.date(2026, 11, 1), by=base.users["analyst"],
    )
    event = AuditEvent.objects.get(model="reviews.interviewnote")
    change = next(c for c in event.changes if c["field"] == "respondent_org_hash")
    assert change["after"] == "[redacted]"


def test_the_audit_log_is_visible_in_the_admin_and_read_only(base: World):
    base.criterion.title = "Renamed criterion"
    base.criterion.save()
    client = Client()
    client.force_login(base.users["analyst"])
    listing = client.get("/admin/reviews/auditevent/")
    assert listing.status_code == 200 and "rubric.criterion" in listing.content.decode()
    event = AuditEvent.objects.filter(model="rubric.criterion").latest("id")
    page = client.get(f"/admin/reviews/auditevent/{event.pk}/change/").content.decode()
    assert "Renamed criterion" in page
    assert client.get("/admin/reviews/auditevent/add/").status_code == 403


def test_each_review_has_a_history_page_in_the_admin(base: World):
    assignment = services.assignment_create(
        cycle=base.cycle, provider=base.a, criterion=base.criterion, reviewer=base.users["reviewer"], slot="first",
        by=base.users["analyst"],
    )
    services.review_submit(assignment=assignment, by=base.users["reviewer"], score=3, citations=citation())
    client = Client()
    client.force_login(base.users["analyst"])
    page = client.get(f"/admin/reviews/reviewassignment/{assignment.pk}/history/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "rev1" in body and "ana" in body  # who submitted, who assigned


def test_every_role_group_exists_after_migrate_with_its_permissions(db):
    assert set(Group.objects.values_list("name", flat=True)) >= {r.value for r in Role}
    out = StringIO()
    call_command("roles_sync", stdout=out)
    call_command("roles_sync", stdout=out)  # idempotent
    publisher = Group.objects.get(name="publisher")
    assert publisher.permissions.filter(codename="add_scoreoverride").exists()
    assert not publisher.permissions.filter(codename="add_reviewassignment").exists()
    assert not Group.objects.get(name="provider").permissions.exists()
    assert set(ROLE_PERMISSIONS) == set(Role)


def test_a_provider_user_is_never_staff_and_belongs_to_one_provider(base: World):
    user = base.users["provider"]
    assert not user.is_staff and user_role(user) == Role.PROVIDER and user_provider(user) == base.a
    services.user_role_set(user=user, role=Role.ANALYST)
    user.refresh_from_db()
    assert user.is_staff and user_provider(user) is None
    with pytest.raises(services.ReviewsError):
        services.user_role_set(user=user, role=Role.PROVIDER)


def test_doc_review_evidence_is_audited(base: World):
    assignment = services.assignment_create(
        cycle=base.cycle, provider=base.a, criterion=base.criterion, reviewer=base.users["reviewer"], slot="first",
        by=base.users["analyst"],
    )
    services.review_submit(assignment=assignment, by=base.users["reviewer"], score=1, citations=citation())
    event = AuditEvent.objects.get(model="ratings.docreview")
    assert event.username == "rev1" and {"field": "score", "before": None, "after": "1.0"} in event.changes
