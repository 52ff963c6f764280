"""Issue 27's properties: seed-free published tiers, the peer-windfall bound, declining never pays.

* The published tier (and the point tier, and whether hysteresis held it) is the same under
  every seed: gaps are confirmed on a fixed bootstrap stream, hysteresis reads that stream
  too; the seed moves only the stated P(tier) and the intervals.
* P(tier) reruns the whole rule on joint replicates (``tiering.joint_tiers``): per replicate
  it is the rule on noise-free values, so it equals ``point_tiers`` with certain pairs.
* Peer windfall: through gap sizes alone (the rule on noise-free values, which P(tier) runs
  per replicate) another provider's improvement raises a provider by at most two tiers, and
  two happens; through confirmation, a noisy improver that is the weakest pair of several
  cuts can drop all of them at once (the bound is then the four boundaries).
* A provider that declines every probe is rated (never Not rated) and never above the same
  provider measured at the worst anchor on every probe.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ratings.engine import score_cycle, tiering
from ratings.engine_types import TIERS, Outcome, PreviousTier
from tests.ratings.engine_builders import MEASURED_RANGES, cycle, cycles, measured, obs, rubric

RANK = {t: i for i, t in enumerate(TIERS)}
WORST_VALUE = {"busbw": 100.0, "ready-time": 3600.0, "detect-time": 600.0}  # the property rubric's worst anchors


def certain(x: np.ndarray) -> np.ndarray:
    return np.where(x[:, None] > x[None, :], 1.0, np.where(x[:, None] == x[None, :], 0.5, 0.0))


# 1. Seed independence of the published tier -----------------------------------------------------
@given(cycles(max_providers=6), st.integers(0, 2**32), st.data())
def test_the_published_tier_does_not_move_when_only_the_seed_changes(inp, other_seed, data):
    previous = tuple(
        PreviousTier(p, data.draw(st.sampled_from(TIERS))) for p in inp.providers if data.draw(st.booleans())
    )
    inp = dataclasses.replace(inp, previous_tiers=previous)
    a, b = score_cycle(inp), score_cycle(dataclasses.replace(inp, seed=other_seed))
    for pa, pb in zip(a.providers, b.providers, strict=True):
        assert (pa.tier, pa.tier_point, pa.hysteresis_held, pa.composite) == (
            pb.tier, pb.tier_point, pb.hysteresis_held, pb.composite)
    assert a.boundaries == b.boundaries


def test_the_issues_smallest_case_identical_evidence_and_two_seeds_give_one_tier():
    # Four providers whose top cut is confirmed near the threshold at B=40: before issue 27 the
    # seed alone decided whether the gap under the second one was a boundary.
    t = measured("t", best=10.0, worst=100.0)
    rows = [obs(p, "t", v) for p, vals in (("a", (10, 12, 30)), ("b", (20, 26, 40)), ("c", (40, 52, 60)),
                                           ("d", (58, 70, 90))) for v in vals]
    rub = rubric([t], bootstrap_size=40)
    tiers = {tuple(p.tier for p in score_cycle(cycle(rub, "abcd", rows, seed=s)).providers) for s in range(40)}
    assert len(tiers) == 1


# 2. P(tier) is the rule on joint replicates --------------------------------------------------------
@given(st.lists(st.lists(st.sampled_from([0.1 * k for k in range(11)]) | st.floats(0, 1), min_size=3, max_size=3),
                min_size=1, max_size=9),
       st.sampled_from([0.0, 0.02, 0.1]))
def test_each_joint_replicate_gets_the_rule_on_noise_free_values(columns, min_gap):
    reps = np.round(np.array(columns), 12)
    joint = tiering.joint_tiers(reps, min_gap)
    for b in range(reps.shape[1]):
        expected, _ = tiering.point_tiers(reps[:, b], certain(reps[:, b]), 0.9, min_gap)
        assert joint[:, b].tolist() == expected.tolist()


# 3. Peer windfall ---------------------------------------------------------------------------------
@given(st.lists(st.sampled_from([0.05 * k for k in range(21)]) | st.floats(0, 1), min_size=2, max_size=10),
       st.data(), st.sampled_from([0.0, 0.02, 0.1]))
def test_through_gap_sizes_a_peers_improvement_raises_another_by_at_most_two_tiers(values, data, min_gap):
    x = np.round(np.array(values), 12)
    i = data.draw(st.integers(0, len(x) - 1))
    y = x.copy()
    y[i] = np.round(x[i] + data.draw(st.floats(0, 1)), 12)
    before = tiering.joint_tiers(x[:, None], min_gap)[:, 0]
    after = tiering.joint_tiers(y[:, None], min_gap)[:, 0]
    gains = np.delete(before - after, i)
    assert gains.max(initial=0) <= 2


def test_two_tiers_of_windfall_through_gap_sizes_happen():
    # The improver leaves the bottom (its old gap merges into one larger gap below j) and lands
    # inside the top gap (splitting a chosen boundary above j): j loses two boundaries above it.
    x = np.array([0.71091465, 0.14325338, 0.74950883, 0.56311368, 0.57310272, 0.12258427, 0.10198779, 0.44724959])
    y = x.copy()
    y[7] = 0.65861438
    before = tiering.joint_tiers(x[:, None], 0.1)[:, 0]
    after = tiering.joint_tiers(y[:, None], 0.1)[:, 0]
    assert before[1] - after[1] == 2


def test_through_confirmation_a_noisy_peer_can_drop_several_boundaries_at_once():
    # i is the weakest pair of all three cuts above it; its improvement unconfirms all three.
    x = np.array([0.9, 0.7, 0.5, 0.3])  # a, b, c, i
    pairs = certain(x)
    pairs[0, 3], pairs[1, 3], pairs[2, 3] = 0.95, 0.93, 0.91
    pairs[3, :3] = 1 - pairs[:3, 3]
    before, _ = tiering.point_tiers(x, pairs, 0.9)
    pairs[0, 3], pairs[1, 3], pairs[2, 3] = 0.89, 0.88, 0.87
    pairs[3, :3] = 1 - pairs[:3, 3]
    y = x.copy()
    y[3] = 0.32
    after, _ = tiering.point_tiers(y, pairs, 0.9)
    assert before.tolist() == [0, 1, 2, 3] and after.tolist() == [0, 0, 0, 0]  # c gains two tiers


# 4. Declining never pays --------------------------------------------------------------------------
@given(cycles(complete=True, max_providers=4), st.data())
def test_declining_every_probe_is_rated_and_never_above_the_worst_measured_outcome(inp, data):
    source = data.draw(st.sampled_from(inp.providers))
    own = [r for r in inp.probe_observations if r.provider == source]
    declines = [dataclasses.replace(r, provider="declines", outcome=Outcome.DECLINED, value=None) for r in own]
    worst = [
        dataclasses.replace(r, provider="worst", outcome=Outcome.PASS, value=WORST_VALUE[r.criterion])
        if r.criterion in MEASURED_RANGES else dataclasses.replace(r, provider="worst", outcome=Outcome.FAIL)
        for r in own
    ]
    copies = {
        name: [dataclasses.replace(r, provider=name) for r in rows if r.provider == source]
        for name in ("declines", "worst") for rows in (inp.doc_scores + inp.feedback,)
    }
    result = score_cycle(dataclasses.replace(
        inp, providers=(*inp.providers, "declines", "worst"),
        probe_observations=inp.probe_observations + tuple(declines) + tuple(worst),
        doc_scores=inp.doc_scores + tuple(r for rows in copies.values() for r in rows if hasattr(r, "reviewer")),
        feedback=inp.feedback + tuple(r for rows in copies.values() for r in rows if hasattr(r, "respondent")),
    ))
    d, w = result.provider("declines"), result.provider("worst")
    assert w.rated and d.rated
    assert d.composite <= w.composite
    assert RANK[d.tier] >= RANK[w.tier] and RANK[d.tier_point] >= RANK[w.tier_point]


def test_a_provider_that_declines_every_probe_and_shows_nothing_else_is_underperforming():
    t, u = measured("t"), measured("u", area="security")
    rows = [obs("a", "t", 20.0), obs("a", "u", 30.0), obs("b", "t", None, Outcome.DECLINED),
            obs("b", "u", None, Outcome.DECLINED)]
    b = score_cycle(cycle(rubric([t, u], bootstrap_size=40), ["a", "b"], rows)).provider("b")
    assert (b.rated, b.tier, b.composite, b.coverage) == (True, "underperforming", 0.0, 0.0)


# 5. Pair probabilities skip only the certain pairs --------------------------------------------------
@given(st.lists(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(0, 1), min_size=4, max_size=4),
                min_size=1, max_size=8))
def test_pair_probabilities_equal_the_all_pairs_count_when_grids_do_not_overlap_or_touch(rows):
    grid = np.sort(np.array(rows), axis=1)
    pairs = tiering.pair_probabilities(grid)
    k = grid.shape[1]
    for u in range(len(grid)):
        for low in range(len(grid)):
            wins = ((grid[u][:, None] > grid[low][None, :]) + 0.5 * (grid[u][:, None] == grid[low][None, :])).sum()
            assert pairs[u, low] == wins / (k * k)
