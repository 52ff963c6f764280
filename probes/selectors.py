"""Reads of probe evidence for the apps above probes (ratings' evidence, the provider portal).

Other apps read findings only through these functions, never through ``probes.models``
(the import-linter contract in .importlinter keeps it that way for everything but probes).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import QuerySet
from django.utils import timezone

from probes.models import Finding, ProbeSchedule
from probes.thresholds import real_scale_value
from providers.models import Cluster, Cycle, Provider


@dataclass(frozen=True)
class CycleFinding:
    """One finding as the scoring engine's evidence gatherer reads it (no model objects)."""

    probe_id: str
    metric: str
    outcome: str
    value: float | None
    provider_slug: str
    critical: bool = False  # flagged critical: fails its gate in any replicate (issue 14)
    ref: str = ""  # "finding <id>": named by the engine when it fails a gate


def findings_for_cycle(*, cycle: Cycle) -> Iterator[CycleFinding]:
    """Every finding recorded by the cycle's probe runs, oldest first (the engine's order).

    Streamed in chunks: a cycle of a large peer set holds hundreds of thousands of findings.
    """
    rows = (
        Finding.objects.filter(run__cycle=cycle)
        .values_list(
            "probe_id", "metric", "outcome", "value", "threshold_ref", "run__cluster__provider__slug", "critical", "id"
        )
        .order_by("id")
    )
    for probe_id, metric, outcome, value, ref, provider, critical, pk in rows.iterator(chunk_size=5000):
        # a value judged on a scale row (a testbed's seconds) is restated on the anchors' real scale
        value = real_scale_value(probe_id, metric, value, ref or "")
        yield CycleFinding(probe_id, metric, outcome, value, provider, bool(critical), f"finding {pk}")


def findings_for_provider(*, provider: Provider, cycle: Cycle) -> QuerySet[Finding]:
    """The provider's own findings in a cycle (its own clusters only), for the provider portal."""
    return (
        Finding.objects.filter(run__cluster__provider=provider, run__cycle=cycle)
        .select_related("run__cluster").order_by("probe_id", "metric", "target")
    )


@dataclass(frozen=True)
class NextScheduledRun:
    """When beat will next fire one of a cluster's probe schedules (``at`` is None: it will not)."""

    schedule_id: int
    name: str
    probes: tuple[str, ...]
    cycle_id: int | None
    at: datetime | None
    why_not: str = ""  # when ``at`` is None: disabled, a one-off that fired, expired, never synced


def _next_fire(schedule: ProbeSchedule, now: datetime) -> tuple[datetime | None, str]:
    """The next time django-celery-beat's DatabaseScheduler fires ``schedule``'s PeriodicTask.

    Mirrors ``django_celery_beat.schedulers.ModelEntry``: a task that never ran counts from its
    ``date_changed`` (or is due at once from ``start_time``); a one-off that ran, an expired or a
    disabled task does not fire again. The time is beat's, so a stopped beat fires nothing.
    """
    task = schedule.periodic_task
    if not schedule.enabled:
        return None, "schedule disabled"
    if task is None:
        return None, "not synced to beat"
    if not task.enabled:
        return None, "one-off, already fired" if task.one_off and task.last_run_at else "beat task disabled"
    if task.one_off and task.total_run_count > 0:
        return None, "one-off, already fired"
    if task.expires is not None and task.expires <= now:
        return None, "expired"
    if task.last_run_at is None and task.start_time is not None:
        at = max(task.start_time, now)  # beat runs a started task that never ran at once
    else:
        last = task.last_run_at or task.date_changed or now
        sched = task.schedule  # celery's own schedule object (interval, crontab, solar, clocked), fresh
        tz = getattr(sched, "tz", None) or UTC
        sched.nowfun = lambda: now.astimezone(tz)  # judged at ``now``, not at the wall clock
        remaining = sched.remaining_estimate(last.astimezone(tz) if last.tzinfo else last)
        at = max(now + remaining, now)  # overdue: beat fires it at its next tick
        if task.start_time is not None and at < task.start_time:
            at = task.start_time
    if task.expires is not None and at >= task.expires:
        return None, "expires before its next run"
    return at, ""


def next_scheduled_run_of(*, schedule: ProbeSchedule, now: datetime | None = None) -> NextScheduledRun:
    """One schedule's next fire time (load it with ``periodic_task`` and its timing to save queries)."""
    at, why = _next_fire(schedule, now or timezone.now())
    return NextScheduledRun(schedule.pk, schedule.name, tuple(schedule.probes), schedule.cycle_id, at, why)


SCHEDULE_TIMING = ("periodic_task__interval", "periodic_task__crontab", "periodic_task__solar", "periodic_task__clocked")


def next_scheduled_runs_by_cluster(*, cluster_ids: Iterable[int], now: datetime | None = None) -> dict[int, list[NextScheduledRun]]:
    """Cluster id -> its probe schedules' next fire times, soonest first (those that will not fire last).

    One query for any number of clusters (schedules with their beat task and timing).
    """
    now = now or timezone.now()
    out: dict[int, list[NextScheduledRun]] = {}
    schedules = ProbeSchedule.objects.filter(cluster_id__in=list(cluster_ids)).select_related(*SCHEDULE_TIMING)
    for schedule in schedules:
        out.setdefault(schedule.cluster_id, []).append(next_scheduled_run_of(schedule=schedule, now=now))
    far = datetime.max.replace(tzinfo=UTC)
    for runs in out.values():
        runs.sort(key=lambda r: (r.at is None, r.at or far, r.name))
    return out


def next_scheduled_runs(*, cluster: Cluster, now: datetime | None = None) -> list[NextScheduledRun]:
    """The cluster's probe schedules with their next fire times, soonest first."""
    return next_scheduled_runs_by_cluster(cluster_ids=[cluster.pk], now=now).get(cluster.pk, [])
