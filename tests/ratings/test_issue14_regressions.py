"""Issue 14's regressions R1-R5 with the issue's own numbers, gates, exact coverage and `declined`.

R1-R2 use one doc-review criterion scored by two reviewers who agree, so the evidence carries
no resampling noise: every order is certain and only the rule decides.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratings.engine import score_cycle, tiering
from ratings.engine_types import TIERS, Outcome, ProbeObservation
from tests.ratings.engine_builders import (
    RV,
    cycle,
    cycles,
    doc,
    feedback,
    measured,
    obs,
    pass_rate,
    rating,
    review,
    rubric,
)

RANK = {t: i for i, t in enumerate(TIERS)}
DOC = doc("d", "monitoring")


def doc_cycle(scores: dict[str, float], **params):  # type: ignore[no-untyped-def]
    rows = [review(p, "d", r, s) for p, s in scores.items() for r in ("r1", "r2")]
    return cycle(rubric([DOC], **params), list(scores), rows, seed=1)


def tiers(result) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {p.provider: p.tier for p in result.providers}


# R1 -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("min_gap", [0.0, 0.02])
def test_r1_raising_b_from_3_55_to_3_60_never_lowers_bs_tier(min_gap):
    before = score_cycle(doc_cycle({"A": 4.0, "B": 3.55, "C": 3.65}, boundary_min_gap=min_gap))
    after = score_cycle(doc_cycle({"A": 4.0, "B": 3.60, "C": 3.65}, boundary_min_gap=min_gap))
    assert RANK[after.provider("B").tier] <= RANK[before.provider("B").tier]
    assert after.provider("B").composite > before.provider("B").composite
    if min_gap == 0.0:  # every certain gap is a boundary: A | C | B, before and after
        assert tiers(before) == tiers(after) == {"A": "platinum", "C": "gold", "B": "silver"}
    else:  # B 0.9 and C 0.9125 are 0.0125 apart after the raise: under the minimum gap, one group
        assert tiers(before) == {"A": "platinum", "C": "gold", "B": "silver"}
        assert tiers(after) == {"A": "platinum", "C": "gold", "B": "gold"}


# R2 -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("min_gap", [0.0, 0.02])
def test_r2_raising_d_to_4_never_raises_a(min_gap):
    before = score_cycle(doc_cycle({"A": 3.25, "B": 3.0, "C": 3.75, "D": 3.75}, boundary_min_gap=min_gap))
    after = score_cycle(doc_cycle({"A": 3.25, "B": 3.0, "C": 3.75, "D": 4.0}, boundary_min_gap=min_gap))
    for p in "ABC":
        assert RANK[after.provider(p).tier] >= RANK[before.provider(p).tier]
    assert tiers(before) == {"C": "platinum", "D": "platinum", "A": "gold", "B": "silver"}
    assert tiers(after) == {"D": "platinum", "C": "gold", "A": "silver", "B": "bronze"}


def test_r2_a_move_of_0_001_at_the_bottom_moves_no_one_above_it():
    # The noisy case: a Bronze provider's composite moves by 0.001; with the old rule
    # the number of groups changed and five unrelated providers went Gold -> Platinum.
    rng = np.random.default_rng(7)
    x = np.round(np.concatenate((rng.uniform(0.85, 0.9, 5), rng.uniform(0.7, 0.75, 5), [0.45])), 12)
    reps = x[:, None] + 0.01 * rng.standard_normal((11, 400))
    pairs = tiering.pair_probabilities(tiering.marginal_grid(reps))
    before, _ = tiering.point_tiers(x, pairs, 0.9)
    moved = x.copy()
    moved[10] += 0.001
    moved_reps = reps.copy()
    moved_reps[10] += 0.001
    after, _ = tiering.point_tiers(moved, tiering.pair_probabilities(tiering.marginal_grid(moved_reps)), 0.9)
    assert after[:10].tolist() == before[:10].tolist()
    assert max(before[:5]) < min(before[5:10])  # the two real groups are apart


# R3 -----------------------------------------------------------------------------------------------
ISO = pass_rate("iso", "security", is_gate=True, gate_cap_tier="bronze")
T = measured("t", "provisioning", best=10.0, worst=100.0)


def test_r3_one_failing_isolation_replicate_of_three_caps_the_tier_and_names_it():
    rows = [obs("a", "t", 10.0),
            ProbeObservation(RV, "a", "iso", Outcome.PASS, ref="finding 11"),
            ProbeObservation(RV, "a", "iso", Outcome.FAIL, ref="finding 12"),
            ProbeObservation(RV, "a", "iso", Outcome.PASS, ref="finding 13")]
    a = score_cycle(cycle(rubric([T, ISO], bootstrap_size=200), ["a"], rows)).provider("a")
    iso = next(c for c in a.criteria if c.key == "iso")
    assert iso.score == pytest.approx(0.6)  # (2+1)/(3+2): over the 0.5 threshold, and still a breach
    assert (a.tier, iso.gate_failed) == ("bronze", True)
    (cap,) = a.gate_caps
    assert (cap.reason, cap.replicate, cap.replicates, cap.finding) == ("failed_replicate", 2, 3, "finding 12")
    assert "gate_capped" in a.flags


def test_a_critical_finding_in_any_replicate_fails_a_gate_whatever_its_outcome():
    rows = [obs("a", "t", 10.0),
            ProbeObservation(RV, "a", "iso", Outcome.PASS, ref="finding 1"),
            ProbeObservation(RV, "a", "iso", Outcome.PASS, ref="finding 2", critical=True),
            ProbeObservation(RV, "a", "iso", Outcome.PASS, ref="finding 3")]
    a = score_cycle(cycle(rubric([T, ISO], bootstrap_size=100), ["a"], rows)).provider("a")
    assert a.tier == "bronze"
    assert (a.gate_caps[0].reason, a.gate_caps[0].finding, a.gate_caps[0].replicate) == ("critical", "finding 2", 2)
    # every bootstrap replicate carries the cap: a breach seen once is not resampled away
    assert dict(a.probabilities)["bronze"] + dict(a.probabilities)["underperforming"] == 1.0


# R4 -----------------------------------------------------------------------------------------------
def test_r4_coverage_exactly_at_the_floor_counts():
    crit = [measured("a1", "area-a"), measured("b1", "area-b", weight=0.1), measured("b2", "area-b", weight=0.2),
            measured("b3", "area-b", weight=0.3)]
    rub = rubric(crit, area_coverage_floor=0.5, coverage_floor=0.6, bootstrap_size=50)
    res = score_cycle(cycle(rub, ["p"], [obs("p", "a1", 20.0), obs("p", "b3", 20.0)]))
    p = res.provider("p")
    area_b = next(a for a in p.areas if a.key == "area-b")
    assert 0.3 / (0.1 + 0.2 + 0.3) < 0.5  # what float arithmetic says
    assert (area_b.coverage, area_b.measured) == (0.5, True)
    assert (p.coverage, p.rated) == (0.75, True)
    # one step under the floor is under it
    below = rubric([*crit[:3], dataclasses.replace(crit[3], weight=0.29)], area_coverage_floor=0.5, bootstrap_size=50)
    assert not next(a for a in score_cycle(cycle(below, ["p"], [obs("p", "a1", 20.0), obs("p", "b3", 20.0)]))
                    .provider("p").areas if a.key == "area-b").measured


# R5 -----------------------------------------------------------------------------------------------
def test_r5_a_clearly_worse_provider_moves_no_ones_feedback_score():
    f = feedback("f", "provisioning")
    rub = rubric([f], bootstrap_size=50, feedback_prior_strength=5.0, feedback_prior_mean=3.0)
    rows = [rating("A", "f", "a0", 5)] + [rating("B", "f", f"b{i}", 4) for i in range(8)]
    rows += [rating("B", "f", "b8", 5), rating("B", "f", "b9", 5)]
    worse = [rating("W", "f", f"w{i}", 1) for i in range(5)]
    without = score_cycle(cycle(rub, ["A", "B"], rows))
    with_w = score_cycle(cycle(rub, ["A", "B", "W"], rows + worse))
    for p in "AB":
        assert with_w.provider(p).composite == without.provider(p).composite
    # (v*R + m*C)/(v+m) onto [0, 1]: A (5 + 15)/6 = 3.333, B (42 + 15)/15 = 3.8
    assert without.provider("A").composite == pytest.approx((20 / 6 - 1) / 4)
    assert without.provider("B").composite == pytest.approx((3.8 - 1) / 4)
    assert without.provider("A").composite < without.provider("B").composite


# declined (issue 13) --------------------------------------------------------------------------------
DISRUPTIVE = ("detect-time", "isolation")


@given(cycles(complete=True), st.data())
def test_a_provider_that_declines_the_disruptive_probes_cannot_outrank_itself_allowing_them(inp, data):
    source = data.draw(st.sampled_from(inp.providers))
    decliner = "declines"
    copies = [dataclasses.replace(r, provider=decliner) for r in inp.probe_observations if r.provider == source]
    copies = [dataclasses.replace(r, outcome=Outcome.DECLINED, value=None) if r.criterion in DISRUPTIVE else r
              for r in copies]
    docs = tuple(dataclasses.replace(r, provider=decliner) for r in inp.doc_scores if r.provider == source)
    fb = tuple(dataclasses.replace(r, provider=decliner) for r in inp.feedback if r.provider == source)
    result = score_cycle(dataclasses.replace(
        inp, providers=(*inp.providers, decliner), probe_observations=inp.probe_observations + tuple(copies),
        doc_scores=inp.doc_scores + docs, feedback=inp.feedback + fb,
    ))
    allows, declines = result.provider(source), result.provider(decliner)
    assert declines.coverage < allows.coverage
    assert {c.key for c in declines.criteria if c.status == "declined"} == set(DISRUPTIVE)
    if allows.rated:
        # issue 27: declining never buys "Not rated"; it is rated, never above the one that allows
        assert declines.rated
        assert declines.composite <= allows.composite
        assert declines.composite_pessimistic <= allows.composite_pessimistic
        assert RANK[declines.tier] >= RANK[allows.tier]


def test_declined_counts_at_the_worst_anchor_and_stays_in_the_coverage_denominator():
    rub = rubric([T, ISO], bootstrap_size=50, coverage_floor=0.5)
    declined = score_cycle(cycle(rub, ["a"], [obs("a", "t", 10.0), obs("a", "iso", None, Outcome.DECLINED)])).provider("a")
    not_applicable = score_cycle(cycle(rub, ["a"], [obs("a", "t", 10.0), obs("a", "iso", None, Outcome.NOT_APPLICABLE)])).provider("a")
    iso = next(c for c in declined.criteria if c.key == "iso")
    assert (iso.status, iso.score) == ("declined", 0.0)
    assert declined.coverage == 0.5 and not_applicable.coverage == 1.0
    assert declined.composite == 0.5 and not_applicable.composite == 1.0  # (1 + 0)/2 against 1
    assert "declined:iso" in declined.flags and declined.tier == "bronze"  # and the gate fails
