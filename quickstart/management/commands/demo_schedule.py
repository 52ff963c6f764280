"""``manage.py demo_schedule``: the demo's scheduled run, after ``demo_cycle`` (``scripts/demo.sh`` runs both).

    manage.py demo_schedule                   # beat fires the non-disruptive catalog on every demo cluster
    manage.py demo_schedule --prefix qs       # the clusters of testbeds qsaurora, qsboreal, qscirrus

Creates or resets one daily ProbeSchedule per demo cluster (the whole non-disruptive catalog, outside
the cycle), waits for Celery beat to fire them and for every run to finish, and prints per cluster the
nodes the operator replaced, the departed and joined nodes, the outcomes, and the ``error`` findings a
replaced node caused. Exits non-zero when beat fired nothing, a run did not finish in time, or a
replaced node caused an error: each is said, never passed over.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from probes.selectors import next_scheduled_runs
from quickstart import scheduled


class Command(BaseCommand):
    help = "Fire the demo clusters' scheduled run of the non-disruptive catalog through Celery beat and check it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--prefix", default="", help="testbed name prefix (tests use one)")
        parser.add_argument("--fire-timeout", type=float, default=120, help="seconds to wait for beat to fire")
        parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for the runs to finish")
        parser.add_argument(
            "--skip-probe", action="append", default=[], metavar="PROBE_ID", help="leave this probe out (repeatable)"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        t0 = time.monotonic()
        say = self.stdout.write
        try:
            clusters = scheduled.demo_clusters(prefix=opts["prefix"])
            probes = scheduled.non_disruptive_probes(skip=opts["skip_probe"])
            since = timezone.now()
            schedules = scheduled.demo_schedules_fire_now(clusters=clusters, probes=probes)
            say(f"  {len(schedules)} schedules of {len(probes)} non-disruptive probes, daily, first fire now (by beat)")
            runs = scheduled.demo_scheduled_wait(
                schedules=schedules, since=since, fire_timeout_s=opts["fire_timeout"], timeout_s=opts["timeout"], say=say
            )
            results = scheduled.demo_scheduled_results(runs_by_schedule=runs, schedules=schedules)
        except scheduled.ScheduleError as exc:
            raise CommandError(str(exc)) from exc

        problems = []
        for r in results:
            outcomes = ", ".join(f"{k} {v}" for k, v in sorted(r.outcomes.items()))
            statuses: dict[str, int] = {}
            for run in r.runs:
                statuses[run.status] = statuses.get(run.status, 0) + 1
            say(f"  {r.cluster.name}: runs {', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))}; findings {outcomes}")
            say(f"    replaced since connect: {', '.join(sorted(r.replaced)) or 'none'}; departed: "
                f"{', '.join(str(d.get('name')) for d in r.departed) or 'none'}; joined: {', '.join(r.joined) or 'none'}")
            say(f"    error findings caused by a replaced node: {len(r.errors_replaced)}; other error findings: "
                f"{len(r.errors_other)}")
            for line in r.errors_replaced[:10]:
                say(f"      replaced: {line[:300]}")
            for line in r.errors_other[:10]:
                say(f"      other: {line[:300]}")
            (upcoming, *_) = next_scheduled_runs(cluster=r.cluster) or [None]
            if upcoming is not None and upcoming.at is not None:
                say(f"    next scheduled run: {upcoming.at.isoformat(timespec='seconds')} ({upcoming.name})")
            if r.unfinished:
                problems.append(f"{r.cluster.name}: {len(r.unfinished)} run(s) not finished after {opts['timeout']:.0f} s: "
                                + ", ".join(run.probe_id for run in r.unfinished))
            if r.errors_replaced:
                problems.append(f"{r.cluster.name}: {len(r.errors_replaced)} error finding(s) caused by a replaced node")
        say(f"SCHEDULED_RUN runs={sum(len(r.runs) for r in results)} "
            f"unfinished={sum(len(r.unfinished) for r in results)} "
            f"errors_replaced={sum(len(r.errors_replaced) for r in results)} "
            f"errors_other={sum(len(r.errors_other) for r in results)} "
            f"replaced_nodes={sum(len(r.replaced) for r in results)} seconds={time.monotonic() - t0:.0f}")
        if problems:
            raise CommandError("; ".join(problems))
