"""The next scheduled run per cluster (issue 18.5): computed as django-celery-beat's scheduler fires
the schedule's PeriodicTask, shown in the admin (cluster access page, schedule list) and on the
cycle workbench, with a query count that does not grow with clusters or schedules."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from config.access import Role
from probes.models import ProbeSchedule
from probes.selectors import next_scheduled_runs, next_scheduled_runs_by_cluster
from tests.factories import ClusterFactory
from tests.workbench.builders import access_for, grid_build, user

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 12, 1, 11, 20, 30, tzinfo=dt.UTC)


def _schedule(cluster, name: str, **timing) -> ProbeSchedule:  # type: ignore[no-untyped-def]
    schedule = ProbeSchedule.objects.create(name=name, cluster=cluster, probes=["ssh_reachable"], **timing)
    schedule.refresh_from_db()
    return schedule


def _task(schedule: ProbeSchedule, **fields) -> None:  # type: ignore[no-untyped-def]
    PeriodicTask.objects.filter(pk=schedule.periodic_task_id).update(**fields)


def test_an_interval_counts_from_the_last_fire_or_from_the_change_that_created_it() -> None:
    cluster = ClusterFactory()
    every15 = IntervalSchedule.objects.create(every=15, period=IntervalSchedule.MINUTES)
    fired = _schedule(cluster, "fired", interval=every15)
    _task(fired, last_run_at=NOW - dt.timedelta(minutes=5))
    fresh = _schedule(cluster, "fresh", interval=every15)
    _task(fresh, date_changed=NOW - dt.timedelta(minutes=1))  # beat counts a never-run task from its change
    overdue = _schedule(cluster, "overdue", interval=every15)
    _task(overdue, last_run_at=NOW - dt.timedelta(hours=2))

    runs = {n.name: n for n in next_scheduled_runs(cluster=cluster, now=NOW)}
    assert runs["fired"].at == NOW + dt.timedelta(minutes=10)
    assert runs["fresh"].at == NOW + dt.timedelta(minutes=14)
    assert runs["overdue"].at == NOW  # due: beat fires it at its next tick
    assert [n.name for n in next_scheduled_runs(cluster=cluster, now=NOW)] == ["overdue", "fired", "fresh"]


def test_a_crontab_fires_at_its_next_matching_minute() -> None:
    cluster = ClusterFactory()
    six_hourly = CrontabSchedule.objects.create(minute="0", hour="*/6", timezone="UTC")
    schedule = _schedule(cluster, "cron", crontab=six_hourly)
    _task(schedule, last_run_at=dt.datetime(2026, 12, 1, 6, 0, 0, tzinfo=dt.UTC))
    (upcoming,) = next_scheduled_runs(cluster=cluster, now=NOW)
    assert upcoming.at == dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.UTC) and upcoming.why_not == ""


def test_disabled_fired_one_off_expired_and_future_start_are_honoured() -> None:
    cluster = ClusterFactory()
    hourly = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    off = _schedule(cluster, "off", interval=hourly)
    off.enabled = False
    off.save()
    once = _schedule(cluster, "once", interval=hourly)
    _task(once, one_off=True, total_run_count=1, last_run_at=NOW - dt.timedelta(minutes=3))
    once_pending = _schedule(cluster, "once-pending", interval=hourly)
    _task(once_pending, one_off=True, start_time=NOW + dt.timedelta(minutes=7))
    expired = _schedule(cluster, "expired", interval=hourly)
    _task(expired, expires=NOW - dt.timedelta(seconds=1))
    expiring = _schedule(cluster, "expiring", interval=hourly)
    _task(expiring, last_run_at=NOW, expires=NOW + dt.timedelta(minutes=30))
    started = _schedule(cluster, "started", interval=hourly)
    _task(started, start_time=NOW - dt.timedelta(minutes=1))  # never ran, started: due now

    runs = {n.name: n for n in next_scheduled_runs(cluster=cluster, now=NOW)}
    assert (runs["off"].at, runs["off"].why_not) == (None, "schedule disabled")
    assert (runs["once"].at, runs["once"].why_not) == (None, "one-off, already fired")
    assert runs["once-pending"].at == NOW + dt.timedelta(minutes=7)
    assert (runs["expired"].at, runs["expired"].why_not) == (None, "expired")
    assert (runs["expiring"].at, runs["expiring"].why_not) == (None, "expires before its next run")
    assert runs["started"].at == NOW
    # those that will not fire come last
    assert [n.name for n in next_scheduled_runs(cluster=cluster, now=NOW)][:2] == ["started", "once-pending"]


def test_the_admin_shows_the_next_run_on_the_cluster_access_page_and_the_schedule_list(admin_client) -> None:  # type: ignore[no-untyped-def]
    cluster = ClusterFactory()
    access = access_for(cluster)
    every = IntervalSchedule.objects.create(every=6, period=IntervalSchedule.HOURS)
    schedule = _schedule(cluster, "six-hourly basics", interval=every)
    _task(schedule, last_run_at=dt.datetime(2030, 1, 2, 3, 0, 0, tzinfo=dt.UTC))
    page = admin_client.get(reverse("admin:probes_clusteraccess_change", args=[access.pk])).content.decode()
    assert "Next scheduled runs" in page and "six-hourly basics: 2030-01-02T09:00:00+00:00" in page
    listing = admin_client.get(reverse("admin:probes_probeschedule_changelist")).content.decode()
    assert "Next run" in listing and "Jan. 2, 2030, 9 a.m." in listing


def test_the_schedule_list_queries_do_not_grow_with_schedules(admin_client) -> None:  # type: ignore[no-untyped-def]
    every = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    cron = CrontabSchedule.objects.create(minute="5", hour="*", timezone="UTC")
    url = reverse("admin:probes_probeschedule_changelist")

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert admin_client.get(url).status_code == 200
        return len(ctx.captured_queries)

    _schedule(ClusterFactory(), "a", interval=every)
    _schedule(ClusterFactory(), "b", crontab=cron)
    few = count()
    for i in range(8):
        _schedule(ClusterFactory(), f"more-{i}", **({"interval": every} if i % 2 else {"crontab": cron}))
    assert count() == few


def _workbench_queries(cycle, client) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(f"/admin/workbench/{cycle.slug}/")
    assert response.status_code == 200
    return len(ctx.captured_queries), response.content.decode()


def test_the_workbench_shows_each_clusters_next_run_in_a_bounded_number_of_queries() -> None:
    client = Client()
    client.force_login(user("ana", Role.ANALYST))
    every = IntervalSchedule.objects.create(every=15, period=IntervalSchedule.MINUTES)
    small = grid_build(providers=2, criteria=3, slug="s")
    large = grid_build(providers=7, criteria=3, slug="l")
    for grid in (small, large):
        for cluster in grid.clusters:
            schedule = _schedule(cluster, f"{cluster.name} basics", interval=every)
            _task(schedule, last_run_at=dt.datetime(2031, 5, 6, 7, 0, 0, tzinfo=dt.UTC))
    few, page = _workbench_queries(small.cycle, client)
    many, _ = _workbench_queries(large.cycle, client)
    assert few == many
    assert 'id="wb-next-runs"' in page and "s-cluster-1 basics</a> at 2031-05-06 07:15:00 UTC" in page
    assert "l-cluster-0" not in page  # another cycle's peer set

    by_cluster = next_scheduled_runs_by_cluster(cluster_ids=[c.pk for c in large.clusters])
    assert sorted(by_cluster) == sorted(c.pk for c in large.clusters)
