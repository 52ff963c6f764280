"""How ``manage.py demo_schedule`` tells an error a replaced node caused from any other error (the
check behind the demo's scheduled run, issue 18): it must be able to fail."""

from __future__ import annotations

import pytest
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule

from probes.models import ClusterAccess, Finding, ProbeRun, ProbeSchedule
from quickstart.scheduled import demo_scheduled_results
from tests.factories import ClusterFactory

pytestmark = pytest.mark.django_db


def _run(schedule: ProbeSchedule, probe_id: str, *, status: str = "done", message: str = "") -> ProbeRun:
    return ProbeRun.objects.create(
        cluster=schedule.cluster, schedule=schedule, probe_id=probe_id, scheduled_for=timezone.now(),
        idempotency_key=f"{schedule.pk}-{probe_id}", status=status, error_message=message,
        error_code="host_unreachable" if message else "",
    )  # fmt: skip


def _finding(run: ProbeRun, target: str, outcome: str, summary: str = "") -> None:
    Finding.objects.create(run=run, probe_id=run.probe_id, probe_version="1", target=target, outcome=outcome,
                           summary=summary)  # fmt: skip


def test_errors_on_or_naming_a_replaced_node_are_told_apart_from_other_errors() -> None:
    cluster = ClusterFactory()
    ClusterAccess.objects.create(
        cluster=cluster, login_host="10.0.0.1", compute_nodes="10.0.0.11\n10.0.0.12:22",
        inventory={
            "nodes": [{"name": "node1", "address": "10.0.0.11"}, {"name": "node4", "address": "10.0.0.14"}],
            "departed": [{"name": "node2", "address": "10.0.0.12", "scheduler_said": "gone"}],
            "joined": [{"name": "node4", "address": "10.0.0.14"}],
        },
    )  # fmt: skip
    daily = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.DAYS)
    schedule = ProbeSchedule.objects.create(name="s", cluster=cluster, probes=["ssh_reachable"], interval=daily)
    on_target, named, other, fine = (_run(schedule, p) for p in ("ssh_reachable", "node_inventory", "home_isolation", "gpu_inventory"))
    _finding(on_target, "10.0.0.12", "error", "could not measure")
    _finding(named, "tenant-a->tenant-b", "error", "node2: host_unreachable ChannelException(2, 'Connect failed')")
    _finding(other, "tenant-a->tenant-b", "error", "node1: Requested nodes are busy; node21 and 10.0.0.125 too")
    _finding(fine, "10.0.0.14", "pass")
    failed = _run(schedule, "bmc_reachable", status="error", message="10.0.0.12:22: Connect failed")

    (result,) = demo_scheduled_results(
        runs_by_schedule={schedule.pk: [on_target, named, other, fine, failed]}, schedules=[schedule]
    )
    assert result.replaced == {"node2", "10.0.0.12"}
    assert len(result.errors_replaced) == 3 and len(result.errors_other) == 1, result
    assert result.outcomes == {"error": 3, "pass": 1} and result.joined == ["node4"]
    assert not result.unfinished
