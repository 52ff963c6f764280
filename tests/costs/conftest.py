"""Builders for cost tests: a cycle of providers with prices, serving findings and availability samples.

Findings are written as the probes write them (one ProbeRun per replicate or slot, immutable Finding
rows): serving_goodput per h16a's finding contract, ssh_reachable and node_inventory from a
ProbeSchedule's runs, node_replacement_time's seconds.
"""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal
from typing import Any

from django_celery_beat.models import IntervalSchedule

from costs import services
from probes.models import Finding, ProbeRun, ProbeSchedule
from tests.factories import ClusterFactory, CycleFactory, ProviderFactory

_keys = itertools.count()
DAY = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)


def _run(cluster: Any, cycle: Any, probe_id: str, when: dt.datetime, schedule: Any = None) -> ProbeRun:
    return ProbeRun.objects.create(
        cycle=cycle, cluster=cluster, probe_id=probe_id, target="cluster", scheduled_for=when,
        idempotency_key=f"cost-test-{next(_keys)}", status=ProbeRun.Status.DONE, schedule=schedule,
    )


def serving(cluster: Any, cycle: Any, throughput: float | None, goodput: float, *,
            when: dt.datetime = DAY, error_rate: float = 0.0,
            sweeps: list[tuple[float | None, float | None]] | None = None, **evidence_extra: Any) -> Finding:
    """One serving_goodput run as the probe's contract writes it (``sweeps``: its per-sweep
    (throughput, goodput) at the target, each a replicate; without them the run is one)."""
    run = _run(cluster, cycle, "serving_goodput", when)
    evidence = {"points": [], "frontier": [], "target_interactivity_tok_s_per_user": 20.0,
                "in_range": throughput is not None, "goodput": goodput, "error_rate": error_rate,
                "accelerators": 1}
    if sweeps is not None:
        evidence["sweeps"] = [{"sweep": i, "throughput_at_target": t, "goodput": g, "basis": "interpolated" if t else ""}
                              for i, (t, g) in enumerate(sweeps)]
    evidence.update(evidence_extra)
    return Finding.objects.create(
        run=run, probe_id="serving_goodput", probe_version="1", target="cluster", metric="throughput_at_target",
        outcome="pass" if throughput is not None else "fail", value=throughput, unit="tok/s/gpu", evidence=evidence,
    )


def schedule_for(cluster: Any, cycle: Any) -> ProbeSchedule:
    every, _ = IntervalSchedule.objects.get_or_create(every=5, period=IntervalSchedule.MINUTES)
    return ProbeSchedule.objects.create(name=f"avail {cluster.pk} {next(_keys)}", cluster=cluster, cycle=cycle,
                                        probes=["ssh_reachable", "node_inventory"], interval=every)


def sample(cluster: Any, cycle: Any, schedule: Any, when: dt.datetime, outcomes: dict[str, str], *,
           gpus: dict[str, int] | None = None) -> None:
    """One scheduled slot: ssh_reachable and node_inventory on each node with the given outcome
    ("error:<code>" is a could-not-measure finding with the runner's error code)."""
    for probe_id in ("ssh_reachable", "node_inventory"):
        run = _run(cluster, cycle, probe_id, when, schedule)
        for node, outcome in outcomes.items():
            outcome, _, code = outcome.partition(":")
            Finding.objects.create(run=run, probe_id=probe_id, probe_version="1", target=node, metric="",
                                   outcome=outcome, evidence={"error_code": code} if code else {})
            if probe_id == "node_inventory" and gpus is not None:
                Finding.objects.create(run=run, probe_id=probe_id, probe_version="1", target=node,
                                       metric="gpu_count", outcome="pass", value=gpus.get(node, 0))


def samples(cluster: Any, cycle: Any, usable: int, unusable: int) -> ProbeSchedule:
    """Slots on two nodes that hold the cluster's ordered GPUs between them; the unusable ones with n2 failing."""
    schedule = schedule_for(cluster, cycle)
    half = cluster.gpu_count // 2
    for i in range(usable + unusable):
        outcome = "pass" if i < usable else "fail"
        sample(cluster, cycle, schedule, DAY + dt.timedelta(minutes=5 * i), {"n1": "pass", "n2": outcome},
               gpus={"n1": half, "n2": cluster.gpu_count - half})
    return schedule


def price(cluster: Any, cycle: Any, amount: str = "2.00", **extra: Any) -> Any:
    return services.cluster_price_record(cluster=cluster, cycle=cycle, base="negotiated",
                                         base_per_gpu_hour=Decimal(amount), base_source="contract 42", **extra)


def provider_with_cluster(slug: str, gpus: int = 8) -> tuple[Any, Any]:
    provider = ProviderFactory(slug=slug, name=f"{slug.title()} Cloud")
    return provider, ClusterFactory(provider=provider, name=f"{slug}-1", gpu_count=gpus,
                                    list_price_per_gpu_hour=Decimal("2.50"))


def cycle_of(*providers: Any, slug: str = "c-2026-11", start: dt.date = dt.date(2026, 11, 1),
             end: dt.date = dt.date(2026, 11, 30)) -> Any:
    return CycleFactory(slug=slug, period_start=start, period_end=end, providers=list(providers))
