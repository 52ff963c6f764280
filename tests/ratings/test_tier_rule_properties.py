"""Issue 14's properties of the tier rule, each a Hypothesis property (200 examples under "ci").

What is promised, and tested here (ratings/engine/tiering.py proves each):

* own monotonicity: improving one provider's evidence on one criterion never lowers its
  composite, its interval bounds (composite and areas), its point or published tier, nor any
  cumulative tier probability P(tier at least t);
* a peer's improvement never changes another provider's composite, interval or criteria, and
  it can improve another's tier only by dropping a boundary above that provider, a boundary
  that was above the improver too or that the improver's own lower gap displaced;
* irrelevant providers: adding a provider every rated provider beats for sure never reorders
  the others and improves each other point tier by at most one (removing it: worsens by at
  most one); nothing changes unless four boundaries were chosen;
* identical evidence gives identical tier, probabilities and interval;
* no invented groups: when no two neighbours are confirmed apart there is one peer group.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from ratings.engine import score_cycle, tiering
from ratings.engine_types import TIERS, DocReviewScore, Outcome, PreviousTier, ProbeObservation, ScoringInput
from tests.ratings.engine_builders import cycles, obs, review

RANK = {t: i for i, t in enumerate(TIERS)}
BETTER_VALUE = {"busbw": 520.0, "ready-time": 10.0, "detect-time": 1.0}  # at or past the best anchors
OUTCOME_ORDER = [Outcome.DECLINED, Outcome.TIMEOUT, Outcome.PROVIDER_ERROR, Outcome.FAIL, Outcome.WARN, Outcome.PASS]


def cumulative(probabilities: tuple[tuple[str, float], ...]) -> list[float]:
    """P(tier at least as good as t) for t = Platinum ... Underperforming."""
    return list(np.cumsum([p for _, p in probabilities]))


def _improve(inp: ScoringInput, data: st.DataObject) -> tuple[ScoringInput, ScoringInput, str]:
    """(before, after, provider): one criterion of one provider gets better evidence."""
    kind = data.draw(st.sampled_from(["value", "outcome", "declined", "doc", "rating"]))
    probes = list(inp.probe_observations)
    if kind == "value":
        rows = [r for r in probes if r.criterion in BETTER_VALUE and r.value is not None]
        target = data.draw(st.sampled_from(rows))
        better = data.draw(st.floats(min(target.value, BETTER_VALUE[target.criterion]),
                                     max(target.value, BETTER_VALUE[target.criterion]), allow_nan=False))
        before, after = target, dataclasses.replace(target, value=better)
    elif kind in ("outcome", "declined"):
        rows = [r for r in probes if r.criterion == "isolation" and r.outcome != Outcome.ERROR]
        target = data.draw(st.sampled_from(rows))
        start = Outcome.DECLINED if kind == "declined" else target.outcome
        up = OUTCOME_ORDER[OUTCOME_ORDER.index(start):]
        before = dataclasses.replace(target, outcome=start)
        after = dataclasses.replace(target, outcome=data.draw(st.sampled_from(up)))
    elif kind == "doc":
        target = data.draw(st.sampled_from(list(inp.doc_scores)))
        before, after = target, dataclasses.replace(target, score=data.draw(st.floats(target.score, 4.0)))
        docs = list(inp.doc_scores)
        i = docs.index(target)
        return (dataclasses.replace(inp, doc_scores=tuple(docs)),
                dataclasses.replace(inp, doc_scores=(*docs[:i], after, *docs[i + 1:])), target.provider)
    else:
        target = data.draw(st.sampled_from(list(inp.feedback)))
        after = dataclasses.replace(target, rating=data.draw(st.integers(target.rating, 5)))
        fb = list(inp.feedback)
        i = fb.index(target)
        return inp, dataclasses.replace(inp, feedback=(*fb[:i], after, *fb[i + 1:])), target.provider
    i = probes.index(target)
    return (dataclasses.replace(inp, probe_observations=(*probes[:i], before, *probes[i + 1:])),
            dataclasses.replace(inp, probe_observations=(*probes[:i], after, *probes[i + 1:])), target.provider)


# 1. Own monotonicity --------------------------------------------------------------------------
@given(cycles(complete=True), st.data())
def test_improving_one_criterion_never_lowers_the_improvers_composite_interval_or_tier(inp, data):
    before_inp, after_inp, who = _improve(inp, data)
    previous = data.draw(st.none() | st.sampled_from(TIERS))
    if previous is not None:
        before_inp = dataclasses.replace(before_inp, previous_tiers=(PreviousTier(who, previous),))
        after_inp = dataclasses.replace(after_inp, previous_tiers=(PreviousTier(who, previous),))
    before, after = score_cycle(before_inp), score_cycle(after_inp)
    b, a = before.provider(who), after.provider(who)
    assume(b.rated)
    assert a.rated
    assert a.composite >= b.composite
    assert a.ci_low >= b.ci_low and a.ci_high >= b.ci_high
    for area_b, area_a in zip(b.areas, a.areas, strict=True):
        if area_b.ci_low is not None:
            assert area_a.ci_low >= area_b.ci_low and area_a.ci_high >= area_b.ci_high
    assert RANK[a.tier_point] <= RANK[b.tier_point]
    assert RANK[a.tier] <= RANK[b.tier]
    assert all(x >= y - 1e-12 for x, y in zip(cumulative(a.probabilities), cumulative(b.probabilities), strict=True))
    # ... and it moves nothing of anyone else's but, possibly, a tier (next test)
    for other in inp.providers:
        if other != who:
            ob, oa = before.provider(other), after.provider(other)
            assert (oa.composite, oa.ci_low, oa.ci_high, oa.criteria, oa.areas) == (
                ob.composite, ob.ci_low, ob.ci_high, ob.criteria, ob.areas)


# 2. Peers: the only ways another provider's tier can improve --------------------------------------
@st.composite
def fields(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, float, np.ndarray]:
    """Composites (ties likely), replicates, the improver, its shift and its extra noise-free lift."""
    n = draw(st.integers(2, 9))
    grid = draw(st.booleans())
    values = [draw(st.sampled_from([0.1 * k for k in range(11)])) if grid else draw(st.floats(0, 1)) for _ in range(n)]
    x = np.round(np.array(values), 12)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    noise = np.array([draw(st.sampled_from([0.0, 0.01, 0.05, 0.2])) for _ in range(n)])
    reps = x[:, None] + noise[:, None] * rng.standard_normal((n, 60))
    i = draw(st.integers(0, n - 1))
    shift = draw(st.sampled_from([0.0, 0.01, 0.1, 0.3]) | st.floats(0, 0.5))
    lift = rng.uniform(0, draw(st.sampled_from([0.0, 0.02])), 60)
    return x, reps, i, shift, lift


def _upper_sets(cuts: list[tiering.Cut]) -> dict[frozenset[int], tiering.Cut]:
    return {frozenset(_above(c, cuts)): c for c in cuts}


def _above(cut: tiering.Cut, cuts: list[tiering.Cut]) -> set[int]:
    """Everyone above a cut (cuts are listed top first)."""
    out: set[int] = set()
    for c in cuts:
        out |= set(c.upper)
        if c is cut:
            return out
    raise AssertionError("cut not in list")


@given(fields(), st.sampled_from([0.0, 0.02]))
def test_a_peers_improvement_improves_another_tier_only_by_dropping_a_boundary_it_touches(field, min_gap):
    x, reps, i, shift, lift = field
    after_x, after_reps = x.copy(), reps.copy()
    after_x[i] = np.round(x[i] + shift, 12)
    after_reps[i] = reps[i] + shift + lift
    before_p = tiering.pair_probabilities(tiering.marginal_grid(reps))
    after_p = tiering.pair_probabilities(tiering.marginal_grid(after_reps))
    tiers_b, cuts_b = tiering.point_tiers(x, before_p, 0.9, min_gap)
    tiers_a, cuts_a = tiering.point_tiers(after_x, after_p, 0.9, min_gap)
    assert tiers_a[i] <= tiers_b[i]  # own monotonicity, at the rule's level
    chosen_after = {u for u, c in _upper_sets(cuts_a).items() if c.chosen}
    chosen_before = {u for u, c in _upper_sets(cuts_b).items() if c.chosen}
    new_below_improver = {u for u in chosen_after - chosen_before if i in u and i in _runs_top(u, cuts_a)}
    for j in range(len(x)):
        if j == i or tiers_a[j] >= tiers_b[j]:
            continue
        dropped = [u for u in chosen_before - chosen_after if j not in u]  # boundaries above j that went
        assert dropped, "a tier improved without any boundary above it being dropped"
        assert any(i not in u for u in dropped) or new_below_improver


def _runs_top(upper: frozenset[int], cuts: list[tiering.Cut]) -> set[int]:
    """The lowest run of an upper set: the providers right above the cut."""
    for c in cuts:
        if frozenset(_above(c, cuts)) == upper:
            return set(c.upper)
    return set()


# 3. Irrelevant providers ------------------------------------------------------------------------
def _with_bottom_provider(inp: ScoringInput) -> ScoringInput:
    """Add W: worst anchors everywhere, docs 0, the isolation probe declined, no feedback."""
    w = "w-bottom"
    rows = [obs(w, "busbw", 50.0), obs(w, "ready-time", 5000.0), obs(w, "detect-time", 800.0),
            obs(w, "isolation", None, Outcome.DECLINED), review(w, "docs-metrics", "rev-0", 0.0)]
    return dataclasses.replace(
        inp, providers=(*inp.providers, w),
        probe_observations=inp.probe_observations + tuple(r for r in rows if isinstance(r, ProbeObservation)),
        doc_scores=inp.doc_scores + tuple(r for r in rows if isinstance(r, DocReviewScore)),
    )


def _lift_docs(inp: ScoringInput) -> ScoringInput:
    """Every doc score at least 1, so every provider's every replicate is above W's 0."""
    return dataclasses.replace(inp, doc_scores=tuple(dataclasses.replace(d, score=max(d.score, 1.0)) for d in inp.doc_scores))


@given(cycles(complete=True, max_providers=7))
def test_adding_a_provider_everyone_beats_never_reorders_and_moves_a_tier_by_at_most_one(inp):
    inp = _lift_docs(inp)
    before, after = score_cycle(inp), score_cycle(_with_bottom_provider(inp))
    w = after.provider("w-bottom")
    assert w.rated and w.composite == 0.0 and w.ci_high == 0.0
    for p in inp.providers:
        b, a = before.provider(p), after.provider(p)
        assert (a.composite, a.ci_low, a.ci_high) == (b.composite, b.ci_low, b.ci_high)
        if not b.rated:
            continue
        assert RANK[b.tier_point] - 1 <= RANK[a.tier_point] <= RANK[b.tier_point]
        assert all(x >= y - 1e-12 for x, y in zip(cumulative(a.probabilities), cumulative(b.probabilities), strict=True))
        if sum(x.kept for x in before.boundaries) < tiering.MAX_BOUNDARIES:
            assert a.tier_point == b.tier_point  # W's boundary displaces none of the chosen four


# 4. Identical evidence --------------------------------------------------------------------------
@given(cycles(), st.data())
def test_identical_evidence_gives_identical_tier_probabilities_and_interval(inp, data):
    source = data.draw(st.sampled_from(inp.providers))
    twin = data.draw(st.sampled_from(["aaa-first", "zzz-last", "twin"]))  # names sort either side
    rows: list[Any] = [*inp.probe_observations, *inp.doc_scores, *inp.feedback]
    copies = [dataclasses.replace(r, provider=twin) for r in rows if r.provider == source]
    bigger = dataclasses.replace(
        inp, providers=(*inp.providers, twin),
        probe_observations=inp.probe_observations + tuple(r for r in copies if hasattr(r, "outcome")),
        doc_scores=inp.doc_scores + tuple(r for r in copies if hasattr(r, "reviewer")),
        feedback=inp.feedback + tuple(r for r in copies if hasattr(r, "respondent")),
    )
    result = score_cycle(bigger)
    a, b = result.provider(source), result.provider(twin)
    assert (a.tier, a.tier_point, a.probabilities, a.composite, a.ci_low, a.ci_high, a.coverage, a.areas) == (
        b.tier, b.tier_point, b.probabilities, b.composite, b.ci_low, b.ci_high, b.coverage, b.areas)


# 5. No invented groups ----------------------------------------------------------------------------
@given(st.lists(st.floats(0.3, 0.7), min_size=2, max_size=12), st.integers(0, 2**32 - 1))
def test_a_field_without_confirmed_neighbours_is_one_group(values, seed):
    x = np.round(np.sort(np.array(values)), 12)
    rng = np.random.default_rng(seed)
    # every provider's bootstrap spread covers the whole field: nobody is confirmed apart
    reps = x[:, None] + 0.5 * rng.standard_normal((len(x), 200))
    pairs = tiering.pair_probabilities(tiering.marginal_grid(reps))
    assume(all(pairs[k + 1, k] < 0.9 for k in range(len(x) - 1)))
    tiers, cuts = tiering.point_tiers(x, pairs, 0.9)
    assert tiers.tolist() == [0] * len(x) and not any(c.chosen for c in cuts)
    for i in range(len(x)):
        assert np.all(tiering.conditional_tiers(x, pairs, 0.9, i, reps[i]) == 0)
