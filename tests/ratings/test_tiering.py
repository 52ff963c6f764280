"""Table-driven tests of the tier rule (ratings.engine.tiering) with hand-chosen composites."""

from __future__ import annotations

import numpy as np
import pytest

from ratings.engine.tiering import (
    conditional_tiers,
    floor_tier_index,
    marginal_grid,
    pair_probabilities,
    point_tiers,
    publish,
    tier_probabilities,
)
from ratings.engine_types import TierFloors

FLOORS = TierFloors(platinum=0.8, gold=0.65, silver=0.5, bronze=0.4)


def certain(composites: list[float]) -> np.ndarray:
    """P for noise-free providers: the larger composite wins for sure, equal ones tie."""
    x = np.array(composites)
    return np.where(x[:, None] > x[None, :], 1.0, np.where(x[:, None] == x[None, :], 0.5, 0.0))


@pytest.mark.parametrize(
    ("composites", "expected"),
    [
        ([0.5], [0]),
        ([0.5, 0.5, 0.5], [0, 0, 0]),
        ([0.10, 0.11, 0.40, 0.41, 0.70, 0.71], [4, 4, 3, 2, 1, 0]),  # two large gaps, then the higher small ones
        ([0.71, 0.10, 0.40, 0.11, 0.70, 0.41], [0, 4, 3, 4, 1, 2]),  # the order of input is irrelevant
        ([0.30, 0.30, 0.30, 0.90], [1, 1, 1, 0]),  # a confirmed gap is a boundary, however few are below
        ([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], [4, 4, 4, 3, 2, 1, 0]),  # at most four boundaries, largest gaps, ties to the higher
    ],
)
def test_boundaries_are_the_largest_confirmed_gaps(composites, expected):
    tiers, _ = point_tiers(np.array(composites), certain(composites), 0.9)
    assert tiers.tolist() == expected


def test_a_gap_under_the_minimum_is_no_boundary_even_when_certain():
    composites = [0.10, 0.11, 0.40, 0.41, 0.70, 0.71]
    tiers, _ = point_tiers(np.array(composites), certain(composites), 0.9, min_gap=0.02)
    assert tiers.tolist() == [2, 2, 1, 1, 0, 0]


def test_a_gap_the_bootstrap_does_not_confirm_is_no_boundary():
    composites = [0.10, 0.11, 0.40, 0.41, 0.70, 0.71]
    pairs = certain(composites)
    pairs[4, 3] = 0.85  # 0.70 and 0.41 sit across the top gap and are hard to tell apart
    tiers, cuts = point_tiers(np.array(composites), pairs, 0.9, min_gap=0.02)
    assert tiers.tolist() == [1, 1, 0, 0, 0, 0]
    top = next(c for c in cuts if c.lower_value == 0.41)
    assert (top.confidence, top.confirmed, top.chosen) == (0.85, False, False)


def test_confirmation_takes_the_weakest_pair_across_the_cut_not_only_the_neighbours():
    composites = [0.2, 0.3, 0.9]
    pairs = certain(composites)
    pairs[2, 0] = 0.6  # the bottom provider is so noisy that the top one is not sure to beat it
    tiers, _ = point_tiers(np.array(composites), pairs, 0.9)
    # the noisy bottom provider sits below both cuts, so neither is confirmed: one group
    assert tiers.tolist() == [0, 0, 0]
    pairs[2, 0] = 1.0
    pairs[1, 0] = 0.6  # now only the lower cut has a weak pair
    tiers, _ = point_tiers(np.array(composites), pairs, 0.9)
    assert tiers.tolist() == [1, 1, 0]


def test_equal_composites_are_never_split():
    composites = [0.2, 0.2, 0.9, 0.9]
    tiers, cuts = point_tiers(np.array(composites), certain(composites), 0.9)
    assert tiers.tolist() == [1, 1, 0, 0]
    assert [(c.upper, c.lower) for c in cuts] == [((2, 3), (0, 1))]


def test_the_replicated_rule_equals_the_point_rule_at_the_point_and_falls_with_the_value():
    rng = np.random.default_rng(3)
    composites = np.array([0.31, 0.35, 0.52, 0.55, 0.8, 0.81])
    reps = composites[:, None] + 0.02 * rng.standard_normal((6, 200))
    pairs = pair_probabilities(marginal_grid(reps))
    tiers, _ = point_tiers(composites, pairs, 0.9)
    values = np.linspace(0.0, 1.0, 301)
    for i in range(6):
        assert conditional_tiers(composites, pairs, 0.9, i, composites[i : i + 1])[0] == tiers[i]
        along = conditional_tiers(composites, pairs, 0.9, i, values)
        assert np.all(np.diff(along) <= 0)
        assert np.array_equal(along, conditional_tiers(composites, pairs, 0.9, i, values, bisect=False))


@pytest.mark.parametrize(
    ("composite", "best_allowed"),
    [(0.95, 0), (0.80, 0), (0.7999, 1), (0.65, 1), (0.5, 2), (0.45, 3), (0.40, 3), (0.39, 4), (0.0, 4)],
)
def test_floor_index(composite, best_allowed):
    assert int(floor_tier_index(np.array([composite]), FLOORS)[0]) == best_allowed


def test_pair_probabilities_count_ties_as_half_and_are_complementary():
    replicates = np.array([[0.5, 0.6, 0.7, 0.5], [0.5, 0.5, 0.5, 0.6]])
    pairs = pair_probabilities(marginal_grid(replicates))
    # independent draws: 16 pairs, 0 wins for row 1 against 0.5s ...
    wins = sum((a > b) + 0.5 * (a == b) for a in replicates[0] for b in replicates[1]) / 16
    assert pairs[0, 1] == pytest.approx(wins)
    assert pairs[0, 1] + pairs[1, 0] == pytest.approx(1.0)
    assert pairs[0, 0] == 0.5


def test_the_grid_keeps_the_order_of_pointwise_larger_replicates():
    rng = np.random.default_rng(1)
    reps = rng.uniform(size=(3, 2000))
    better = reps.copy()
    better[0] += rng.uniform(0, 0.1, 2000)
    before = pair_probabilities(marginal_grid(reps))
    after = pair_probabilities(marginal_grid(better))
    assert np.all(after[0, 1:] >= before[0, 1:]) and np.all(after[1:, 0] <= before[1:, 0])


def test_tier_probabilities_sum_to_one():
    tiers = np.array([[0, 0, 1, 1], [4, 4, 4, 3]], dtype=np.int8)
    probs = tier_probabilities(tiers)
    assert probs.tolist() == [[0.5, 0.5, 0, 0, 0], [0, 0, 0, 0.25, 0.75]]


@pytest.mark.parametrize(
    ("point", "probs", "previous", "expected_tier", "held"),
    [
        (2, [0.1, 0.15, 0.75, 0, 0], 1, 1, True),  # fell to Silver, but P(Gold or better) = 0.25 >= 0.2
        (2, [0.05, 0.1, 0.85, 0, 0], 1, 2, False),  # P(Gold or better) = 0.15: the change goes through
        (0, [0.75, 0.15, 0.1, 0, 0], 1, 1, True),  # rose to Platinum, but P(Gold or worse) = 0.25
        (0, [0.9, 0.05, 0.05, 0, 0], 1, 0, False),
        (1, [0.1, 0.9, 0, 0, 0], 1, 1, False),
    ],
)
def test_hysteresis_reads_cumulative_probabilities(point, probs, previous, expected_tier, held):
    tier, was_held, _, _ = publish(point, np.array(probs), previous, 0.2, 0.7, 0)
    assert (tier, was_held) == (expected_tier, held)
