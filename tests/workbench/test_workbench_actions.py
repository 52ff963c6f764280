"""Actions of the cycle workbench: run missing probes, preview and compute tiers, draft and preview the report."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from config.access import Role
from probes.models import ProbeRun
from ratings.models import ScoreSnapshot
from reports.models import Report
from tests.factories import AreaFactory, ClusterFactory, CriterionFactory, CycleFactory, ProviderFactory
from tests.workbench.builders import access_for, finding, run, user
from workbench import services

pytestmark = pytest.mark.django_db

GENTLE, GENTLE2, DISRUPTIVE, DISRUPTIVE2 = "ssh_reachable", "software_baseline", "node_replacement_time", \
    "failure_detection_time"


def _client(u) -> Client:
    c = Client()
    c.force_login(u)
    return c


@pytest.fixture
def probed(db):
    area = AreaFactory(key="reliability")
    for i, probe_id in enumerate((GENTLE, GENTLE2, DISRUPTIVE, DISRUPTIVE2, "no_such_probe")):
        CriterionFactory(area=area, key=f"c-{probe_id}", position=i, evidence_kinds=["probe"], probe_id=probe_id)
    ok, other = ProviderFactory(slug="ok"), ProviderFactory(slug="other")
    cycle = CycleFactory(rubric_version=area.rubric_version, slug="probed", providers=[ok, other])
    cluster = ClusterFactory(provider=ok, name="main")
    access_for(cluster)
    ClusterFactory(provider=other, name="no-access")
    return cycle, ok, cluster


def test_running_probes_starts_only_the_missing_or_failed_ones_and_queues_disruptive_ones_last(
    probed, django_capture_on_commit_callbacks
):
    cycle, ok, cluster = probed
    finding(run(cluster, cycle, GENTLE), "pass")  # done and clean: left alone
    finding(run(cluster, cycle, GENTLE2), "error")  # done with a harness error: run again
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        plan = services.cycle_probes_run(cycle=cycle, provider=ok)
    assert [r.probe_id for r in plan.started] == [GENTLE2]
    assert plan.queued_disruptive == {str(cluster): [DISRUPTIVE, DISRUPTIVE2]}
    assert len(callbacks) == 2  # the gentle run's task, then the disruptive queue's first step
    assert not ProbeRun.objects.filter(probe_id__in=[DISRUPTIVE, DISRUPTIVE2]).exists()


def test_the_whole_peer_set_skips_a_cluster_without_access_and_says_so(probed, django_capture_on_commit_callbacks):
    cycle, _, _ = probed
    with django_capture_on_commit_callbacks(execute=False):
        plan = services.cycle_probes_run(cycle=cycle)
    assert any("no-access" in why and "no access" in why for why in plan.skipped)
    assert {r.probe_id for r in plan.started} == {GENTLE, GENTLE2}


def test_a_second_click_in_the_same_minute_starts_nothing_twice(probed, django_capture_on_commit_callbacks):
    cycle, ok, _ = probed
    now = dt.datetime(2026, 11, 5, 12, 0, 10, tzinfo=dt.UTC)
    with django_capture_on_commit_callbacks(execute=False):
        first = services.cycle_probes_run(cycle=cycle, provider=ok, now=now)
        ProbeRun.objects.filter(pk__in=[r.pk for r in first.started]).update(status="error")
        again = services.cycle_probes_run(cycle=cycle, provider=ok, now=now + dt.timedelta(seconds=20))
    assert {r.pk for r in again.started} == {r.pk for r in first.started}


def test_the_disruptive_queue_waits_for_active_runs_then_starts_one_probe_at_a_time(
    probed, django_capture_on_commit_callbacks
):
    cycle, _, cluster = probed
    gentle = run(cluster, cycle, GENTLE, status="running")
    slot = dt.datetime(2026, 11, 5, 12, 0, tzinfo=dt.UTC)
    args = {"cycle_id": cycle.pk, "cluster_id": cluster.pk, "remaining": [DISRUPTIVE, DISRUPTIVE2], "slot": slot}
    with django_capture_on_commit_callbacks(execute=False):
        assert services.probe_sequence_advance(wait_ids=[gentle.pk], **args) == "waiting"
    assert not ProbeRun.objects.filter(probe_id=DISRUPTIVE).exists()
    gentle.status = "done"
    gentle.save()
    with django_capture_on_commit_callbacks(execute=False):
        assert services.probe_sequence_advance(wait_ids=[gentle.pk], **args) == f"started {DISRUPTIVE}"
    started = ProbeRun.objects.get(probe_id=DISRUPTIVE)
    assert not ProbeRun.objects.filter(probe_id=DISRUPTIVE2).exists()
    args["remaining"] = [DISRUPTIVE2]
    with django_capture_on_commit_callbacks(execute=False):
        assert services.probe_sequence_advance(wait_ids=[started.pk], **args) == "waiting"


def test_the_run_button_reports_what_it_started_and_what_it_queued(probed, django_capture_on_commit_callbacks):
    cycle, ok, _ = probed
    with django_capture_on_commit_callbacks(execute=False):
        response = _client(user("ana", Role.ANALYST)).post(
            f"/admin/workbench/{cycle.slug}/probes/", {"provider": ok.pk}, follow=True
        )
    body = response.content.decode()
    assert "Started 2 probe runs" in body and "disruptive probes run last" in body
    assert "/admin/probes/proberun/?cycle__id__exact=" in body


@pytest.fixture
def sample(db):
    from ratings.sample import sample_cycle_create

    return sample_cycle_create(slug="wb-sample", providers=4, seed=3)


def test_tiers_are_previewed_then_stored_and_the_report_drafted_and_previewed_from_the_workbench(sample):
    cycle = sample
    analyst = _client(user("ana", Role.ANALYST))
    page = analyst.get(f"/admin/workbench/{cycle.slug}/").content.decode()
    assert "Compute tiers" in page and "Draft the report" not in page
    preview = analyst.get(f"/admin/workbench/{cycle.slug}/tiers/").content.decode()
    assert 'id="tiers-preview"' in preview and "(changed)" in preview  # no snapshot yet: every tier is new
    assert not ScoreSnapshot.objects.filter(cycle=cycle).exists()
    analyst.post(f"/admin/workbench/{cycle.slug}/tiers/")
    snapshot = ScoreSnapshot.objects.get(cycle=cycle)
    again = analyst.get(f"/admin/workbench/{cycle.slug}/tiers/").content.decode()
    assert "already the latest snapshot" in again and "(changed)" not in again
    response = analyst.post(f"/admin/workbench/{cycle.slug}/report/")
    report = Report.objects.get(cycle=cycle)
    assert report.status == "draft" and report.source.score_snapshot_id == snapshot.pk
    assert response["Location"] == f"/admin/workbench/reports/{report.pk}/preview/"
    shown = analyst.get(response["Location"]).content.decode()
    assert f"Report #{report.pk}" in shown and "Draft" in shown and "Sample provider 1" in shown
    analyst.post(f"/admin/workbench/{cycle.slug}/report/")
    assert Report.objects.filter(cycle=cycle).count() == 1  # the draft of this snapshot exists already


def test_computing_tiers_is_refused_while_the_rubric_is_a_draft(probed):
    cycle, _, _ = probed
    response = _client(user("ana", Role.ANALYST)).post(f"/admin/workbench/{cycle.slug}/tiers/", follow=True)
    assert "Not ready to compute tiers" in response.content.decode()
    assert not ScoreSnapshot.objects.filter(cycle=cycle).exists()
