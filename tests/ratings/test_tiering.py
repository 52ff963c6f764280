"""Table-driven tests of the tier rule (ratings.tiering) with hand-chosen composites."""

from __future__ import annotations

import numpy as np
import pytest

from ratings.engine_types import TierFloors
from ratings.tiering import BootstrapPairs, floor_tier_index, peer_ranks, tier_indices, tier_probabilities

FLOORS = TierFloors(platinum=0.8, gold=0.65, silver=0.5, bronze=0.4)


def certain(_u: int, _l: int) -> float:
    return 1.0


@pytest.mark.parametrize(
    ("composites", "expected"),
    [
        ([0.5], [0]),
        ([0.5, 0.5, 0.5], [0, 0, 0]),
        ([0.10, 0.11, 0.40, 0.41, 0.70, 0.71], [2, 2, 1, 1, 0, 0]),  # three clear groups
        ([0.71, 0.10, 0.40, 0.11, 0.70, 0.41], [0, 2, 1, 2, 0, 1]),  # order of input is irrelevant
        ([0.30, 0.30, 0.30, 0.90], [0, 0, 0, 0]),  # BIC: too few points to justify two groups
        ([0.20, 0.20, 0.90, 0.90], [1, 1, 0, 0]),
    ],
)
def test_peer_ranks_follow_the_natural_groups(composites, expected):
    ranks, _ = peer_ranks(np.array(composites), certain, 0.9)
    assert ranks.tolist() == expected


def test_a_boundary_without_bootstrap_support_is_dropped():
    composites = np.array([0.10, 0.11, 0.40, 0.41, 0.70, 0.71])

    def shaky(upper: int, lower: int) -> float:
        # Providers 4 (0.70) and 3 (0.41) sit across the top boundary and are hard to tell apart.
        return 0.85 if (upper, lower) == (4, 3) else 1.0

    ranks, breaks = peer_ranks(composites, shaky, 0.9)
    assert ranks.tolist() == [1, 1, 0, 0, 0, 0]
    assert [(b.probability, b.kept) for b in breaks] == [(1.0, True), (0.85, False)]


def test_tied_values_are_never_split_and_the_weakest_pair_decides():
    composites = np.array([0.2, 0.2, 0.9, 0.9])
    seen = []

    def record(upper: int, lower: int) -> float:
        seen.append((upper, lower))
        return 0.95 if (upper, lower) != (3, 1) else 0.5

    ranks, breaks = peer_ranks(composites, record, 0.9)
    assert sorted(seen) == [(2, 0), (2, 1), (3, 0), (3, 1)]  # every tied pair across the boundary
    assert ranks.tolist() == [0, 0, 0, 0] and breaks[0].probability == 0.5


@pytest.mark.parametrize(
    ("composite", "best_allowed"),
    [(0.95, 0), (0.80, 0), (0.7999, 1), (0.65, 1), (0.5, 2), (0.45, 3), (0.40, 3), (0.39, 4), (0.0, 4)],
)
def test_floor_index(composite, best_allowed):
    assert int(floor_tier_index(np.array([composite]), FLOORS)[0]) == best_allowed


def test_floors_and_caps_only_ever_lower_a_tier():
    composites = np.array([0.95, 0.70, 0.45, 0.30])
    # one group (no support for any boundary): everyone is top group, floors then spread them
    tiers, _ = tier_indices(composites, np.zeros(4, dtype=int), FLOORS, lambda u, low: 0.0, 0.9)
    assert tiers.tolist() == [0, 1, 3, 4]
    capped, _ = tier_indices(composites, np.array([3, 0, 0, 2]), FLOORS, lambda u, low: 0.0, 0.9)
    assert capped.tolist() == [3, 1, 3, 4]


def test_bootstrap_pair_probability_counts_ties_as_half():
    replicates = np.array([[0.5, 0.6, 0.7, 0.5], [0.5, 0.5, 0.5, 0.6]])
    pairs = BootstrapPairs(replicates)
    assert pairs(0, 1) == pytest.approx((2 + 0.5) / 4)
    assert pairs(1, 0) == pytest.approx((1 + 0.5) / 4)


def test_tier_probabilities_sum_to_one():
    tiers = np.array([[0, 0, 1, 1], [4, 4, 4, 3]], dtype=np.int8)
    probs = tier_probabilities(tiers)
    assert probs.tolist() == [[0.5, 0.5, 0, 0, 0], [0, 0, 0, 0.25, 0.75]]
