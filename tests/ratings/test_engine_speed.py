"""The speed work of issue 27 changes no output: the shortcuts build what the plain paths build."""

from __future__ import annotations

import dataclasses

import numpy as np

from ratings.engine import core, score_cycle
from ratings.engine.layout import Layout, build_providers, plan_weights
from ratings.engine.sampling import replicate_plan, replicate_scores, uniforms
from ratings.engine_types import CriterionResult, KindResult
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


def _input():
    rub = rubric([measured("lat"), pass_rate("iso", is_gate=True, gate_cap_tier="silver"), doc("docs"), feedback("fb")],
                 bootstrap_size=200)
    rows = []
    for i, p in enumerate(["a", "b", "c", "d"]):
        rows += [obs(p, "lat", 20.0 + 10 * i + j) for j in range(5)]
        rows += [obs(p, "iso", None) for _ in range(3)]
        rows += [review(p, "docs", "r1", float(i % 5)), review(p, "docs", "r2", 2.0)]
        rows += [rating(p, "fb", f"o{j}", 1 + (i + j) % 5) for j in range(3)]
    return cycle(rub, ["a", "b", "c", "d"], rows, seed=5)


def test_fast_records_equal_their_own_init() -> None:
    result = score_cycle(_input())
    for provider in result.providers:
        for c in provider.criteria:
            assert type(c) is CriterionResult and set(vars(c)) == {f.name for f in dataclasses.fields(c)}
            assert c == CriterionResult(**vars(c)) and repr(c) == repr(CriterionResult(**vars(c)))
            for k in c.kinds:
                assert type(k) is KindResult and k == KindResult(**vars(k))
    assert core._kind_result is not KindResult  # the shortcut is in use (the test above checks it)


def test_a_shared_replicate_plan_gives_the_same_replicates() -> None:
    inp = _input()
    layout = Layout(inp.rubric)
    providers = build_providers(inp, layout)
    for p in providers:
        plan_weights(p, layout, inp.rubric)
    u = uniforms(3, 100, len(layout.slots))
    plan = replicate_plan(providers, layout)
    alone, shared = replicate_scores(providers, layout, u), replicate_scores(providers, layout, u, plan)
    for a, b in zip(alone[:2], shared[:2], strict=True):
        assert np.array_equal(a, b, equal_nan=True)
    assert alone[2].keys() == shared[2].keys() and all(np.array_equal(alone[2][k], shared[2][k]) for k in alone[2])


def test_providers_with_the_same_statuses_share_one_exact_plan_of_weights() -> None:
    inp = _input()
    layout = Layout(inp.rubric)
    providers = build_providers(inp, layout)
    for p in providers:
        plan_weights(p, layout, inp.rubric)
    assert len(layout.planned) == 1
    first, second = providers[0], providers[1]
    assert first.stream_weight == second.stream_weight and first.stream_weight is not second.stream_weight


def test_the_collector_is_paused_only_while_a_cycle_is_scored() -> None:
    import gc

    seen = []
    original = core.validate_input
    core.validate_input = lambda inp: (seen.append(gc.isenabled()), original(inp))[1]
    try:
        assert gc.isenabled()
        score_cycle(_input())
        assert seen == [False] and gc.isenabled()  # paused inside, resumed after
        gc.disable()
        try:
            score_cycle(_input())
            assert not gc.isenabled()  # a collector the caller had paused stays paused
        finally:
            gc.enable()
    finally:
        core.validate_input = original
