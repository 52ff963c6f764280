"""The runner records what a provider withholds as declined, and judges a cluster at the scale it declares."""

from __future__ import annotations

import datetime as dt

import pytest

from probes import services
from probes.models import ClusterAccess, Finding
from probes.thresholds import real_scale_value
from tests.factories import ClusterFactory
from tests.probes.fakes import FakeTransport, ok

pytestmark = pytest.mark.django_db


def run_probe(cluster, probe_id: str) -> Finding:  # type: ignore[no-untyped-def]
    (run,) = services.probe_runs_start(
        cluster=cluster, probe_ids=[probe_id], slot=dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
    )
    services.probe_run_execute(
        run_id=run.pk, worker="w1", pool_factory=FakeTransport(lambda ep, cmd: ok()).pool
    )
    (finding,) = Finding.objects.filter(run=run)
    return finding


def test_a_disruptive_probe_without_the_providers_opt_in_is_declined_and_a_gpu_probe_on_a_cpu_cluster_not_applicable():
    cluster = ClusterFactory(gpu_count=0, gpu_model="")
    ClusterAccess.objects.create(cluster=cluster, login_host="login", disruptive_opt_in=False)
    declined = run_probe(cluster, "failure_detection_time")
    assert declined.outcome == "declined" and "declined" in declined.summary
    assert run_probe(cluster, "gpu_inventory").outcome == "not_applicable"


def test_the_runner_merges_the_facts_a_cluster_declares_under_its_records_own():
    cluster = ClusterFactory(gpu_count=0, gpu_model="")
    ClusterAccess.objects.create(
        cluster=cluster, login_host="login", settings={"facts": {"scale": "testbed", "gpu_count": "8"}}
    )
    ctx = services.probe_context_build(cluster=cluster)
    assert ctx.facts["scale"] == "testbed" and ctx.facts["gpu_count"] == "0"


def test_a_testbed_value_is_restated_on_the_real_scale_of_the_rubrics_anchors():
    # node_ready_time p50: testbed bar 8 s, real bar 600 s (probes/thresholds/catalog.yaml)
    assert real_scale_value("node_ready_time", "p50_seconds", 20.0, "scale=testbed") == pytest.approx(1500.0)
    assert real_scale_value("node_ready_time", "p50_seconds", 1.3, "scale=testbed") == pytest.approx(97.5)
    assert real_scale_value("node_ready_time", "p50_seconds", 20.0, "default") == 20.0
    assert real_scale_value("scheduler_privacy", "", None, "") is None


def test_the_engine_reads_a_testbed_finding_on_the_real_scale_and_a_real_one_as_measured():
    from django.utils import timezone

    from probes.models import ProbeRun
    from probes.selectors import findings_for_cycle
    from tests.factories import CycleFactory

    cluster, cycle = ClusterFactory(), CycleFactory()
    run = ProbeRun.objects.create(
        cycle=cycle,
        cluster=cluster,
        probe_id="node_ready_time",
        target="cluster",
        scheduled_for=timezone.now(),
        idempotency_key="scale-1",
        status="done",
    )
    for target, value, ref in (
        ("a", 20.0, "scale=testbed"),
        ("b", 1.3, "scale=testbed"),
        ("c", 20.0, "default"),
    ):
        Finding.objects.create(
            run=run,
            probe_id="node_ready_time",
            probe_version="1",
            target=target,
            metric="p50_seconds",
            outcome="pass",
            value=value,
            threshold_ref=ref,
        )
    values = [f.value for f in findings_for_cycle(cycle=cycle)]
    assert values == pytest.approx([1500.0, 97.5, 20.0])  # the leaky demo's 20 s no longer scores like 1.3 s
