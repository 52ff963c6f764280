"""Hypothesis property tests: the invariants of research/scoring.md section 6, on random cycles.

Every test runs under the "ci" profile of tests/conftest.py (200 examples, no deadline). The
bootstrap is small (B = 40) so that 200 examples stay quick; the invariants do not depend on B.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ratings.engine import canonical_json, content_hash, result_to_dict, score_cycle
from ratings.engine_types import (
    NOT_RATED,
    TIERS,
    MixedRubricVersionError,
    Outcome,
    ProbeObservation,
    ScoringInput,
)
from tests.ratings.engine_builders import PROPERTY_CRITERIA, cycles, obs

TIER_INDEX = {t: i for i, t in enumerate(TIERS)}


def rank(tier: str) -> int:
    return TIER_INDEX[tier]


def providers_view(result: Any, exclude: set[str] = frozenset()) -> dict[str, Any]:
    """Per-provider outputs, keyed by provider, for comparing two runs."""
    data = result_to_dict(result)
    return {p["provider"]: p for p in data["providers"] if p["provider"] not in exclude}


def rows_of(inp: ScoringInput) -> list[Any]:
    return [*inp.probe_observations, *inp.doc_scores, *inp.feedback]


def with_rows(inp: ScoringInput, rows: list[Any]) -> ScoringInput:
    from ratings.engine_types import DocReviewScore, FeedbackResponse

    return dataclasses.replace(
        inp,
        probe_observations=tuple(r for r in rows if isinstance(r, ProbeObservation)),
        doc_scores=tuple(r for r in rows if isinstance(r, DocReviewScore)),
        feedback=tuple(r for r in rows if isinstance(r, FeedbackResponse)),
    )


# 1. Determinism --------------------------------------------------------------------------------
@given(cycles())
def test_same_inputs_and_seed_give_the_same_snapshot_hash(inp):
    first, second = score_cycle(inp), score_cycle(inp)
    assert canonical_json(first) == canonical_json(second)
    assert content_hash(first) == content_hash(second)


# 2. Permutation invariance --------------------------------------------------------------------
@given(cycles(), st.randoms(use_true_random=False))
def test_shuffling_providers_and_evidence_rows_changes_nothing(inp, rnd):
    providers = list(inp.providers)
    rnd.shuffle(providers)
    probe, docs, fb = list(inp.probe_observations), list(inp.doc_scores), list(inp.feedback)
    for rows in (probe, docs, fb):
        rnd.shuffle(rows)
    shuffled = dataclasses.replace(
        inp, providers=tuple(providers), probe_observations=tuple(probe), doc_scores=tuple(docs), feedback=tuple(fb)
    )
    assert content_hash(score_cycle(shuffled)) == content_hash(score_cycle(inp))


# 3. Self-monotonicity ---------------------------------------------------------------------------
BETTER = {"busbw": 520.0, "ready-time": 10.0, "detect-time": 1.0}


@given(cycles(complete=True), st.data())
def test_a_better_raw_value_never_lowers_that_providers_scores_or_tier(inp, data):
    probe_rows = [r for r in inp.probe_observations if r.criterion in BETTER or r.outcome != Outcome.PASS]
    assume(probe_rows)
    target = data.draw(st.sampled_from(probe_rows))
    if target.criterion in BETTER:
        improved = dataclasses.replace(target, value=BETTER[target.criterion])
    else:  # fail / warn / provider_error / timeout -> pass
        improved = dataclasses.replace(target, outcome=Outcome.PASS)
    rows = list(inp.probe_observations)
    rows[rows.index(target)] = improved
    before, after = score_cycle(inp), score_cycle(dataclasses.replace(inp, probe_observations=tuple(rows)))
    b, a = before.provider(target.provider), after.provider(target.provider)
    crit_b = next(c for c in b.criteria if c.key == target.criterion)
    crit_a = next(c for c in a.criteria if c.key == target.criterion)
    assert crit_a.score >= crit_b.score
    for area_b, area_a in zip(b.areas, a.areas, strict=True):
        if area_b.score is not None:
            assert area_a.score >= area_b.score
            if area_b.ci_low is not None:
                assert area_a.ci_low >= area_b.ci_low and area_a.ci_high >= area_b.ci_high
    assert a.composite >= b.composite
    if b.rated:
        assert a.ci_low >= b.ci_low and a.ci_high >= b.ci_high
        assert rank(a.tier) <= rank(b.tier)
    # Probe evidence moves no one else's scores.
    for other in inp.providers:
        if other != target.provider:
            assert after.provider(other).composite == before.provider(other).composite
            assert after.provider(other).criteria == before.provider(other).criteria


# 4. Direction and unit invariance --------------------------------------------------------------
def transformed(inp: ScoringInput, key: str, fn) -> ScoringInput:  # type: ignore[no-untyped-def]
    crit = [dataclasses.replace(c) for c in inp.rubric.criteria]
    for i, c in enumerate(crit):
        if c.key == key:
            best, worst = fn(c.anchor_best), fn(c.anchor_worst)
            direction = "higher" if best > worst else "lower"
            crit[i] = dataclasses.replace(c, anchor_best=best, anchor_worst=worst, direction=direction)
    rubric = dataclasses.replace(inp.rubric, criteria=tuple(crit))
    rows = [
        dataclasses.replace(r, value=fn(r.value)) if r.criterion == key and r.value is not None else r
        for r in inp.probe_observations
    ]
    return dataclasses.replace(inp, rubric=rubric, probe_observations=tuple(rows))


def decisions(result: Any) -> dict[str, Any]:
    return {
        p.provider: (p.tier, p.tier_point, p.probabilities, p.rated, p.borderline, p.coverage,
                     tuple((c.key, c.status, c.score) for c in p.criteria))
        for p in result.providers
    }


@given(cycles(), st.sampled_from(["busbw", "detect-time"]))
def test_negating_a_metric_and_flipping_its_direction_changes_nothing(inp, key):
    flipped = transformed(inp, key, lambda x: -x)
    assert decisions(score_cycle(flipped)) == decisions(score_cycle(inp))


@given(cycles(), st.sampled_from(["busbw", "detect-time", "ready-time"]), st.sampled_from([2.0**-10, 0.5, 8.0, 1024.0]))
def test_changing_units_together_with_the_anchors_changes_nothing(inp, key, factor):
    before, after = score_cycle(inp), score_cycle(transformed(inp, key, lambda x: x * factor))
    for b, a in zip(before.providers, after.providers, strict=True):
        assert (a.tier, a.tier_point, a.rated, a.probabilities) == (b.tier, b.tier_point, b.rated, b.probabilities)
        assert a.composite == pytest.approx(b.composite, abs=1e-9)


# 5. Bounds ---------------------------------------------------------------------------------------
@given(cycles())
def test_scores_probabilities_and_weights_stay_in_bounds(inp):
    result = score_cycle(inp)
    for p in result.providers:
        assert 0.0 <= p.coverage <= 1.0 + 1e-12
        assert (p.composite is None) == (p.composite_pessimistic is None) == (not p.rated)
        if p.composite is not None:
            assert 0.0 <= p.composite_pessimistic <= 1.0 + 1e-12
            assert 0.0 <= p.composite <= 1.0
            assert p.composite_pessimistic <= p.composite + 1e-12
        for c in p.criteria:
            assert c.score is None or 0.0 <= c.score <= 1.0
            for k in c.kinds:
                assert 0.0 <= k.score <= 1.0
                if k.kind == "customer_feedback":
                    assert 1.0 <= k.value <= 5.0
        for a in p.areas:
            assert a.score is None or 0.0 <= a.score <= 1.0
        if p.rated:
            probs = [x for _, x in p.probabilities]
            assert all(0.0 <= x <= 1.0 for x in probs) and sum(probs) == pytest.approx(1.0)
            assert 0.0 <= p.ci_low <= p.ci_high <= 1.0
            assert sum(c.weight_share for c in p.criteria) == pytest.approx(1.0)
            assert sum(a.weight for a in p.areas) == pytest.approx(1.0)


@given(cycles(complete=True))
def test_the_bayesian_average_lies_between_the_rubrics_prior_and_the_own_mean(inp):
    result = score_cycle(inp)
    rated = [p for p in result.providers if p.rated]
    means = [next(c for c in p.criteria if c.key == "customers").kinds[0].raw_mean for p in rated]
    assume(means)
    peer = inp.rubric.params.feedback_prior_mean  # a constant of the rubric, never the peers' mean
    for p, own in zip(rated, means, strict=True):
        shrunk = next(c for c in p.criteria if c.key == "customers").kinds[0].value
        assert min(peer, own) - 1e-9 <= shrunk <= max(peer, own) + 1e-9


# 6. Missing is not fail --------------------------------------------------------------------------
@given(cycles(), st.data())
def test_a_harness_error_changes_coverage_only_and_never_a_low_tier(inp, data):
    provider = data.draw(st.sampled_from(inp.providers))
    key = data.draw(st.sampled_from(["busbw", "detect-time", "ready-time", "isolation"]))
    kept = [r for r in inp.probe_observations if not (r.provider == provider and r.criterion == key)]
    absent = dataclasses.replace(inp, probe_observations=tuple(kept))
    errored = dataclasses.replace(inp, probe_observations=(*kept, obs(provider, key, None, Outcome.ERROR)))
    a, e = score_cycle(absent), score_cycle(errored)
    pa, pe = a.provider(provider), e.provider(provider)
    # An error is exactly "no evidence": same scores, coverage and tiers as having no row at all.
    assert (pe.composite, pe.coverage, pe.tier, pe.probabilities) == (pa.composite, pa.coverage, pa.tier, pa.probabilities)
    assert providers_view(a, {provider}) == providers_view(e, {provider})
    crit = next(c for c in pe.criteria if c.key == key)
    assert crit.status == "missing" and crit.n_missing == 1
    if pe.coverage < inp.rubric.params.coverage_floor:
        assert pe.tier == NOT_RATED and pe.probabilities == ()


# 7. Ties -----------------------------------------------------------------------------------------
@given(cycles(), st.data())
def test_equal_composites_get_equal_tiers(inp, data):
    source = data.draw(st.sampled_from(inp.providers))
    twin = "twin-of-" + source
    copies = [dataclasses.replace(r, provider=twin) for r in rows_of(inp) if r.provider == source]
    result = score_cycle(with_rows(dataclasses.replace(inp, providers=(*inp.providers, twin)), rows_of(inp) + copies))
    a, b = result.provider(source), result.provider(twin)
    assert a.composite == b.composite
    assert (a.tier, a.tier_point) == (b.tier, b.tier_point)
    by_value: dict[float, set[str]] = {}
    for p in result.providers:
        if p.rated:
            by_value.setdefault(p.composite, set()).add(p.tier_point)
    assert all(len(tiers) == 1 for tiers in by_value.values())


# 8. Gates ----------------------------------------------------------------------------------------
@given(cycles())
def test_gates_cap_the_tier_and_never_raise_it(inp):
    no_gate = [dataclasses.replace(c, is_gate=False) if c.key == "isolation" else c for c in inp.rubric.criteria]
    plain = dataclasses.replace(inp, rubric=dataclasses.replace(inp.rubric, criteria=tuple(no_gate)))
    gated, ungated = score_cycle(inp), score_cycle(plain)
    for g, u in zip(gated.providers, ungated.providers, strict=True):
        assert g.composite == u.composite
        if not g.rated:
            continue
        if g.gate_caps:
            cap = rank(g.gate_caps[0].cap_tier)
            assert rank(g.tier_point) == max(rank(u.tier_point), cap)
        else:
            assert g.tier_point == u.tier_point  # a passed (or unmeasured) gate changes nothing


# 10. Irrelevant alternatives ---------------------------------------------------------------------
@given(cycles(), st.integers(1, 5))
def test_adding_a_not_rated_provider_changes_no_one_elses_tier(inp, ratings):
    from tests.ratings.engine_builders import rating, review

    newcomer = "newcomer"
    # Doc and feedback evidence only: 2 of 6 criteria, far below the coverage floor.
    extra = [review(newcomer, "docs-metrics", "rev", 4.0)] + [rating(newcomer, "customers", f"o{i}", 5) for i in range(ratings)]
    bigger = with_rows(dataclasses.replace(inp, providers=(*inp.providers, newcomer)), rows_of(inp) + extra)
    before, after = score_cycle(inp), score_cycle(bigger)
    assert after.provider(newcomer).tier == NOT_RATED
    assert providers_view(after, {newcomer}) == providers_view(before)


# 11. Version isolation ---------------------------------------------------------------------------
@given(cycles(), st.data())
def test_mixing_rubric_versions_is_refused(inp, data):
    rows = rows_of(inp)
    index = data.draw(st.integers(0, len(rows) - 1))
    rows[index] = dataclasses.replace(rows[index], rubric_version=data.draw(st.sampled_from(["rv-0", "rv-2", "RV-1", ""])))
    with pytest.raises(MixedRubricVersionError):
        score_cycle(with_rows(inp, rows))


def test_the_property_rubric_covers_every_stream_and_scale():
    kinds = {k for c in PROPERTY_CRITERIA for k in c.evidence_kinds}
    assert kinds == {"probe", "doc_review", "customer_feedback"}
    assert {c.scale for c in PROPERTY_CRITERIA} == {"linear", "log"}
