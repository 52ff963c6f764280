"""Table-driven tests of the pure scoring engine, with expected values computed by hand."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from ratings import engine
from ratings.engine import canonical_json, content_hash, median_table, normalise, score_cycle
from ratings.engine_types import (
    NOT_RATED,
    EmptyPeerSetError,
    MixedRubricVersionError,
    Outcome,
    PreviousTier,
    RubricFingerprintError,
    Scale,
    ScoringInputError,
)
from tests.ratings.engine_builders import (
    cycle,
    doc,
    feedback,
    measured,
    obs,
    pass_rate,
    rating,
    review,
    rubric,
)

T = measured("t", "provisioning", best=10.0, worst=100.0)  # lower is better, linear
PF = pass_rate("pf", "security")
D = doc("d", "monitoring")


def basic_rows(p: str = "a") -> list:
    return [
        obs(p, "t", 20.0), obs(p, "t", 40.0), obs(p, "t", 60.0),
        obs(p, "pf", None, Outcome.PASS), obs(p, "pf", None, Outcome.PASS),
        obs(p, "pf", None, Outcome.FAIL), obs(p, "pf", None, Outcome.WARN),
        review(p, "d", "r1", 3), review(p, "d", "r2", 2),
    ]


def crit(result, provider: str, key: str):
    return next(c for c in result.provider(provider).criteria if c.key == key)


@pytest.mark.parametrize(
    ("value", "best", "worst", "scale", "expected"),
    [
        (55.0, 10.0, 100.0, Scale.LINEAR, 0.5),  # lower is better
        (5.0, 10.0, 100.0, Scale.LINEAR, 1.0),  # better than the best anchor: clipped
        (500.0, 10.0, 100.0, Scale.LINEAR, 0.0),
        (75.0, 100.0, 50.0, Scale.LINEAR, 0.5),  # higher is better
        (100.0, 10.0, 1000.0, Scale.LOG, 0.5),  # halfway in log space
        (10.0, 1.0, 10000.0, Scale.LOG, 0.75),
        (0.0, 1.0, 10000.0, Scale.LOG, 1.0),  # a zero time is clipped to the best anchor
    ],
)
def test_normalisation_against_anchors(value, best, worst, scale, expected):
    c = measured("x", best=best, worst=worst, scale=scale)
    assert float(normalise(value, c)) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_median_table_matches_brute_force_enumeration(n):
    exact: dict[tuple[int, int], float] = {}
    for draw in itertools.product(range(n), repeat=n):
        s = sorted(draw)
        key = (s[(n - 1) // 2], s[n // 2])
        exact[key] = exact.get(key, 0.0) + n**-n
    j1, j2, probs = median_table(n)
    table = {(int(a), int(b)): float(p) for a, b, p in zip(j1, j2, probs, strict=True) if p > 0}
    assert table.keys() == exact.keys()
    for key, p in exact.items():
        assert table[key] == pytest.approx(p, abs=1e-12)


def test_hand_computed_single_provider():
    # t: scores (100-x)/90 of 20, 40, 60 -> median 60/90; pf: (2 + 0.5 + 1)/(4 + 2); d: median(3, 2)/4.
    res = score_cycle(cycle(rubric([T, PF, D], bootstrap_size=50), ["a"], basic_rows()))
    a = res.provider("a")
    assert crit(res, "a", "t").score == pytest.approx(60 / 90)
    assert crit(res, "a", "t").kinds[0].value == pytest.approx(40.0)
    assert crit(res, "a", "pf").score == pytest.approx(3.5 / 6)
    assert crit(res, "a", "d").score == pytest.approx(0.625)
    assert a.composite == pytest.approx((60 / 90 + 3.5 / 6 + 0.625) / 3)
    assert a.coverage == pytest.approx(1.0)
    # One provider is its own top group; the floors place 0.625 in Silver (gold needs 0.65).
    assert (a.tier, a.floor_capped) == ("silver", True)
    assert sum(p for _, p in a.probabilities) == pytest.approx(1.0)
    assert a.ci_low <= a.ci_high


def test_weights_within_and_across_areas():
    t2 = measured("t2", "provisioning", best=10.0, worst=100.0, weight=3.0)
    rub = rubric([T, t2, D], areas={"provisioning": 3.0, "monitoring": 1.0}, bootstrap_size=20)
    rows = [obs("a", "t", 10.0), obs("a", "t2", 100.0), review("a", "d", "r", 4)]
    a = score_cycle(cycle(rub, ["a"], rows)).provider("a")
    # provisioning = (1*1 + 3*0)/4 = 0.25; monitoring = 1; composite = 0.75*0.25 + 0.25*1
    assert a.composite == pytest.approx(0.4375)
    shares = {c.key: c.weight_share for c in a.criteria}
    assert shares == pytest.approx({"t": 0.1875, "t2": 0.5625, "d": 0.25})


def test_outcomes_follow_the_domain_table():
    rows = [
        obs("a", "t", 20.0), obs("a", "t", None, Outcome.TIMEOUT),  # timeout: censored at worst (score 0)
        obs("a", "t", None, Outcome.ERROR),  # harness error: dropped
        obs("a", "pf", None, Outcome.PROVIDER_ERROR), obs("a", "pf", None, Outcome.PASS),  # provider_error = fail
        review("a", "d", "r", 2),
    ]
    res = score_cycle(cycle(rubric([T, PF, D], bootstrap_size=20), ["a"], rows))
    t = crit(res, "a", "t")
    assert t.score == pytest.approx((80 / 90 + 0.0) / 2)
    assert (t.kinds[0].n, t.n_missing) == (2, 1)
    assert crit(res, "a", "pf").score == pytest.approx(2 / 4)


def test_a_measured_fail_without_a_value_is_censored_at_the_worst_anchor():
    # e.g. metrics_freshness on a node nobody scrapes: measured bad, but there is no number
    rows = [obs("a", "t", 20.0), obs("a", "t", None, Outcome.FAIL), review("a", "d", "r", 2)]
    res = score_cycle(cycle(rubric([T, D], bootstrap_size=20), ["a"], rows))
    assert crit(res, "a", "t").score == pytest.approx((80 / 90 + 0.0) / 2)


def test_a_measured_pass_without_a_value_is_refused():
    rows = [obs("a", "t", None, Outcome.PASS), review("a", "d", "r", 2)]
    with pytest.raises(ScoringInputError, match="pass finding without a value"):
        score_cycle(cycle(rubric([T, D], bootstrap_size=20), ["a"], rows))


def test_not_applicable_leaves_the_denominator_and_error_stays_in_it():
    na = [obs("a", "t", 55.0), obs("a", "pf", None, Outcome.NOT_APPLICABLE), review("a", "d", "r", 4)]
    err = [obs("a", "t", 55.0), obs("a", "pf", None, Outcome.ERROR), review("a", "d", "r", 4)]
    rub = rubric([T, PF, D], bootstrap_size=20)
    a_na = score_cycle(cycle(rub, ["a"], na)).provider("a")
    a_err = score_cycle(cycle(rub, ["a"], err)).provider("a")
    assert crit_status(a_na, "pf") == "not_applicable"
    assert a_na.coverage == pytest.approx(1.0)  # security drops out of the weights
    assert crit_status(a_err, "pf") == "missing"
    assert a_err.coverage == pytest.approx(2 / 3)  # security's third of the weight is missing
    assert a_na.composite == a_err.composite == pytest.approx(0.75)
    assert a_err.composite_pessimistic == pytest.approx(0.5)


def crit_status(provider_result, key):
    return next(c.status for c in provider_result.criteria if c.key == key)


def test_below_the_coverage_floor_is_not_rated_never_a_low_tier():
    rows = [obs("a", "t", 10.0), obs("a", "pf", None, Outcome.ERROR)]
    res = score_cycle(cycle(rubric([T, PF, D], bootstrap_size=20), ["a", "b"], rows + basic_rows("b")))
    a = res.provider("a")
    assert (a.rated, a.tier, a.probabilities, a.ci_low) == (False, NOT_RATED, (), None)
    assert a.coverage == pytest.approx(1 / 3)
    assert a.composite is None and a.composite_pessimistic is None  # no composite to be read as a score
    assert "below_coverage_floor" in a.flags
    assert res.provider("b").rated


def test_area_under_its_floor_counts_as_unmeasured():
    t2 = measured("t2", "provisioning", best=10.0, worst=100.0)
    rub = rubric([T, t2, D], area_coverage_floor=0.6, coverage_floor=0.4, bootstrap_size=20)
    a = score_cycle(cycle(rub, ["a"], [obs("a", "t", 10.0), review("a", "d", "r", 0)])).provider("a")
    prov = next(x for x in a.areas if x.key == "provisioning")
    assert (prov.measured, prov.coverage) == (False, 0.5)
    assert a.coverage == pytest.approx(0.5)  # only monitoring's half counts
    assert a.composite == pytest.approx(0.0)


def test_doc_review_uses_the_reconciled_value_when_there_is_one():
    rows = [review("a", "d", "r1", 0), review("a", "d", "r2", 4), review("a", "d", "lead", 3, reconciled=True)]
    res = score_cycle(cycle(rubric([D], bootstrap_size=20), ["a"], rows))
    d = crit(res, "a", "d")
    assert (d.score, d.kinds[0].value) == (0.75, 3.0)
    assert res.provider("a").ci_low == res.provider("a").ci_high == 0.75  # fixed: no resampling noise


def test_feedback_is_shrunk_toward_the_rubrics_prior_not_the_peer_mean():
    f = feedback("f", "provisioning")
    rows = [rating("a", "f", "o1", 5), rating("a", "f", "o2", 5), rating("b", "f", "o3", 1)]
    rub = rubric([f], bootstrap_size=20, feedback_prior_strength=5.0, feedback_prior_mean=3.5)
    res = score_cycle(cycle(rub, ["a", "b"], rows))
    # prior C = 3.5 (the peers' mean, 3, plays no part); a: (2*5 + 5*3.5)/7; b: (1*1 + 5*3.5)/6
    fa, fb = crit(res, "a", "f").kinds[0], crit(res, "b", "f").kinds[0]
    assert fa.value == pytest.approx(27.5 / 7)
    assert fa.score == pytest.approx((27.5 / 7 - 1) / 4)
    assert (fa.raw_mean, fa.n) == (5.0, 2)
    assert fb.value == pytest.approx(18.5 / 6)


def test_a_failed_gate_caps_the_tier():
    gate = pass_rate("iso", "security", is_gate=True, gate_cap_tier="bronze")
    rows = [obs("a", "t", 10.0), obs("a", "iso", None, Outcome.FAIL), obs("a", "iso", None, Outcome.FAIL)]
    rub = rubric([T, gate], area_coverage_floor=0.0, bootstrap_size=20)
    a = score_cycle(cycle(rub, ["a"], rows)).provider("a")
    # composite = (1 + 0.25)/2 = 0.625 -> silver on floors; the gate (0.25 < 0.5) caps at bronze
    assert a.tier == "bronze"
    assert a.gate_caps[0].criterion == "iso" and a.gate_caps[0].score == pytest.approx(0.25)
    assert (a.gate_caps[0].reason, a.gate_caps[0].replicate, a.gate_caps[0].replicates) == ("failed_replicate", 1, 2)
    assert "gate_capped" in a.flags


@pytest.mark.parametrize(
    ("value", "tier"),
    [(10.0, "platinum"), (28.0, "platinum"), (37.0, "gold"), (50.0, "silver"), (60.0, "bronze"), (70.0, "underperforming")],
)
def test_absolute_floors_for_a_lone_provider(value, tier):
    # score = (100 - x)/90: 28 -> 0.8 (platinum floor), 37 -> 0.7, 50 -> 0.556, 60 -> 0.444, 70 -> 0.333
    res = score_cycle(cycle(rubric([T], bootstrap_size=10), ["a"], [obs("a", "t", value)]))
    assert res.provider("a").tier == tier


def test_peers_split_into_tiers_where_distinguishable():
    providers = ["p1", "p2", "p3", "p4", "p5", "p6"]
    values = {"p1": 10.0, "p2": 11.0, "p3": 40.0, "p4": 41.0, "p5": 70.0, "p6": 71.0}
    rows = [obs(p, "t", v) for p, v in values.items()]
    res = score_cycle(cycle(rubric([T], bootstrap_size=50, boundary_min_gap=0.02), providers, rows))
    tiers = {p: res.provider(p).tier for p in providers}
    # zero-noise evidence: every gap is certain; the 0.011 gaps are under the minimum gap, so
    # the two 0.32 gaps are the boundaries (then floors: 0.66 is Gold at best, 0.33 Underperforming)
    assert tiers["p1"] == tiers["p2"] == "platinum"
    assert tiers["p3"] == tiers["p4"] == "gold"
    assert tiers["p5"] == tiers["p6"] == "underperforming"
    kept = [(b.upper_provider, b.lower_provider) for b in res.boundaries if b.kept]
    assert kept == [("p2", "p3"), ("p4", "p5")]  # reported top first, with the largest unchosen gaps
    assert all(b.probability == 1.0 for b in res.boundaries)
    # without a minimum gap, certain small gaps fill the spare boundaries (at most four)
    loose = score_cycle(cycle(rubric([T], bootstrap_size=50), providers, rows))
    assert sum(b.kept for b in loose.boundaries) == 4


def test_hysteresis_keeps_the_previous_tier_while_it_stays_plausible():
    # Two clear groups, and x whose resampled median is 55 (score 0.5) in 7/27 of replicates.
    rows = [obs(p, "t", v) for p, v in (("a", 10.0), ("b", 11.0), ("c", 12.0), ("d", 60.0), ("e", 61.0), ("f", 62.0))]
    rows += [obs("x", "t", v) for v in (12.0, 14.0, 55.0)]
    rub = rubric([T], bootstrap_size=400, boundary_min_gap=0.02)
    providers = list("abcdefx")
    x = score_cycle(cycle(rub, providers, rows)).provider("x")
    probs = dict(x.probabilities)
    # Published Platinum (the gap under c is not confirmed: x is too noisy), but P(tier) reruns
    # the rule on each joint replicate: at 14 (score 0.956) x sits 0.022 under c, a gap of
    # at least the minimum, so the noise-free rule would put it alone in Gold: P(Platinum) is
    # only the share of replicates at 12 (issue 27: boundary uncertainty enters P(tier)).
    assert (x.tier, x.borderline) == ("platinum", True)
    assert probs["platinum"] == pytest.approx(7 / 27, abs=0.05)
    assert probs["silver"] == pytest.approx(7 / 27, abs=0.05)
    held = score_cycle(cycle(rub, providers, rows, previous=[PreviousTier("x", "silver")])).provider("x")
    assert (held.tier, held.tier_point, held.hysteresis_held) == ("silver", "platinum", True)
    assert (held.borderline, held.outlook) == (True, "positive")
    # Gold or worse still has 7/27: Gold is kept too (hysteresis reads cumulative probabilities).
    gold = score_cycle(cycle(rub, providers, rows, previous=[PreviousTier("x", "gold")])).provider("x")
    assert (gold.tier, gold.hysteresis_held) == ("gold", True)
    # Bronze or worse has no probability left: the tier moves.
    moved = score_cycle(cycle(rub, providers, rows, previous=[PreviousTier("x", "bronze")])).provider("x")
    assert (moved.tier, moved.hysteresis_held, moved.previous_tier) == ("platinum", False, "bronze")


@pytest.mark.parametrize(
    ("point", "probs", "previous", "cap", "expected"),
    [
        (1, [0.3, 0.6, 0.1, 0, 0], None, 0, (1, False, True, "positive")),
        (1, [0.0, 0.9, 0.1, 0, 0], None, 0, (1, False, False, "stable")),
        (1, [0.1, 0.5, 0.4, 0, 0], None, 0, (1, False, True, "negative")),
        (1, [0.25, 0.75, 0, 0, 0], 0, 0, (0, True, True, "negative")),  # kept: P(previous) >= 0.2
        (1, [0.15, 0.85, 0, 0, 0], 0, 0, (1, False, False, "stable")),  # moved: P(previous) < 0.2
        (1, [0.25, 0.75, 0, 0, 0], 0, 1, (1, False, False, "stable")),  # a floor/gate beats stickiness
    ],
)
def test_publication_rule(point, probs, previous, cap, expected):
    from ratings.engine.tiering import publish

    assert publish(point, np.array(probs, dtype=float), previous, 0.2, 0.7, cap) == expected


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (lambda i: dataclasses.replace(i, providers=()), EmptyPeerSetError),
        (lambda i: dataclasses.replace(i, probe_observations=(dataclasses.replace(i.probe_observations[0], rubric_version="rv-2"),)), MixedRubricVersionError),
        (lambda i: dataclasses.replace(i, probe_observations=(obs("a", "t", math.nan),)), ScoringInputError),
        (lambda i: dataclasses.replace(i, probe_observations=(obs("a", "t", math.inf),)), ScoringInputError),
        (lambda i: dataclasses.replace(i, doc_scores=(review("a", "d", "r", 5),)), ScoringInputError),
        (lambda i: dataclasses.replace(i, doc_scores=(review("a", "d", "r", -1),)), ScoringInputError),
        (lambda i: dataclasses.replace(i, doc_scores=(review("a", "d", "r", math.nan),)), ScoringInputError),
        (lambda i: dataclasses.replace(i, probe_observations=(obs("zz", "t", 1.0),)), ScoringInputError),
        (lambda i: dataclasses.replace(i, probe_observations=(obs("a", "nope", 1.0),)), ScoringInputError),
        (lambda i: dataclasses.replace(i, probe_observations=(obs("a", "d", 1.0),)), ScoringInputError),
        (lambda i: dataclasses.replace(i, probe_observations=(obs("a", "t", None, Outcome.PASS),)), ScoringInputError),
        (lambda i: dataclasses.replace(i, previous_tiers=(PreviousTier("a", "diamond"),)), ScoringInputError),
        (lambda i: dataclasses.replace(i, seed=-1), ScoringInputError),
        (lambda i: dataclasses.replace(i, providers=("a", "a")), ScoringInputError),
        (lambda i: dataclasses.replace(i, rubric=dataclasses.replace(i.rubric, fingerprint="")), RubricFingerprintError),
        (lambda i: dataclasses.replace(i, rubric=dataclasses.replace(i.rubric, fingerprint="not-a-sha256")), RubricFingerprintError),
        (lambda i: dataclasses.replace(i, rubric=dataclasses.replace(i.rubric, criteria=(dataclasses.replace(T, weight=math.nan), PF, D))), ScoringInputError),
    ],
)
def test_bad_input_gets_a_clear_error(mutate, error):
    good = cycle(rubric([T, PF, D], bootstrap_size=10), ["a"], basic_rows())
    score_cycle(good)
    with pytest.raises(error):
        score_cycle(mutate(good))


def test_feedback_rating_out_of_range_is_refused():
    f = feedback("f")
    for bad in (0, 6, 2.5, True):
        with pytest.raises(ScoringInputError, match="from 1 to 5"):
            score_cycle(cycle(rubric([f], bootstrap_size=10), ["a"], [rating("a", "f", "o", bad)]))


def test_same_input_and_seed_give_byte_identical_output_and_a_new_seed_a_new_hash():
    inp = cycle(rubric([T, PF, D], bootstrap_size=200), ["a", "b"], basic_rows("a") + basic_rows("b")[:-1])
    first, second = score_cycle(inp), score_cycle(inp)
    assert canonical_json(first) == canonical_json(second)
    assert content_hash(first) == content_hash(second)
    other = score_cycle(dataclasses.replace(inp, seed=2))
    assert other.inputs_hash != first.inputs_hash and content_hash(other) != content_hash(first)
    assert first.engine_version == engine.ENGINE_VERSION


def test_bootstrap_draws_follow_the_exact_resampling_distribution():
    # 1 pass + 1 fail: resampled credit 0, 1 or 2 passes with probability 1/4, 1/2, 1/4,
    # i.e. pass rates 1/4, 2/4, 3/4; the engine's replicate composites must match.
    pf = pass_rate("pf", "security")
    inp = cycle(rubric([pf], bootstrap_size=4000), ["a"], [obs("a", "pf", None, Outcome.PASS), obs("a", "pf", None, Outcome.FAIL)])
    from ratings.engine.layout import Layout, build_providers, plan_weights
    from ratings.engine.sampling import replicate_scores, uniforms

    layout = Layout(inp.rubric)
    (provider,) = build_providers(inp, layout)
    plan_weights(provider, layout, inp.rubric)
    composites, _, _ = replicate_scores([provider], layout, uniforms(3, 4000, len(layout.slots)))
    draws = composites[0]
    values, counts = np.unique(draws, return_counts=True)
    assert values == pytest.approx([0.25, 0.5, 0.75])
    assert counts / 4000 == pytest.approx([0.25, 0.5, 0.25], abs=0.03)


def test_an_approved_override_replaces_the_evidence_without_noise():
    from ratings.engine_types import CriterionOverride

    gate = pass_rate("iso", "security", is_gate=True, gate_cap_tier="bronze")
    rows = [obs("a", "t", 10.0), obs("a", "iso", None, Outcome.FAIL), obs("a", "iso", None, Outcome.FAIL)]
    rub = rubric([T, gate], bootstrap_size=50)
    base = score_cycle(cycle(rub, ["a"], rows)).provider("a")
    assert base.tier == "bronze"  # the gate (0.25) caps it
    inp = dataclasses.replace(cycle(rub, ["a"], rows), overrides=(CriterionOverride("rv-1", "a", "iso", 1.0),))
    a = score_cycle(inp).provider("a")
    iso = next(c for c in a.criteria if c.key == "iso")
    assert (iso.score, iso.kinds[0].kind, iso.gate_failed) == (1.0, "override", False)
    assert a.composite == pytest.approx(1.0) and a.ci_low == a.ci_high == pytest.approx(1.0)
    assert (a.tier, a.gate_caps) == ("platinum", ())
    assert "override:iso" in a.flags
    for bad, error in (
        (CriterionOverride("rv-2", "a", "iso", 1.0), MixedRubricVersionError),
        (CriterionOverride("rv-1", "a", "iso", 1.5), ScoringInputError),
        (CriterionOverride("rv-1", "a", "iso", math.nan), ScoringInputError),
        (CriterionOverride("rv-1", "zz", "iso", 1.0), ScoringInputError),
    ):
        with pytest.raises(error):
            score_cycle(dataclasses.replace(inp, overrides=(bad,)))


def test_the_hash_does_not_depend_on_the_process_or_its_hash_seed(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "from tests.ratings.test_scoring_engine import T, PF, D, basic_rows\n"
        "from tests.ratings.engine_builders import cycle, rubric\n"
        "from ratings.engine import content_hash, score_cycle\n"
        "inp = cycle(rubric([T, PF, D], bootstrap_size=300), ['a', 'b', 'c'], basic_rows('a') + basic_rows('b') + basic_rows('c')[:5])\n"
        "print(content_hash(score_cycle(inp)))\n"
    )
    root = Path(__file__).resolve().parents[2]
    hashes = set()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        out = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        hashes.add(out.stdout.strip())
    inp = cycle(rubric([T, PF, D], bootstrap_size=300), ["a", "b", "c"], basic_rows("a") + basic_rows("b") + basic_rows("c")[:5])
    assert hashes == {content_hash(score_cycle(inp))}
