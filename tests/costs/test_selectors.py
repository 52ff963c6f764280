"""costs.selectors: P, T, g and A read from a cycle's rows, and the cost or why it is unknown."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from costs import engine
from costs.selectors import availability, cost_standings, cycle_costs
from tests.costs.conftest import (
    DAY,
    cycle_of,
    price,
    provider_with_cluster,
    sample,
    samples,
    schedule_for,
    serving,
)

pytestmark = pytest.mark.django_db


def test_a_cluster_with_price_serving_and_samples_gets_a_cost_with_an_interval():
    provider, cluster = provider_with_cluster("alpha")
    cycle = cycle_of(provider)
    price(cluster, cycle, "2.00", storage_per_gpu_hour=Decimal("0.10"), storage_source="storage page")
    for t, g in ((100.0, 0.9), (110.0, 0.95), (90.0, 0.85)):
        serving(cluster, cycle, t, g)
    samples(cluster, cycle, usable=9, unusable=1)
    [row] = cycle_costs(cycle)
    assert row.known and row.reason == ""
    assert row.price.effective == pytest.approx(2.10)
    assert [c.name for c in row.price.components] == ["negotiated", "storage", "egress", "support"]
    assert row.throughput == pytest.approx(100.0) and row.goodput == pytest.approx(0.9)
    assert row.availability.value == pytest.approx(0.9)
    expected = engine.cost_per_useful_mtok(2.10, 100.0, 0.9, 0.9)
    assert row.estimate.point == pytest.approx(expected)
    assert row.estimate.low <= expected <= row.estimate.high
    assert row.inferencex == pytest.approx(engine.inferencex_cost_per_mtok(2.10, 100.0))
    assert cycle_costs(cycle) == cycle_costs(cycle)  # seeded by the cycle


def test_no_availability_samples_means_the_cost_is_unknown_not_assumed():
    provider, cluster = provider_with_cluster("alpha")
    cycle = cycle_of(provider)
    price(cluster, cycle)
    serving(cluster, cycle, 100.0, 1.0)
    [row] = cycle_costs(cycle)
    assert row.estimate is None and row.availability.value is None
    assert row.reason.startswith("availability unknown: no scheduled availability samples")


def test_unscheduled_and_out_of_period_runs_are_not_samples():
    provider, cluster = provider_with_cluster("alpha")
    cycle = cycle_of(provider)
    schedule = schedule_for(cluster, cycle)
    sample(cluster, cycle, None, DAY, {"n1": "pass"})  # an ad hoc run: not a scheduled sample
    sample(cluster, cycle, schedule, dt.datetime(2026, 12, 5, tzinfo=dt.UTC), {"n1": "pass"})  # after the period
    assert availability(cycle=cycle, cluster=cluster).measured == 0


def test_a_slot_is_unusable_when_a_node_fails_or_ordered_gpus_are_missing():
    provider, cluster = provider_with_cluster("alpha", gpus=16)
    cycle = cycle_of(provider)
    schedule = schedule_for(cluster, cycle)
    sample(cluster, cycle, schedule, DAY, {"n1": "pass", "n2": "pass"}, gpus={"n1": 8, "n2": 8})
    sample(cluster, cycle, schedule, DAY + dt.timedelta(minutes=5), {"n1": "pass", "n2": "pass"},
           gpus={"n1": 8, "n2": 7})
    sample(cluster, cycle, schedule, DAY + dt.timedelta(minutes=10), {"n1": "pass", "n2": "timeout"})
    sample(cluster, cycle, schedule, DAY + dt.timedelta(minutes=15), {"n1": "pass", "n2": "error"})
    a = availability(cycle=cycle, cluster=cluster)
    assert (a.usable, a.measured, a.unmeasured) == (1, 3, 1)
    assert [s.usable for s in a.slots] == [True, False, False, None]
    assert a.slots[2].unusable_nodes == ("n2",)
    assert a.value == pytest.approx(1 / 3)


def test_an_unreachable_node_is_unusable_capacity_but_our_own_failure_is_unmeasured():
    provider, cluster = provider_with_cluster("alpha", gpus=2)  # no GPU counted: two nodes are the order
    cycle = cycle_of(provider)
    schedule = schedule_for(cluster, cycle)
    slots = [{"n1": "pass", "n2": "error:host_unreachable"}, {"n1": "pass", "n2": "error:scheduler_refused"},
             {"n1": "pass", "n2": "error:host_key_changed"}, {"n1": "pass", "n2": "error:node_departed",
                                                             "n3": "pass"}]
    for i, outcomes in enumerate(slots):
        sample(cluster, cycle, schedule, DAY + dt.timedelta(minutes=5 * i), outcomes)
    a = availability(cycle=cycle, cluster=cluster)
    # a scheduler refusing a node may be refusing for the tenant's own jobs: unmeasured
    assert [s.usable for s in a.slots] == [False, None, None, True]
    assert a.slots[3].nodes == 2  # the departed node is no node of the slot; its successor is
    assert (a.usable, a.measured, a.unmeasured) == (1, 2, 2)


def test_a_slot_without_the_ordered_nodes_is_unusable_even_when_every_node_answered():
    from probes.models import ClusterAccess

    provider, cluster = provider_with_cluster("alpha", gpus=2)
    ClusterAccess.objects.create(cluster=cluster, login_host="login1")
    cycle = cycle_of(provider)
    schedule = schedule_for(cluster, cycle)
    sample(cluster, cycle, schedule, DAY, {"login1": "pass", "n1": "pass", "n2": "pass"})
    # the scheduler listed no compute node (drained, down): only the login node was probed
    sample(cluster, cycle, schedule, DAY + dt.timedelta(minutes=5), {"login1": "pass"})
    sample(cluster, cycle, schedule, DAY + dt.timedelta(minutes=10), {"login1": "pass", "n1": "pass"})
    a = availability(cycle=cycle, cluster=cluster)
    assert [(s.usable, s.compute_nodes, s.short) for s in a.slots] == [(True, 2, False), (False, 0, True),
                                                                         (False, 1, True)]
    assert a.value == pytest.approx(1 / 3)
    cluster.gpu_count = 0  # no count ordered: the most compute nodes any slot showed
    cluster.save()
    assert availability(cycle=cycle, cluster=cluster).value == pytest.approx(1 / 3)


def test_the_reliability_probes_downtime_lowers_availability():
    from probes.models import Finding
    from tests.costs.conftest import _run

    provider, cluster = provider_with_cluster("alpha")
    cycle = cycle_of(provider)
    samples(cluster, cycle, usable=4, unusable=0)
    run = _run(cluster, cycle, "node_replacement_time", DAY)
    Finding.objects.create(run=run, probe_id="node_replacement_time", probe_version="2", target="cluster",
                           metric="seconds", outcome="pass", value=25920.0)  # 1% of a 30-day period
    a = availability(cycle=cycle, cluster=cluster)
    assert a.downtime_s == 25920.0
    assert a.value == pytest.approx(0.99)


def test_out_of_range_targets_are_never_extrapolated():
    provider, cluster = provider_with_cluster("alpha")
    cycle = cycle_of(provider)
    price(cluster, cycle)
    samples(cluster, cycle, usable=2, unusable=0)
    serving(cluster, cycle, None, 0.5)
    [row] = cycle_costs(cycle)
    assert row.estimate is None and "outside the measured range" in row.reason
    serving(cluster, cycle, 80.0, 0.9)
    [row] = cycle_costs(cycle)
    assert row.known and row.throughput == 80.0 and any("outside the measured range" in n for n in row.notes)


def test_each_sweep_of_a_run_is_a_replicate_and_a_sweep_that_missed_the_target_is_not():
    provider, cluster = provider_with_cluster("alpha")
    cycle = cycle_of(provider)
    price(cluster, cycle)
    samples(cluster, cycle, usable=2, unusable=0)
    serving(cluster, cycle, 100.0, 0.9, sweeps=[(90.0, 1.0), (110.0, 0.8), (None, None)])
    [row] = cycle_costs(cycle)
    assert [(r.sweep, r.throughput, r.in_range) for r in row.replicates] == [(0, 90.0, True), (1, 110.0, True), (2, None, False)]
    assert row.known and row.estimate.replicates == 2
    assert row.throughput == pytest.approx(100.0) and row.goodput == pytest.approx(0.9)
    assert any("1 of 3 serving replicates" in n for n in row.notes)
    assert row.estimate.low <= row.estimate.point <= row.estimate.high and row.estimate.low < row.estimate.high


def test_a_run_whose_completions_were_canned_is_no_replicate():
    """serving_goodput marks a run whose completions did not depend on the prompt (prompt_dependent
    False, outcome fail, sweeps still in the evidence): its tokens were no inference, so no cost."""
    provider, cluster = provider_with_cluster("alpha")
    cycle = cycle_of(provider)
    price(cluster, cycle)
    samples(cluster, cycle, usable=2, unusable=0)
    serving(cluster, cycle, None, 1.0, sweeps=[(500.0, 1.0), (520.0, 1.0), (510.0, 1.0)], prompt_dependent=False)
    [row] = cycle_costs(cycle)
    assert not row.replicates and not row.known
    serving(cluster, cycle, 100.0, 0.9, sweeps=[(90.0, 1.0), (110.0, 0.8)], when=DAY + dt.timedelta(hours=1))
    [row] = cycle_costs(cycle)
    assert [r.throughput for r in row.replicates] == [90.0, 110.0] and row.known


def test_missing_price_and_missing_serving_are_named():
    provider, cluster = provider_with_cluster("alpha")
    cluster.list_price_per_gpu_hour = None
    cluster.save()
    cycle = cycle_of(provider)
    [row] = cycle_costs(cycle)
    assert row.reason == "no serving_goodput measurement in this cycle"
    serving(cluster, cycle, 80.0, 0.9)
    samples(cluster, cycle, usable=1, unusable=0)
    [row] = cycle_costs(cycle)
    assert row.reason == "no price recorded for this cluster in this cycle"


def test_the_list_price_is_the_default_base():
    from costs import services

    provider, cluster = provider_with_cluster("alpha")  # list price 2.50
    cycle = cycle_of(provider)
    services.cluster_price_record(cluster=cluster, cycle=cycle, base_source="price page")
    serving(cluster, cycle, 100.0, 1.0)
    samples(cluster, cycle, usable=1, unusable=0)
    [row] = cycle_costs(cycle)
    assert row.price.effective == pytest.approx(2.5) and row.price.components[0].name == "list"
    assert row.estimate.point == pytest.approx(engine.inferencex_cost_per_mtok(2.5, 100.0))


def test_the_owned_basis_is_a_second_cost():
    provider, cluster = provider_with_cluster("alpha")
    cycle = cycle_of(provider)
    price(cluster, cycle, "2.00", capex_per_gpu=Decimal("30000"), discount_rate=Decimal("0.08"),
          life_years=Decimal("5"), power_per_gpu_hour=Decimal("0.12"), owned_source="capex plan")
    serving(cluster, cycle, 100.0, 1.0)
    samples(cluster, cycle, usable=1, unusable=0)
    [row] = cycle_costs(cycle)
    owned = 30000 * engine.capital_recovery_factor(0.08, 5) / 8760 + 0.12
    assert row.price.owned == pytest.approx(owned)
    assert row.owned_estimate.point == pytest.approx(engine.cost_per_useful_mtok(owned, 100.0, 1.0, 1.0))


def test_clusters_are_ordered_cheapest_first_and_standings_flag_a_faster_rival():
    you, your_cluster = provider_with_cluster("you")
    rival, rival_cluster = provider_with_cluster("rival")
    first = cycle_of(you, rival, slug="c1", start=dt.date(2026, 9, 1), end=dt.date(2026, 9, 30))
    second = cycle_of(you, rival)
    # cost = P * 1e6 / (3600 * T): choose T for costs 10 -> 8 (you) and 12 -> 6 (rival) at P = 3.6
    for cycle, when, t_you, t_rival in ((first, dt.datetime(2026, 9, 2, tzinfo=dt.UTC), 100.0, 1000 / 12),
                                        (second, DAY, 125.0, 1000 / 6)):
        for cluster, t in ((your_cluster, t_you), (rival_cluster, t_rival)):
            price(cluster, cycle, "3.60")
            serving(cluster, cycle, t, 1.0, when=when)
            schedule = schedule_for(cluster, cycle)
            sample(cluster, cycle, schedule, when, {"n1": "pass"}, gpus={"n1": cluster.gpu_count})
    rows = cycle_costs(second)
    assert [r.provider_slug for r in rows] == ["rival", "you"]
    assert [round(r.estimate.point, 6) for r in rows] == [6.0, 8.0]
    standing = cost_standings(second)
    assert [(s.cycle, round(s.cost, 6), s.rank) for s in standing["you"]] == [("c1", 10.0, 1), ("c-2026-11", 8.0, 2)]
    assert standing["you"][-1].fell_behind and standing["you"][-1].overtaken_by == ("rival",)
    assert not standing["rival"][-1].fell_behind


def test_a_serving_run_that_measured_nothing_is_no_replicate():
    from probes.models import Finding
    from tests.costs.conftest import _run

    provider, cluster = provider_with_cluster("alpha")
    cycle = cycle_of(provider)
    price(cluster, cycle)
    samples(cluster, cycle, usable=1, unusable=0)
    for frontier, summary in (([], "no request of the sweep completed"),
                              ([{"x": 40.0, "y": 9.0}], "target below the measured range: not extrapolated")):
        Finding.objects.create(
            run=_run(cluster, cycle, "serving_goodput", DAY), probe_id="serving_goodput", probe_version="1",
            target="cluster", metric="throughput_at_target", outcome="error", unit="tok/s/gpu", summary=summary,
            evidence={"in_range": False, "frontier": frontier, "goodput": 0.0},
        )
        [row] = cycle_costs(cycle)
        expected = ("no serving_goodput measurement in this cycle" if not frontier
                    else "the target interactivity was outside the measured range in every serving replicate")
        assert row.reason == expected and len(row.replicates) == (1 if frontier else 0)
