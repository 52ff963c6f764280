"""Integration: a real score snapshot -> draft -> fact-check -> published -> corrected -> withdrawn.

Uses the scoring engine on the seeded sample cycle under the default rubric (ratings.sample),
so the report is built from real TierAssignments, not a hand-written document.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from reports import services
from reports.context import content_hash
from reports.models import Report

pytestmark = pytest.mark.integration


@pytest.fixture
def scored(db):
    from ratings.sample import sample_cycle_create
    from ratings.services import cycle_scores_compute

    cycle = sample_cycle_create(slug="it-2026q4", providers=4, seed=11)
    return cycle, cycle_scores_compute(cycle=cycle, seed=5)


def test_a_snapshot_becomes_a_report_that_matches_its_tier_assignments(scored):
    cycle, snapshot = scored
    draft = services.report_draft_create_from_snapshot(snapshot=snapshot)
    assert draft.status == "draft" and draft.source.score_snapshot_id == snapshot.pk
    doc = draft.content
    assert draft.content_hash == content_hash(doc)
    assert doc["engine"] == {"version": snapshot.engine_version, "seed": snapshot.seed,
                             "inputs_hash": snapshot.inputs_hash, "snapshot_hash": snapshot.content_hash}
    assert doc["rubric"]["version"] == cycle.rubric_version.version
    assert doc["rubric"]["fingerprint"] == cycle.rubric_version.fingerprint
    tiers = {a.provider.slug: a.tier for a in snapshot.assignments.select_related("provider")}
    assert {p["slug"]: p["tier"] for p in doc["providers"]} == tiers
    assert all(p["movement"]["direction"] == "new" for p in doc["providers"])
    criteria_total = cycle.rubric_version.criteria.count()
    for provider in doc["providers"]:
        assert len(provider["criteria"]) == criteria_total
        assert 0 <= provider["coverage"] <= 1
    gated = [p for p in doc["providers"] if p["gate_caps"]]
    assert gated, "the sample's provider 1 fails a gate"
    measured = [c for p in doc["providers"] for c in p["criteria"] if c["normalised"] is not None]
    assert measured and all(sum(c["evidence"].values()) > 0 for c in measured)


def test_snapshot_to_published_to_corrected_to_withdrawn(scored, publisher, client):
    from ratings.services import cycle_scores_compute

    cycle, snapshot = scored
    draft = services.report_draft_create_from_snapshot(snapshot=snapshot, user=publisher)
    services.report_fact_check_open(report=draft, user=publisher)
    published = services.report_publish(report=draft, user=publisher)
    assert client.get(f"/reports/{published.pk}/").status_code == 200

    resnapshot = cycle_scores_compute(cycle=cycle, seed=6)
    assert resnapshot.pk != snapshot.pk
    replacement = services.report_draft_create_from_snapshot(snapshot=resnapshot, user=publisher)
    corrected = services.report_correct(report=published, replacement=replacement,
                                        notice="Re-scored with a corrected bootstrap seed.", user=publisher)
    withdrawn = services.report_withdraw(report=corrected, notice="Sample data; not a real rating.", user=publisher)
    statuses = dict(Report.objects.values_list("pk", "status"))
    assert statuses == {published.pk: "superseded", withdrawn.pk: "withdrawn"}
    body = client.get(f"/reports/{published.pk}/").content.decode()
    assert "Superseded" in body and f"/reports/{corrected.pk}/" in body


def test_the_history_for_a_later_cycle_is_the_published_reports_before_it(scored, publisher):
    import datetime as dt

    from providers.models import Cycle
    from reports.snapshot import published_history

    cycle, snapshot = scored
    first = services.report_draft_create_from_snapshot(snapshot=snapshot)
    services.report_fact_check_open(report=first)
    services.report_publish(report=first, user=publisher)
    later = Cycle.objects.create(name="Later", slug="it-2027q1", rubric_version=cycle.rubric_version,
                                 period_start=dt.date(2027, 1, 1), period_end=dt.date(2027, 3, 31))
    history = published_history(later)
    assert [h.content_hash for h in history] == [first.content_hash]
    assert dict(history[0].tiers) == {
        p["slug"]: (None if p["tier"] == "not_rated" else p["tier"]) for p in first.content["providers"]
    }
    assert published_history(cycle) == ()  # a cycle's own report is not its own history


def test_the_management_command_publishes_the_latest_snapshot(scored, publisher):
    cycle, _snapshot = scored
    out = StringIO()
    call_command("report_publish", cycle.slug, "--as", publisher.username, stdout=out)
    report = Report.objects.get(cycle=cycle, status="published")
    assert f"report #{report.pk}" in out.getvalue() and report.content_hash in out.getvalue()
    again = StringIO()
    call_command("report_publish", cycle.slug, "--as", publisher.username, stdout=again)
    assert "nothing changed" in again.getvalue() and Report.objects.count() == 1


def test_the_management_command_refuses_a_non_publisher(scored, analyst):
    cycle, _snapshot = scored
    with pytest.raises(CommandError, match="only publishers"):
        call_command("report_publish", cycle.slug, "--as", analyst.username, stdout=StringIO())
    assert not Report.objects.exists()


def test_approved_overrides_are_listed_with_both_publishers_and_no_reviewers(scored, publisher, django_user_model):
    from django.contrib.auth.models import Group

    from reviews.services import override_decide, override_propose

    cycle, snapshot = scored
    second = django_user_model.objects.create_user("sam-publisher", password="not-used-1234567", is_staff=True)
    second.groups.add(Group.objects.get_or_create(name="publisher")[0])
    provider = cycle.providers.order_by("slug").first()
    criterion = cycle.rubric_version.criteria.filter(evidence_kinds__contains=["doc_review"]).first()
    override = override_propose(cycle=cycle, provider=provider, criterion=criterion, value=0.9,
                                justification="Provider published the missing runbook.",
                                evidence=[{"url": "https://example.test/runbook", "quote": "Runbook"}], by=publisher)
    override_decide(override=override, by=second, approve=True)
    draft = services.report_draft_create_from_snapshot(snapshot=snapshot)
    [entry] = draft.content["overrides"]
    assert entry["provider"] == provider.slug and entry["criterion"] == criterion.key and entry["to"] == 0.9
    assert entry["proposer"] == "pat-publisher" and entry["approver"] == "sam-publisher"
    assert "sample-reviewer" not in str(draft.content)  # doc reviewers never appear


def test_the_staff_api_builds_a_draft_from_a_snapshot(scored, publisher, client):
    cycle, snapshot = scored
    client.force_login(publisher)
    response = client.post("/api/v1/reports/", {"cycle": cycle.slug, "score_snapshot": snapshot.pk},
                           content_type="application/json")
    assert response.status_code == 201, response.content
    assert Report.objects.get(pk=response.json()["id"]).source.score_snapshot_id == snapshot.pk
    missing = client.post("/api/v1/reports/", {"cycle": cycle.slug, "score_snapshot": 999999},
                          content_type="application/json")
    assert missing.status_code == 400 and "no score snapshot" in missing.json()["detail"]
