"""The demo's cost step (issue 16): prices with sources, capacity from node_inventory, availability
schedules in the cycle, and samples reused on a re-run (the full demo runs in test_demo_cycle.py)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from costs.selectors import price_for
from quickstart import costs_demo
from tests.costs.conftest import _run, cycle_of, sample
from tests.factories import ClusterFactory, ProviderFactory

pytestmark = pytest.mark.django_db


def _cluster(slug: str):
    return ClusterFactory(provider=ProviderFactory(slug=slug, name=slug.title()), name=slug.split("-")[0],
                          gpu_count=0)


def test_prices_and_capacity_are_recorded_with_sources():
    aurora, borealis = _cluster("aurora-compute"), _cluster("borealis-cloud")
    cycle = cycle_of(aurora.provider, borealis.provider)
    run = _run(aurora, cycle, "node_inventory", dt.datetime(2026, 11, 2, tzinfo=dt.UTC))
    from probes.models import ClusterAccess, Finding

    ClusterAccess.objects.create(cluster=aurora, login_host="login")
    for node in ("login", "node1", "node2"):
        Finding.objects.create(run=run, probe_id="node_inventory", probe_version="1", target=node, metric="",
                               outcome="pass")
    assert costs_demo.demo_capacity_record(cycle=cycle, cluster=aurora) == 2
    assert costs_demo.demo_capacity_record(cycle=cycle, cluster=borealis) == 0  # nothing found: kept
    costs_demo.demo_prices_record(cycle=cycle, cluster=aurora)
    costs_demo.demo_prices_record(cycle=cycle, cluster=borealis)
    aurora.refresh_from_db()
    assert aurora.list_price_per_gpu_hour == Decimal("2.20")
    p = price_for(cycle=cycle, cluster=aurora)
    assert p.effective == pytest.approx(2.25)
    assert [(c.name, c.source == costs_demo.SOURCE) for c in p.components if c.amount_per_gpu_hour] == [
        ("list", False), ("support", True)]  # the list price names the cluster's list price as its source
    assert price_for(cycle=cycle, cluster=borealis).effective == pytest.approx(2.05)
    again = costs_demo.demo_prices_record(cycle=cycle, cluster=borealis)  # idempotent
    assert again.cycle == cycle and again.cluster.prices.count() == 1


def test_samples_already_taken_are_reused_not_taken_again():
    aurora = _cluster("aurora-compute")
    cycle = cycle_of(aurora.provider)
    schedule = costs_demo.demo_availability_schedule(cycle=cycle, cluster=aurora)
    assert schedule.cycle == cycle and schedule.probes == ["ssh_reachable", "node_inventory"]
    assert schedule.periodic_task is not None  # beat keeps sampling after the demo
    for minute in (0, 1):
        sample(aurora, cycle, schedule, dt.datetime(2026, 11, 2, 9, minute, tzinfo=dt.UTC), {"node1": "pass"})

    def refuse(run_id: int) -> None:
        raise AssertionError("no new sample should be taken")

    runs = costs_demo.demo_availability_sample(schedules=[schedule], samples=2, timeout_s=5, execute=refuse,
                                               say=lambda line: None)
    assert len(runs) == 4


def test_a_replacement_node_adds_no_capacity_and_a_rerun_records_the_same_figure():
    """The catalog's node_inventory saw node1 and node2; a later sample (after the operator replaced
    node2 with node3) saw node1 and node3. Counting distinct nodes over the cycle said 3 and made the
    demo's re-run publish a correction; the most compute nodes one run found is 2."""
    from probes.models import ClusterAccess, Finding

    aurora = _cluster("aurora-compute")
    cycle = cycle_of(aurora.provider)
    ClusterAccess.objects.create(cluster=aurora, login_host="login")
    for day, nodes in ((2, ("login", "node1", "node2")), (3, ("login", "node1", "node3"))):
        run = _run(aurora, cycle, "node_inventory", dt.datetime(2026, 11, day, tzinfo=dt.UTC))
        for node in nodes:
            Finding.objects.create(run=run, probe_id="node_inventory", probe_version="1", target=node, metric="",
                                   outcome="pass")
    assert costs_demo.demo_capacity_record(cycle=cycle, cluster=aurora) == 2
    assert costs_demo.demo_capacity_record(cycle=cycle, cluster=aurora) == 2


def test_a_scheduled_sample_taken_mid_replacement_does_not_change_the_offered_capacity():
    """A sample taken while node2 was departing and its successor node3 had joined listed both: the
    offered capacity is the catalog's on-demand count, so the re-run records the same figure."""
    from probes.models import ClusterAccess, Finding
    from tests.costs.conftest import schedule_for

    aurora = _cluster("aurora-compute")
    cycle = cycle_of(aurora.provider)
    ClusterAccess.objects.create(cluster=aurora, login_host="login")
    catalog = _run(aurora, cycle, "node_inventory", dt.datetime(2026, 11, 2, tzinfo=dt.UTC))
    sampled = _run(aurora, cycle, "node_inventory", dt.datetime(2026, 11, 2, 1, tzinfo=dt.UTC),
                   schedule=schedule_for(aurora, cycle))
    for run, nodes in ((catalog, ("login", "node1", "node2")), (sampled, ("login", "node1", "node2", "node3"))):
        for node in nodes:
            Finding.objects.create(run=run, probe_id="node_inventory", probe_version="1", target=node, metric="",
                                   outcome="pass")
    assert costs_demo.demo_capacity_record(cycle=cycle, cluster=aurora) == 2
