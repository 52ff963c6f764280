"""The demo's scheduled run (issue 18): after the demo cycle's disruptive probes have replaced nodes,
Celery beat fires a ProbeSchedule of the whole non-disruptive catalog on every demo cluster, and the
demo waits for every run to finish and counts the ``error`` findings a replaced node caused.

A schedule per cluster ("demo <cluster>: non-disruptive catalog", daily, outside any cycle so that
the cycle's scores do not move) is created or reset to fire at once; beat (``scripts/demo.sh``
starts it beside the worker) fires it, and the runs are ordinary scheduled runs: their inventory is
read from Slurm at run time, so a node the operator replaced is departed and its successor probed.
Nothing here fires a run itself: with no beat, the wait ends with a clear error.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule

from probes.catalog import probe_list
from probes.models import ClusterAccess, Finding, ProbeRun, ProbeSchedule
from providers.models import Cluster
from quickstart.evidence import PROVIDERS

Say = Callable[[str], None]


class ScheduleError(Exception):
    """The scheduled run could not be shown; the message says what to do."""


def demo_clusters(*, prefix: str = "") -> list[Cluster]:
    """The demo's clusters (one per demo provider, named after its testbed)."""
    clusters = []
    for spec in PROVIDERS:
        cluster = Cluster.objects.filter(provider__slug=spec.slug, name=f"{prefix}{spec.testbed}").first()
        if cluster is None:
            raise ScheduleError(f"no demo cluster {prefix}{spec.testbed}: run manage.py demo_cycle first")
        clusters.append(cluster)
    return clusters


def non_disruptive_probes(*, skip: Sequence[str] = ()) -> list[str]:
    return [p.id for p in probe_list() if not p.disruptive and not p.id.startswith("test_") and p.id not in skip]


def schedule_name(cluster: Cluster) -> str:
    return f"demo {cluster.name}: non-disruptive catalog"


@transaction.atomic
def demo_schedules_fire_now(*, clusters: Sequence[Cluster], probes: Sequence[str]) -> list[ProbeSchedule]:
    """Create or reset each cluster's daily schedule so that beat fires it at its next tick."""
    daily, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.DAYS)
    schedules = []
    for cluster in clusters:
        schedule, _ = ProbeSchedule.objects.update_or_create(
            name=schedule_name(cluster),
            defaults={"cluster": cluster, "cycle": None, "probes": list(probes), "interval": daily,
                      "crontab": None, "enabled": True},
        )  # fmt: skip  (the save syncs its PeriodicTask)
        schedule.refresh_from_db()
        task = schedule.periodic_task
        if task is None:
            raise ScheduleError(f"{schedule.name}: not synced to a beat task")
        # A started task that never ran is due at once (django-celery-beat); saving through the
        # model moves the change marker, so a running beat reloads it.
        task.start_time, task.last_run_at, task.total_run_count = timezone.now(), None, 0
        task.save()
        schedules.append(schedule)
    return schedules


@dataclass
class ClusterResult:
    cluster: Cluster
    runs: list[ProbeRun]
    outcomes: dict[str, int] = field(default_factory=dict)
    replaced: set[str] = field(default_factory=set)  # names and addresses of nodes gone since connect
    departed: list[dict[str, str]] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)
    errors_replaced: list[str] = field(default_factory=list)  # error findings or runs a replaced node caused
    errors_other: list[str] = field(default_factory=list)

    @property
    def unfinished(self) -> list[ProbeRun]:
        return [r for r in self.runs if r.status not in ProbeRun.TERMINAL]


def _fired_runs(schedules: Sequence[ProbeSchedule], since: datetime) -> dict[int, list[ProbeRun]]:
    """Schedule id -> the runs of its first slot fired since ``since``."""
    out: dict[int, list[ProbeRun]] = {}
    runs = ProbeRun.objects.filter(schedule__in=schedules, created_at__gte=since).order_by("scheduled_for", "id")
    first_slot: dict[int, datetime] = {}
    for run in runs.select_related("cluster"):
        slot = first_slot.setdefault(run.schedule_id, run.scheduled_for)
        if run.scheduled_for == slot:
            out.setdefault(run.schedule_id, []).append(run)
    return out


def demo_scheduled_wait(
    *, schedules: Sequence[ProbeSchedule], since: datetime, fire_timeout_s: float, timeout_s: float, say: Say = print
) -> dict[int, list[ProbeRun]]:
    """Wait until beat fired every schedule and all their runs are terminal; schedule id -> runs."""
    want = {s.pk: len(s.probes) for s in schedules}
    t0 = time.monotonic()
    last = ""
    while True:
        fired = _fired_runs(schedules, since)
        complete = {sid: runs for sid, runs in fired.items() if len(runs) >= want[sid]}
        waiting_fire = [s.name for s in schedules if s.pk not in complete]
        if waiting_fire and time.monotonic() - t0 > fire_timeout_s:
            raise ScheduleError(
                f"Celery beat did not fire {', '.join(waiting_fire)} within {fire_timeout_s:.0f} s: is beat running "
                "(scripts/demo.sh starts it; .venv/bin/celery -A config beat)?"
            )
        done = sum(r.status in ProbeRun.TERMINAL for runs in complete.values() for r in runs)
        total = sum(want.values())
        line = f"  fired {len(complete)}/{len(schedules)} schedules, {done}/{total} runs finished"
        if line != last:
            say(line)
            last = line
        if not waiting_fire and done == total:
            return complete
        if time.monotonic() - t0 > timeout_s:
            return complete  # the caller reports the unfinished runs
        time.sleep(2.0)


def demo_scheduled_results(*, runs_by_schedule: dict[int, list[ProbeRun]], schedules: Sequence[ProbeSchedule]) -> list[ClusterResult]:
    """Per cluster: outcome counts, the nodes replaced since the demo connected it, and the errors.

    A replaced node is one the cluster's access listed (the nodes at connect time) or the runner
    recorded departed, and that the current inventory no longer holds. An ``error`` finding on such
    a node, or one that names it, or a run that ended in error naming it, is an error a replaced node
    caused; every other error finding is counted apart.
    """
    results = []
    for schedule in schedules:
        runs = [ProbeRun.objects.select_related("cluster").get(pk=r.pk) for r in runs_by_schedule.get(schedule.pk, [])]
        access = ClusterAccess.objects.get(cluster_id=schedule.cluster_id)
        inv = access.inventory or {}
        current = {v for n in inv.get("nodes", []) for v in (n.get("name"), n.get("address")) if v}
        listed = {line.strip().rsplit(":", 1)[0] if line.count(":") == 1 else line.strip()
                  for line in access.compute_nodes.splitlines() if line.strip()}  # fmt: skip
        departed = list(inv.get("departed") or [])
        gone = {v for d in departed for v in (d.get("name"), d.get("address")) if v}
        result = ClusterResult(
            cluster=access.cluster, runs=runs, replaced=(listed | gone) - current, departed=departed,
            joined=[j.get("name", "?") for j in inv.get("joined") or []],
        )  # fmt: skip
        for finding in Finding.objects.filter(run__in=runs).only("probe_id", "target", "outcome", "summary", "evidence"):
            result.outcomes[finding.outcome] = result.outcomes.get(finding.outcome, 0) + 1
            if finding.outcome != "error":
                continue
            text = f"{finding.probe_id} on {finding.target}: {finding.summary}"
            blob = f"{finding.target} {finding.summary} {finding.evidence}"
            hit = finding.target in result.replaced or any(_names(blob, node) for node in result.replaced)
            (result.errors_replaced if hit else result.errors_other).append(text)
        for run in runs:
            if run.status == ProbeRun.Status.ERROR and any(_names(run.error_message, n) for n in result.replaced):
                result.errors_replaced.append(f"run {run.pk} {run.probe_id}: {run.error_code} {run.error_message}")
        results.append(result)
    return results


def _names(text: str, node: str) -> bool:
    """``text`` names ``node`` as a whole word (node2 is not node21, 10.0.0.2 is not 10.0.0.25)."""
    return re.search(rf"(?<![\w.]){re.escape(node)}(?!\w|\.\d)", text) is not None
