"""Scheduled runs on a living cluster end to end (issue 18.4): a real Celery beat (django-celery-beat's
DatabaseScheduler), a real worker on Redis and a testbed whose exemplary operator replaces a node.

A ProbeSchedule (node-scope probes, every 10 s; runs are one per minute slot) fires before, during
and after the replacement. Every run finishes, the replaced node is recorded departed, its successor
is probed, no finding is an ``error``, and the scheduled findings reach the cycle's evidence through
the selector the scoring engine reads (``probes.selectors.findings_for_cycle``) exactly as the
findings of an on-demand run do. Beat and worker run as subprocesses on pytest-django's test database
(hence ``transaction=True``) and are stopped by pid (their process groups).
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from probes import services
from probes.models import ClusterAccess, Finding, ProbeRun, ProbeSchedule
from probes.selectors import findings_for_cycle, next_scheduled_runs
from testbed import api
from testbed.pytest_helpers import prefixed_name, running_testbed
from tests.factories import CycleFactory
from tests.integration.test_living_cluster import _register, _replaced

pytestmark = [pytest.mark.testbed, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
PROBES = ["node_inventory", "ssh_reachable"]  # node-scope: each node is a target (srun --nodelist)
ENV = {"OPGRADE_PROBE_RETRY_BASE_S": "2", "OPGRADE_PROBE_HEARTBEAT_S": "2"}


def _wait(predicate: Callable[[], object], *, timeout_s: float, what: str, logs: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}\n{logs()[-4000:]}")


def _purge_broker() -> None:
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(
        "probes", "default", "unacked", "unacked_index", "unacked_mutex"
    )


class Daemons:
    """Celery beat and a worker, each in its own process group, logging to files."""

    def __init__(self, tmp: Path) -> None:
        db = connection.settings_dict
        url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
        self.env = {**os.environ, **ENV, "DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *args: str) -> None:
        with (self.tmp / f"{name}.log").open("wb") as out:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", *args], env=self.env, cwd=ROOT,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self) -> str:
        return "".join(f"--- {n} ---\n{self.log(n)[-2000:]}\n" for n in self.procs)

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs.values())

    def stop(self) -> None:
        for process in self.procs.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.procs.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Daemons]:
    _purge_broker()
    d = Daemons(tmp_path)
    try:
        yield d
    finally:
        d.stop()
        _purge_broker()


def _runs(schedule: ProbeSchedule) -> list[ProbeRun]:
    return list(ProbeRun.objects.filter(schedule=schedule).order_by("scheduled_for", "probe_id"))


def _slot_done(schedule: ProbeSchedule, *, after: dt.datetime) -> dt.datetime | None:
    """The first slot created after ``after`` whose runs (one per probe) are all terminal."""
    slots: dict[dt.datetime, list[ProbeRun]] = {}
    for run in _runs(schedule):
        if run.created_at >= after:
            slots.setdefault(run.scheduled_for, []).append(run)
    for slot, runs in sorted(slots.items()):
        if len(runs) == len(PROBES) and all(r.status in ProbeRun.TERMINAL for r in runs):
            return slot
    return None


@pytest.mark.timeout(900)
def test_a_schedule_fired_by_beat_across_a_node_replacement_finishes_every_run_without_an_error(
    daemons: Daemons,
) -> None:
    name = prefixed_name("sr")
    # Provisioning takes 40 s here (1 s in the profile), so that the replacement spans a minute
    # boundary and the schedule surely fires while node2 is gone and its successor is not ready.
    with running_testbed("exemplary", name=name, nodes=2, overrides={"provisioning": {"delay_s": 40}}) as info:
        cluster = _register(info)
        cycle = CycleFactory(providers=[cluster.provider])
        every = IntervalSchedule.objects.create(every=10, period=IntervalSchedule.SECONDS)
        schedule = ProbeSchedule.objects.create(
            name=f"{name} node probes", cluster=cluster, cycle=cycle, probes=PROBES, interval=every
        )
        schedule.refresh_from_db()
        # due at once: a started task that never ran fires at beat's first tick
        PeriodicTask.objects.filter(pk=schedule.periodic_task_id).update(start_time=timezone.now())
        (upcoming,) = next_scheduled_runs(cluster=cluster)
        assert upcoming.schedule_id == schedule.pk and upcoming.at is not None
        assert upcoming.at - timezone.now() <= dt.timedelta(seconds=1)

        daemons.start(
            "worker", "worker", "-Q", "probes,default", "-c", "4", "-n", f"{name}-{os.getpid()}@%h",
            "--without-gossip", "--without-mingle", "-l", "info",
        )  # fmt: skip
        _wait(lambda: " ready." in daemons.log("worker"), timeout_s=120, what="the worker", logs=daemons.logs)
        daemons.start("beat", "beat", "-l", "info", "--pidfile", str(daemons.tmp / "beat.pid"))
        started = timezone.now() - dt.timedelta(seconds=5)

        # before: the first fire probes node1 and node2
        _wait(lambda: _slot_done(schedule, after=started), timeout_s=240, what="the first scheduled slot",
              logs=daemons.logs)  # fmt: skip
        before = _slot_done(schedule, after=started)
        old_address = info.nodes["node2"]["address"]
        assert Finding.objects.filter(run__schedule=schedule, run__scheduled_for=before, target=old_address,
                                      probe_id="node_inventory", metric="", outcome="pass").exists()  # fmt: skip

        # during: report node2 faulty 8 s before a minute boundary; the next minute's slot fires
        # while node2 is drained or gone and its successor is still provisioning
        now = timezone.now()
        boundary = now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        if (boundary - now).total_seconds() < 8:
            boundary += dt.timedelta(minutes=1)
        time.sleep((boundary - now).total_seconds() - 8)
        reported = timezone.now()
        code, _ = api.provider_call(name, "POST", "/v1/nodes/node2/report-faulty", {"reason": "xid 79"})
        assert code == 202
        successor = _replaced(name, "node2", timeout_s=180)
        ready = timezone.now()
        new_address = api.info(name).nodes[successor]["address"]
        during = [r for r in _runs(schedule) if reported <= r.created_at <= ready]
        assert during, f"no scheduled run started between the report ({reported}) and the successor ({ready})"

        # after: a slot that started once the successor was ready probes it
        _wait(lambda: _slot_done(schedule, after=ready), timeout_s=240, what="a slot after the replacement",
              logs=daemons.logs)  # fmt: skip
        after = _slot_done(schedule, after=ready)

        # stop firing, then every run of the schedule must finish
        schedule.enabled = False
        schedule.save()
        _wait(lambda: all(r.status in ProbeRun.TERMINAL for r in _runs(schedule)), timeout_s=300,
              what="every scheduled run to finish", logs=daemons.logs)  # fmt: skip
        assert daemons.alive(), daemons.logs()

        runs = _runs(schedule)
        slots = sorted({r.scheduled_for for r in runs})
        assert len(slots) >= 3 and before in slots and after in slots
        for run in runs:
            assert run.status == ProbeRun.Status.DONE, (run.probe_id, run.scheduled_for, run.error_code, run.error_message)
        findings = Finding.objects.filter(run__schedule=schedule)
        errors = [(f.probe_id, f.target, f.summary) for f in findings.filter(outcome="error")]
        assert not errors, errors

        probed = Finding.objects.get(run__schedule=schedule, run__scheduled_for=after, probe_id="node_inventory",
                                     target=new_address, metric="")  # fmt: skip
        assert probed.outcome == "pass" and probed.evidence["cmd"].startswith(f"srun --nodelist={successor} ")
        assert not findings.filter(run__scheduled_for=after, target=old_address).exists()
        inventory = ClusterAccess.objects.get(cluster=cluster).inventory
        (gone,) = [d for d in inventory["departed"] if d["name"] == "node2"]
        assert gone["address"] == old_address and gone["scheduler_said"]
        assert successor in [j["name"] for j in inventory["joined"]]
        assert "probes.probe_schedule_fire" in daemons.log("beat")  # beat fired them, nobody else

        # the cycle's evidence: every scheduled finding, read as the engine reads them ...
        evidence = {f.ref: f for f in findings_for_cycle(cycle=cycle)}
        assert {f"finding {pk}" for pk in findings.values_list("pk", flat=True)} <= set(evidence)
        # ... and the same way as an on-demand run's findings on the same nodes
        (on_demand,) = services.probe_runs_start(cluster=cluster, probe_ids=["node_inventory"], cycle=cycle)
        _wait(lambda: ProbeRun.objects.get(pk=on_demand.pk).status in ProbeRun.TERMINAL, timeout_s=180,
              what="the on-demand run", logs=daemons.logs)  # fmt: skip
        evidence = {f.ref: f for f in findings_for_cycle(cycle=cycle)}

        def shape(run_filter: dict[str, object]) -> list[tuple[object, ...]]:
            rows = Finding.objects.filter(probe_id="node_inventory", **run_filter).order_by("target", "metric")
            return sorted((e.probe_id, e.metric, e.outcome, e.provider_slug, e.critical)
                          for e in (evidence[f"finding {pk}"] for pk in rows.values_list("pk", flat=True)))  # fmt: skip

        scheduled_shape = shape({"run__schedule": schedule, "run__scheduled_for": after})
        assert scheduled_shape and scheduled_shape == shape({"run": on_demand})
        assert {e.provider_slug for e in evidence.values()} == {cluster.provider.slug}
