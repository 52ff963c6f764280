"""costs.engine: the arithmetic, its bad inputs, the bootstrap, standings, and its properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costs import engine as e

prices = st.floats(min_value=0.01, max_value=1000, allow_nan=False)
throughputs = st.floats(min_value=0.01, max_value=1e5, allow_nan=False)
shares = st.floats(min_value=0.01, max_value=1.0, allow_nan=False)
factors = st.floats(min_value=1.01, max_value=50, allow_nan=False)


def test_the_formula_on_a_worked_example():
    # $2/GPU-h, 1000 tok/s/GPU, 90% goodput, 95% availability
    cost = e.cost_per_useful_mtok(2.0, 1000.0, 0.9, 0.95)
    assert cost == pytest.approx(2.0 * 1e6 / (3600 * 1000 * 0.9 * 0.95))
    assert cost == pytest.approx(0.64977, rel=1e-4)


def test_it_equals_inferencex_at_full_goodput_and_availability():
    assert e.cost_per_useful_mtok(2.5, 800.0, 1.0, 1.0) == pytest.approx(e.inferencex_cost_per_mtok(2.5, 800.0))


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, "2"])
@pytest.mark.parametrize("where", ["price", "throughput", "goodput", "availability"])
def test_bad_inputs_raise_a_clear_error(where, bad):
    args = {"price": 2.0, "throughput": 100.0, "goodput": 0.9, "availability": 0.9, where: bad}
    with pytest.raises(e.CostInputError, match=where):
        e.cost_per_useful_mtok(**args)


def test_a_share_above_one_is_refused():
    with pytest.raises(e.CostInputError, match=r"goodput must be in \(0, 1\]"):
        e.cost_per_useful_mtok(2.0, 100.0, 1.2, 1.0)


def test_effective_price_adds_the_extras_and_needs_one_sourced_base():
    parts = [e.PriceComponent("list", 2.0, "price page"), e.PriceComponent("storage", 0.1, "storage page"),
             e.PriceComponent("egress", 0.05, "egress page"), e.PriceComponent("support", 0.2, "support plan")]
    assert e.effective_price(parts) == pytest.approx(2.35)
    with pytest.raises(e.CostInputError, match="exactly one base"):
        e.effective_price(parts[1:])
    with pytest.raises(e.CostInputError, match="exactly one base"):
        e.effective_price([*parts, e.PriceComponent("negotiated", 1.5, "contract")])
    with pytest.raises(e.CostInputError, match="no source"):
        e.effective_price([e.PriceComponent("list", 2.0, " ")])
    with pytest.raises(e.CostInputError, match="'storage' must not be negative"):
        e.effective_price([parts[0], e.PriceComponent("storage", -0.1, "x")])
    with pytest.raises(e.CostInputError, match="'list' must be greater than 0"):
        e.effective_price([e.PriceComponent("list", 0.0, "x")])


def test_capital_recovery_factor_matches_the_textbook():
    # 8% over 5 years: 0.250456...
    assert e.capital_recovery_factor(0.08, 5) == pytest.approx(0.2504564545)
    assert e.capital_recovery_factor(0.0, 4) == pytest.approx(0.25)
    with pytest.raises(e.CostInputError, match="service life"):
        e.capital_recovery_factor(0.08, 0)
    with pytest.raises(e.CostInputError, match="discount rate"):
        e.capital_recovery_factor(-0.01, 5)


def test_owned_basis_annualises_capex_and_adds_running_costs():
    basis = e.OwnedBasis(capex_per_gpu=30000, discount_rate=0.08, life_years=5, power_per_gpu_hour=0.12,
                         space_per_gpu_hour=0.05, staff_per_gpu_hour=0.08, hours_per_year=8760, source="capex plan")
    expected = 30000 * e.capital_recovery_factor(0.08, 5) / 8760 + 0.25
    assert e.owned_price(basis) == pytest.approx(expected)
    assert e.owned_price(basis) == pytest.approx(1.1077, rel=1e-3)
    with pytest.raises(e.CostInputError, match="hours in service"):
        e.owned_price(e.OwnedBasis(30000, 0.08, 5, hours_per_year=9000, source="x"))
    with pytest.raises(e.CostInputError, match="no source"):
        e.owned_price(e.OwnedBasis(30000, 0.08, 5))


def test_the_bootstrap_is_seeded_and_brackets_the_point():
    reps = [e.Replicate(100.0, 0.9), e.Replicate(110.0, 0.95), e.Replicate(95.0, 0.85)]
    samples = [1.0] * 18 + [0.0, 1.0]
    one = e.cost_estimate(2.0, reps, samples, seed=7)
    two = e.cost_estimate(2.0, reps, samples, seed=7)
    assert one == two
    assert one.low <= one.point <= one.high
    assert one.point == pytest.approx(e.cost_per_useful_mtok(2.0, 305 / 3, 0.9, 0.95))
    assert e.cost_estimate(2.0, reps, samples, seed=8) != one


def test_no_samples_means_unknown_never_assumed():
    with pytest.raises(e.CostInputError, match="availability is unknown"):
        e.cost_estimate(2.0, [e.Replicate(100.0, 1.0)], [], seed=1)
    with pytest.raises(e.CostInputError, match="throughput and goodput are unknown"):
        e.cost_estimate(2.0, [], [1.0], seed=1)
    with pytest.raises(e.CostInputError, match="never usable"):
        e.cost_estimate(2.0, [e.Replicate(100.0, 1.0)], [0.0, 0.0], seed=1)


def test_an_unbounded_upper_end_is_none_not_infinity():
    # one of two samples unusable, and one of two replicates with no goodput: many draws have no useful output
    est = e.cost_estimate(2.0, [e.Replicate(100.0, 0.0), e.Replicate(100.0, 1.0)], [0.0, 1.0], seed=3)
    assert est.high is None and math.isfinite(est.low)


def test_standings_flag_a_provider_that_improved_but_fell_behind():
    cycles = [e.CycleCosts("c1", {"you": 10.0, "rival": 12.0, "slow": 20.0}),
              e.CycleCosts("c2", {"you": 8.0, "rival": 6.0, "slow": 19.0})]
    result = e.standings(cycles)
    you = result["you"][1]
    assert (you.cost, you.rank, you.previous_rank, you.improved, you.fell_behind) == (8.0, 2, 1, True, True)
    assert you.overtaken_by == ("rival",)
    assert not result["rival"][1].fell_behind and result["rival"][1].rank == 1
    # slow improved too, but nobody behind it overtook it
    assert result["slow"][1].improved and not result["slow"][1].fell_behind


def test_standings_do_not_flag_a_provider_that_got_worse_or_is_unknown():
    cycles = [e.CycleCosts("c1", {"you": 10.0, "rival": 12.0}), e.CycleCosts("c2", {"you": 11.0, "rival": 6.0}),
              e.CycleCosts("c3", {"you": None, "rival": 5.0})]
    result = e.standings(cycles)
    assert not result["you"][1].fell_behind and not result["you"][1].improved
    assert result["you"][2].rank is None and result["you"][2].peers == 1


# --- properties (the ci profile runs 200 examples each) -------------------------------------
@given(prices, throughputs, shares, shares, factors)
def test_cost_falls_as_throughput_rises(p, t, g, a, k):
    assert e.cost_per_useful_mtok(p, t * k, g, a) < e.cost_per_useful_mtok(p, t, g, a)


@given(prices, throughputs, shares, shares, st.floats(min_value=0.01, max_value=0.99))
def test_cost_falls_as_goodput_or_availability_rise(p, t, g, a, shrink):
    assert e.cost_per_useful_mtok(p, t, g, a) < e.cost_per_useful_mtok(p, t, g * shrink, a)
    assert e.cost_per_useful_mtok(p, t, g, a) < e.cost_per_useful_mtok(p, t, g, a * shrink)


@given(prices, throughputs, shares, shares, factors)
def test_cost_rises_with_price(p, t, g, a, k):
    assert e.cost_per_useful_mtok(p * k, t, g, a) > e.cost_per_useful_mtok(p, t, g, a)


@given(prices, throughputs)
def test_cost_equals_inferencex_at_g_and_a_one(p, t):
    assert e.cost_per_useful_mtok(p, t, 1.0, 1.0) == pytest.approx(p / (t * 3600 / 1e6), rel=1e-12)


@given(prices, throughputs, shares, shares, st.integers(min_value=1, max_value=72))
def test_cost_is_invariant_to_units(p, t, g, a, gpus_per_node):
    # per node: the node's price and the node's throughput, both gpus_per_node times the per-GPU figures
    per_gpu = e.cost_per_useful_mtok(p, t, g, a)
    assert e.cost_per_useful_mtok(p * gpus_per_node, t * gpus_per_node, g, a) == pytest.approx(per_gpu, rel=1e-9)


@given(st.lists(st.tuples(throughputs, shares), min_size=1, max_size=6),
       st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=20), prices, st.integers(0, 2**31))
def test_the_interval_is_ordered_and_seeded(reps, samples, p, seed):
    samples = [*samples, 1.0]
    replicates = [e.Replicate(t, g) for t, g in reps]
    est = e.cost_estimate(p, replicates, samples, seed=seed, bootstrap=200)
    assert est.low <= est.point * (1 + 1e-9)
    assert est.high is None or est.point <= est.high * (1 + 1e-9)
    assert e.cost_estimate(p, replicates, samples, seed=seed, bootstrap=200) == est


@given(st.dictionaries(st.sampled_from("abcdef"), st.floats(min_value=0.01, max_value=100), min_size=1),
       st.dictionaries(st.sampled_from("abcdef"), st.floats(min_value=0.01, max_value=100), min_size=1))
def test_the_flag_means_someone_behind_overtook_an_improver(c1, c2):
    result = e.standings([e.CycleCosts("c1", c1), e.CycleCosts("c2", c2)])
    for name, (_, now) in result.items():
        if now.fell_behind:
            assert now.improved and now.cost < now.previous_cost
            for rival in now.overtaken_by:
                assert c1[rival] > c1[name] and c2[rival] < c2[name]
        ranks = [s.rank for s in (r[1] for r in result.values()) if s.rank is not None]
        assert min(ranks) == 1
