"""``manage.py run_probes --cluster X [--probe Y ...] [--wait | --inline]``: run probes now.

Creates one ProbeRun per probe for the cluster (slot: now) and sends them to the Celery workers.
``--wait`` shows a progress bar (targets measured / targets, runs finished / runs) until every run
is terminal, then a summary table. ``--inline`` executes the runs in this process instead of on a
worker (same claim and lifecycle), for a laptop or a quick check.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from probes import services
from probes.catalog import UnknownProbe, probe_list
from probes.models import Finding, ProbeRun
from providers.models import Cluster

BAR_WIDTH = 30


def _find_cluster(ref: str) -> Cluster:
    """A cluster by id, ``provider-slug/cluster-name`` or a unique cluster name."""
    qs = Cluster.objects.select_related("provider")
    if ref.isdigit():
        found = qs.filter(pk=int(ref))
    elif "/" in ref:
        provider, _, name = ref.partition("/")
        found = qs.filter(provider__slug=provider, name=name)
    else:
        found = qs.filter(name=ref)
    clusters = list(found[:2])
    if len(clusters) != 1:
        raise CommandError(f"{'no' if not clusters else 'more than one'} cluster matches {ref!r}")
    return clusters[0]


def progress_line(runs: list[ProbeRun]) -> str:
    done_targets = sum(r.progress_done for r in runs)
    total_targets = sum(r.progress_total for r in runs) or 0
    finished = sum(r.status in ProbeRun.TERMINAL for r in runs)
    fraction = finished / len(runs) if not total_targets else min(1.0, done_targets / total_targets)
    if finished == len(runs):
        fraction = 1.0
    filled = round(BAR_WIDTH * fraction)
    return (
        f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {done_targets}/{total_targets} targets, "
        f"{finished}/{len(runs)} runs"
    )


class Command(BaseCommand):
    help = "Run probes against a cluster now; optionally wait and print a summary."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, help="id, provider-slug/cluster-name, or unique name")
        parser.add_argument(
            "--probe", action="append", dest="probes", help="probe id (repeatable); default: all"
        )
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--wait", action="store_true", help="wait for the workers, with a progress bar")
        mode.add_argument("--inline", action="store_true", help="execute here instead of on a worker")
        parser.add_argument(
            "--timeout", type=float, default=3600, help="give up waiting after this many seconds"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        cluster = _find_cluster(options["cluster"])
        probe_ids = options["probes"] or [p.id for p in probe_list() if not p.id.startswith("test_")]
        try:
            runs = services.probe_runs_start(cluster=cluster, probe_ids=probe_ids, send=not options["inline"])
        except (UnknownProbe, services.ProbeRunError) as exc:
            raise CommandError(str(exc)) from exc
        ids = [r.pk for r in runs]
        self.stdout.write(f"{len(ids)} probe run(s) for {cluster}: {', '.join(map(str, ids))}")
        if not (options["wait"] or options["inline"]):
            return
        worker = (
            threading.Thread(target=self._execute_inline, args=(ids,), daemon=True)
            if options["inline"]
            else None
        )
        if worker is not None:
            worker.start()
        runs = self._wait(ids, timeout_s=options["timeout"])
        if worker is not None:
            worker.join(timeout=5)
        self._summary(runs)

    @staticmethod
    def _execute_inline(ids: list[int]) -> None:
        try:
            for run_id in ids:
                while True:
                    result = services.probe_run_execute(run_id=run_id, worker="run_probes --inline")
                    if result.retry_in is None:
                        break
                    time.sleep(result.retry_in)
        finally:
            connection.close()

    def _wait(self, ids: list[int], *, timeout_s: float) -> list[ProbeRun]:
        deadline = time.monotonic() + timeout_s
        tty = self.stdout.isatty()
        last = ""
        while True:
            runs = services.probe_runs_wait(run_ids=ids)
            line = progress_line(runs)
            if line != last or tty:
                self.stdout.write(("\r" if tty else "") + line, ending="" if tty else "\n")
                self.stdout.flush()
                last = line
            if all(r.status in ProbeRun.TERMINAL for r in runs):
                if tty:
                    self.stdout.write("")
                return runs
            if time.monotonic() > deadline:
                self.stdout.write("")
                raise CommandError(f"runs not finished after {timeout_s:.0f}s: {[r.pk for r in runs]}")
            time.sleep(0.5)

    def _summary(self, runs: list[ProbeRun]) -> None:
        counts: dict[int, Counter[str]] = {r.pk: Counter() for r in runs}
        for run_id, outcome in Finding.objects.filter(run_id__in=counts).values_list("run_id", "outcome"):
            counts[run_id][outcome] += 1
        header = f"{'probe':<24} {'status':<8} {'att':>3} {'targets':>7}  {'findings':<40} error"
        self.stdout.write("")
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for run in runs:
            findings = ", ".join(f"{k} {v}" for k, v in sorted(counts[run.pk].items())) or "-"
            error = f"{run.error_code}{' (flagged)' if run.flagged else ''}" if run.error_code else ""
            self.stdout.write(
                f"{run.probe_id:<24} {run.status:<8} {run.attempt:>3} {run.progress:>7}  {findings:<40} {error}"
            )
        failed = [r for r in runs if r.status != ProbeRun.Status.DONE]
        self.stdout.write(f"\n{len(runs) - len(failed)} done, {len(failed)} not done")
