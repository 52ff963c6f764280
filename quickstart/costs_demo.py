"""The demo's cost of useful output (issue 16): prices, offered capacity and availability samples.

After the catalog (whose ``serving_goodput`` runs measured T and g on each provider's real LLM
server), this step records what the demo's three providers charge, sets each cluster's offered
capacity from what node_inventory found, and takes the scheduled availability samples that A is
measured from: a ProbeSchedule per cluster ("demo <cluster>: availability", ssh_reachable and
node_inventory, in the demo cycle, every 10 minutes for beat) fired ``samples`` times, each once the
previous sample finished, through the same workers as every other run. Nothing here computes a cost: the
report's cost section reads these rows through ``costs.selectors``.

The prices are illustrative figures for the demo (each component's source says so), not quotes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from django.db.models import Count
from django_celery_beat.models import IntervalSchedule

from costs import services as cost_services
from probes import services as probe_services
from probes.models import ClusterAccess, Finding, ProbeRun, ProbeSchedule
from providers.models import Cluster, Cycle

Say = Callable[[str], None]
AVAILABILITY_PROBES = ["ssh_reachable", "node_inventory"]
SOURCE = "demo: illustrative figure (quickstart/costs_demo.py), not a quote"
# slug -> (base kind, $/GPU-hour, extras): the careful operator is the dearest per hour (2.25 against
# 2.18 and 2.05), by less than its serving configuration delivers more: on a slower machine of this
# kind that was ~1.5x, and a 1.22x price gap left the cost intervals 4% apart
DEMO_PRICES: dict[str, tuple[str, str, dict[str, str]]] = {
    "aurora": ("list", "2.20", {"support": "0.05"}),
    "borealis": ("negotiated", "2.00", {"egress": "0.05"}),
    "cirrus": ("list", "2.10", {"storage": "0.08"}),
}


def demo_capacity_record(*, cycle: Cycle, cluster: Cluster) -> int:
    """Offered capacity = the most compute nodes one on-demand node_inventory run (the catalog's) found
    in the cycle (one accelerator a node on the CPU-only testbed, as serving_goodput counts them; the
    login node is none); kept when none was found. Per run, not distinct over the cycle: an operator's
    replacement node adds no capacity. Not the scheduled availability samples: they measure whether
    that capacity is usable, and one taken mid-replacement can list the departing node beside its
    successor, so a re-run that counted them could record another figure for an unchanged cycle."""
    access = ClusterAccess.objects.filter(cluster=cluster).first()
    per_run = (
        Finding.objects.filter(run__cycle=cycle, run__cluster=cluster, probe_id="node_inventory", metric="",
                               outcome__in=("pass", "warn"), run__schedule__isnull=True)
        .exclude(target=access.login_host if access is not None else "")
        .values("run_id").order_by().annotate(nodes=Count("target", distinct=True)).values_list("nodes", flat=True)
    )
    nodes = max(per_run, default=0)
    if nodes and cluster.gpu_count != nodes:
        Cluster.objects.filter(pk=cluster.pk).update(gpu_count=nodes)
        cluster.gpu_count = nodes
    return cluster.gpu_count


def demo_prices_record(*, cycle: Cycle, cluster: Cluster, analyst: Any = None) -> Any:
    """Record the cluster's price in the cycle (list price on the cluster, or a negotiated one)."""
    key = next((slug for slug in DEMO_PRICES if cluster.provider.slug.startswith(slug)), None)
    if key is None:
        return None
    base, amount, extras = DEMO_PRICES[key]
    values: dict[str, Any] = {"base": base, "base_source": SOURCE}
    if base == "list":
        Cluster.objects.filter(pk=cluster.pk).update(list_price_per_gpu_hour=Decimal(amount))
        cluster.refresh_from_db(fields=["list_price_per_gpu_hour"])
        values["base_per_gpu_hour"] = None
    else:
        values["base_per_gpu_hour"] = Decimal(amount)
    for name in ("storage", "egress", "support"):
        values[f"{name}_per_gpu_hour"] = Decimal(extras.get(name, "0"))
        values[f"{name}_source"] = SOURCE if name in extras else ""
    return cost_services.cluster_price_record(cluster=cluster, cycle=cycle, by=analyst, **values)


def demo_availability_schedule(*, cycle: Cycle, cluster: Cluster) -> ProbeSchedule:
    every, _ = IntervalSchedule.objects.get_or_create(every=10, period=IntervalSchedule.MINUTES)
    schedule, _ = ProbeSchedule.objects.update_or_create(
        name=f"demo {cluster.name}: availability ({cycle.slug})"[:200],
        defaults={"cluster": cluster, "cycle": cycle, "probes": AVAILABILITY_PROBES, "interval": every,
                  "crontab": None, "enabled": True},
    )  # the save syncs its beat task
    return schedule


def demo_availability_sample(
    *, schedules: Sequence[ProbeSchedule], samples: int, timeout_s: float, execute: Callable[[int], None] | None,
    say: Say = print,
) -> list[ProbeRun]:
    """Take the schedules' samples: fire each schedule now, wait until its runs finish, ``samples`` times.

    Each sample is one slot (the moment it was fired). A re-run of the demo on the same day reuses the
    samples already taken (the schedules keep firing on beat afterwards; a later report reads those too).
    ``execute`` runs a run in this process (no worker); otherwise the workers run them.
    """
    deadline = time.monotonic() + timeout_s
    taken: list[ProbeRun] = []
    for schedule in schedules:
        taken += ProbeRun.objects.filter(schedule=schedule, cycle=schedule.cycle)
    have = min((len({r.scheduled_for for r in taken if r.schedule_id == s.pk}) for s in schedules), default=0)
    for _ in range(max(0, samples - have)):
        fired: list[ProbeRun] = []
        for schedule in schedules:
            # as probe_schedule_run_now does, but left unsent when this process executes them
            fired += probe_services.probe_runs_start(
                cluster=schedule.cluster, probe_ids=schedule.probes, cycle=schedule.cycle, schedule=schedule,
                send=execute is None,
            )
        if execute is not None:
            for run in fired:
                execute(run.pk)
        ids = [r.pk for r in fired]
        while time.monotonic() < deadline:
            if all(r.status in ProbeRun.TERMINAL for r in probe_services.probe_runs_wait(run_ids=ids)):
                break
            time.sleep(1.0)
        taken += fired
    current = probe_services.probe_runs_wait(run_ids=[r.pk for r in taken])
    done = sum(r.status in ProbeRun.TERMINAL for r in current)
    say(f"  availability samples: {done}/{len(current)} scheduled runs finished "
        f"({len(schedules)} clusters, {samples} slot{'s' if samples != 1 else ''} each)")
    return current


def demo_costs_prepare(
    *, cycle: Cycle, clusters: Sequence[Cluster], analyst: Any = None, samples: int = 3, timeout_s: float = 300,
    execute: Callable[[int], None] | None = None, say: Say = print,
) -> None:
    """Prices, offered capacity and availability samples for the demo's cost curve."""
    schedules = []
    for cluster in clusters:
        gpus = demo_capacity_record(cycle=cycle, cluster=cluster)
        price = demo_prices_record(cycle=cycle, cluster=cluster, analyst=analyst)
        if price is not None:
            parts = ", ".join(f"{p['name']} {p['amount']}" for p in price.components() if p["amount"])
            say(f"  {cluster.provider.name}: {gpus} accelerators offered; price {parts} $/GPU-h")
        schedules.append(demo_availability_schedule(cycle=cycle, cluster=cluster))
    demo_availability_sample(schedules=schedules, samples=samples, timeout_s=timeout_s, execute=execute, say=say)
