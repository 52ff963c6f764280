"""The serving probe's arithmetic (probes/parsers/serving.py) on hand-made load generator documents."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probes.parsers import ParseError
from probes.parsers.serving import (
    Slo,
    analyse,
    at_target,
    pareto_frontier,
    percentile,
    point_summary,
    server_check,
    value_at_target,
)

SLO = Slo(ttft_ms=1000, tpot_ms=100)


def req(ttft: float, tpot: float, n: int = 10, *, ok: bool = True, start: float = 0.0, end: float = 1.0, **extra):
    rec = {"ok": ok, "status": 200 if ok else 500, "output_tokens": n if ok else 0, "start_s": start, "end_s": end}
    if ok:
        rec.update(ttft_ms=ttft, tpot_ms=tpot)
    rec.update(extra)
    return rec


def point(c: int, reqs: list[dict], wall: float = 1.0) -> dict:
    return {"concurrency": c, "wall_s": wall, "requests": reqs}


def test_percentile_is_linear_between_ranks():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10], 90) == 10
    assert percentile([], 50) is None
    assert percentile([0, 10], 90) == pytest.approx(9.0)


def test_a_point_reports_latency_percentiles_interactivity_throughput_errors_and_goodput():
    p = point_summary(
        point(2, [req(200, 50, start=0, end=2), req(400, 200, start=0, end=2), req(0, 0, ok=False, start=1, end=1.5)]),
        slo=SLO,
        accelerators=2,
        expected_tokens=10,
    )
    assert p["concurrency"] == 2 and p["requests"] == 3
    assert p["ttft_p50_ms"] == 300 and p["tpot_p50_ms"] == 125
    assert p["interactivity_tok_s_per_user"] == 8.0  # 1000 / 125 ms
    assert p["throughput_tok_s_per_gpu"] == 5.0  # 20 tokens in 2 s on 2 accelerators
    assert p["error_rate"] == pytest.approx(1 / 3, abs=1e-4)
    # only the first request met both SLOs: 10 good tokens of 30 asked for
    assert p["goodput"] == pytest.approx(1 / 3, abs=1e-4)


def test_the_frontier_drops_dominated_points_and_orders_by_interactivity():
    pts = [
        {"interactivity_tok_s_per_user": 50, "throughput_tok_s_per_gpu": 50},
        {"interactivity_tok_s_per_user": 30, "throughput_tok_s_per_gpu": 80},
        {"interactivity_tok_s_per_user": 25, "throughput_tok_s_per_gpu": 70},  # dominated by (30, 80)
        {"interactivity_tok_s_per_user": 10, "throughput_tok_s_per_gpu": 100},
    ]
    front = pareto_frontier(pts)
    assert [(f["interactivity_tok_s_per_user"], f["throughput_tok_s_per_gpu"]) for f in front] == [
        (10, 100),
        (30, 80),
        (50, 50),
    ]


def test_the_value_at_the_target_is_interpolated_inside_the_range_and_never_extrapolated():
    front = pareto_frontier(
        [
            {"interactivity_tok_s_per_user": 10, "throughput_tok_s_per_gpu": 100},
            {"interactivity_tok_s_per_user": 30, "throughput_tok_s_per_gpu": 80},
            {"interactivity_tok_s_per_user": 50, "throughput_tok_s_per_gpu": 50},
        ]
    )
    assert at_target(front, 30) == pytest.approx(80)
    assert 80 < at_target(front, 20) < 100
    assert at_target(front, 9.9) is None and at_target(front, 50.1) is None


@given(
    st.lists(
        st.tuples(st.floats(1, 200), st.floats(1, 1000)), min_size=2, max_size=8, unique_by=lambda t: round(t[0], 3)
    ),
    st.floats(0, 1),
)
def test_pchip_along_the_frontier_stays_between_its_neighbours(pts, where):
    front = pareto_frontier([{"interactivity_tok_s_per_user": x, "throughput_tok_s_per_gpu": y} for x, y in pts])
    xs = [f["interactivity_tok_s_per_user"] for f in front]
    ys = [f["throughput_tok_s_per_gpu"] for f in front]
    target = xs[0] + (xs[-1] - xs[0]) * where
    value = at_target(front, target)
    assert value is not None
    assert min(ys) - 1e-6 <= value <= max(ys) + 1e-6  # monotone: no overshoot


def test_server_check_compares_tokens_and_decode_rate_with_the_servers_own():
    doc = {
        "points": [
            point(
                1,
                [
                    req(100, 20, 11, usage={"completion_tokens": 11}, timings={"predicted_n": 11, "predicted_ms": 200}),
                    req(100, 21, 11, usage={"completion_tokens": 11}, timings={"predicted_n": 11, "predicted_ms": 200}),
                ],
            )
        ]
    }
    check = server_check(doc)
    assert check["token_ratio"] == 1.0
    assert check["decode_rate_ratio"] == pytest.approx(20 / 20.5, abs=1e-3)
    assert check["within_5pct"] is True
    doc["points"][0]["requests"][0]["usage"]["completion_tokens"] = 20
    assert server_check(doc)["within_5pct"] is False
    assert server_check({"points": []})["within_5pct"] is False  # nothing compared is no agreement


def test_analyse_gives_the_contract_keys_and_reports_an_out_of_range_target():
    doc = {
        "output_tokens": 10,
        "points": [
            point(1, [req(100, 20, start=0, end=0.5)], wall=0.5),
            point(4, [req(300, 50, start=0, end=1) for _ in range(3)], wall=1),
        ],
    }
    inside = analyse(doc, slo=SLO, target=30, accelerators=1)
    for key in (
        "points",
        "frontier",
        "target_interactivity_tok_s_per_user",
        "in_range",
        "goodput",
        "error_rate",
        "accelerators",
        "server_check",
    ):
        assert key in inside
    assert inside["frontier"] == [
        {"interactivity_tok_s_per_user": 20.0, "throughput_tok_s_per_gpu": 30.0},
        {"interactivity_tok_s_per_user": 50.0, "throughput_tok_s_per_gpu": 20.0},
    ]
    assert inside["in_range"] and 20 < inside["throughput_at_target"] < 30
    assert inside["goodput"] == 1.0 and inside["error_rate"] == 0
    outside = analyse(doc, slo=SLO, target=80, accelerators=1)
    assert outside["in_range"] is False and outside["throughput_at_target"] is None and outside["goodput"] is None
    with pytest.raises(ParseError):
        analyse({"nothing": 1}, slo=SLO, target=30, accelerators=1)


def _pt(c: int, inter: float, thr: float, goodput: float = 1.0) -> dict:
    return {"concurrency": c, "interactivity_tok_s_per_user": inter, "throughput_tok_s_per_gpu": thr, "goodput": goodput}


def test_a_target_below_the_range_takes_the_best_point_only_when_the_server_saturated():
    # throughput peaked at concurrency 1: more users only slowed each (a CPU that does not batch)
    peaked = [_pt(1, 40, 18), _pt(2, 14, 15), _pt(4, 8.8, 17.5)]
    got = value_at_target(peaked, 5)
    assert got["basis"] == "saturated" and got["throughput_at_target"] == 18 and got["goodput"] == 1.0
    assert "peaked at concurrency 1" in got["saturation"]
    # flat within 5% from 2 to 4: saturated; the value is the plateau's knee (2 streams), not the
    # queued point past it whose late first tokens missed the TTFT objective
    flat = [_pt(1, 40, 10), _pt(2, 20, 19), _pt(4, 10, 19.5, 0.5)]
    got = value_at_target(flat, 5)
    assert got["basis"] == "saturated" and got["throughput_at_target"] == 19 and got["goodput"] == 1.0
    assert got["saturated_at_concurrency"] == 2
    # a testbed sweep extended past its 4 slots (figures measured here): 8 streams still gained 6.5%,
    # 16 only queued; the knee is 8, not the queued 16 with half its tokens late
    extended = [_pt(1, 20.7, 12.6), _pt(2, 9.2, 11.9), _pt(4, 6.4, 14.2), _pt(8, 6.7, 15.1), _pt(16, 6.4, 14.7, 0.5)]
    got = value_at_target(extended, 5)
    assert got["basis"] == "saturated" and got["saturated_at_concurrency"] == 8
    assert got["throughput_at_target"] == 15.1 and got["goodput"] == 1.0
    # still rising: more concurrency might give more, so no value (never extrapolated)
    rising = [_pt(1, 40, 10), _pt(2, 20, 19), _pt(4, 10, 30)]
    got = value_at_target(rising, 5)
    assert got["throughput_at_target"] is None and "still rising" in got["saturation"]
    # one point: cannot tell; above the range: no value whatever the saturation
    assert value_at_target([_pt(1, 40, 10)], 5)["throughput_at_target"] is None
    assert value_at_target(peaked, 41)["throughput_at_target"] is None
    # inside the range: interpolated as before
    assert value_at_target(flat, 30)["basis"] == "interpolated"
    # between 2 streams and the queued 4 the frontier is one of useful throughput: 4 streams deliver
    # 19.5 tok/s but half of it late (9.75 useful), so at 15 tok/s per user the best the server does
    # in time is 2 streams' 19, all of it useful (CI once read such a queued point: 12.9 at goodput 0.5)
    got = value_at_target(flat, 15)
    assert (got["throughput_at_target"], got["goodput"], got["saturated_at_concurrency"]) == (19, 1.0, 2)


@given(st.lists(st.tuples(st.floats(1, 200), st.floats(1, 1000), st.floats(0, 1)), min_size=1, max_size=6,
                unique_by=lambda t: round(t[0], 3)), st.floats(0.5, 300))
def test_no_point_serving_users_at_the_target_delivers_more_useful_throughput_than_the_value(pts, target):
    """The value is the best useful throughput (throughput x goodput) the sweep showed at the target:
    interpolated between two frontier points, or a saturated point no faster-serving point beats."""
    points = [_pt(i + 1, x, y, g) for i, (x, y, g) in enumerate(pts)]
    got = value_at_target(points, target)
    if got["throughput_at_target"] is not None and got["basis"] == "saturated":
        useful = got["throughput_at_target"] * got["goodput"]
        best = max(y * g for x, y, g in pts if x >= target)
        assert useful * 1.05 >= best - 1e-6


@given(st.lists(st.tuples(st.floats(1, 200), st.floats(1, 1000), st.floats(0, 1)), min_size=1, max_size=6,
                unique_by=lambda t: round(t[0], 3)), st.floats(0.5, 300))
def test_a_value_at_the_target_is_always_a_measured_throughput_or_between_two(pts, target):
    points = [_pt(i + 1, x, y, g) for i, (x, y, g) in enumerate(pts)]
    got = value_at_target(points, target)
    ys = [y for _, y, _ in pts]
    if got["throughput_at_target"] is not None:
        assert min(ys) - 1e-6 <= got["throughput_at_target"] <= max(ys) + 1e-6
        assert 0 <= got["goodput"] <= 1
        assert target <= max(x for x, _, _ in pts)  # never a value for a target faster than every point


def test_sweeps_are_replicates_and_the_value_is_their_mean():
    def sweep(k: int, scale: float) -> list[dict]:
        return [
            {**point(1, [req(100, 25, start=0, end=1.0 / scale)], wall=1.0 / scale), "sweep": k},
            {**point(2, [req(300, 60, start=0, end=1.6 / scale), req(300, 60, start=0, end=1.6 / scale)],
                     wall=1.6 / scale), "sweep": k},
        ]

    doc = {"output_tokens": 10, "points": sweep(0, 1.0) + sweep(1, 1.2)}
    out = analyse(doc, slo=SLO, target=30, accelerators=1)
    values = [s["throughput_at_target"] for s in out["sweeps"]]
    assert len(values) == 2 and values[1] > values[0]
    assert out["throughput_at_target"] == pytest.approx(sum(values) / 2, abs=1e-3)
    # the table pools both sweeps per concurrency: two points, each with both sweeps' requests
    assert [p["concurrency"] for p in out["points"]] == [1, 2] and [p["requests"] for p in out["points"]] == [2, 4]
    pooled_c1 = out["points"][0]
    assert pooled_c1["span_s"] == pytest.approx(1.0 + 1 / 1.2, abs=1e-3)  # the sweeps' spans laid end to end


def test_failed_requests_are_never_useful_even_when_the_chosen_point_was_lucky():
    """A gateway failing a share of requests leaves some small points without a failure; the frontier
    picks the best point, but the goodput read at the target still carries the whole sweep's failures
    (the outside test: a provider failing 15% of requests read goodput 1.0 and ranked cheapest)."""
    doc = {
        "output_tokens": 10,
        "points": [
            point(1, [req(100, 20, start=0, end=0.5)] * 4, wall=0.5),  # the lucky point: 4 of 4 succeeded
            point(2, [req(100, 25, start=0, end=0.5)] * 2 + [req(0, 0, ok=False, start=0, end=0.1)] * 2, wall=0.5),
            point(4, [req(150, 40, start=0, end=1)] * 3 + [req(0, 0, ok=False, start=0, end=0.1)], wall=1),
        ],
    }
    got = analyse(doc, slo=SLO, target=50, accelerators=1)
    assert got["failed_requests"] == 3 and got["requests"] == 12
    assert got["error_rate"] == pytest.approx(0.25)
    sweep = got["sweeps"][0]
    assert sweep["success_share"] == pytest.approx(0.75) and sweep["failed_requests"] == 3
    # the chosen point (concurrency 1, interactivity 50) had no failure; its goodput is not 1.0
    assert got["goodput"] == pytest.approx(0.75, abs=1e-4)
    # useful throughput at the target is the successful on-time tokens' rate times the sweep's success share
    useful = got["throughput_at_target"] * got["goodput"]
    assert useful == pytest.approx(80 * 0.75, rel=1e-3)


def test_a_request_late_on_the_slo_is_counted_but_not_useful():
    doc = {
        "output_tokens": 10,
        "points": [point(1, [req(100, 20, start=0, end=0.5), req(5000, 20, start=0.5, end=1.0)], wall=1.0)],
    }
    got = analyse(doc, slo=SLO, target=50, accelerators=1)
    assert got["error_rate"] == 0 and got["failed_requests"] == 0
    assert got["goodput"] == pytest.approx(0.5)


@given(
    outcomes=st.lists(st.lists(st.booleans(), min_size=1, max_size=6), min_size=1, max_size=5),
)
def test_goodput_never_exceeds_the_sweeps_success_share(outcomes):
    """Property: whatever point the frontier or the knee picks, goodput <= the share of the sweep's
    requests that succeeded (a failed request is never useful)."""
    points = []
    for i, oks in enumerate(outcomes):
        reqs = [req(100, 20 + 5 * i, start=0, end=0.5) if ok else req(0, 0, ok=False, start=0, end=0.1) for ok in oks]
        points.append(point(i + 1, reqs, wall=0.5))
    got = analyse({"output_tokens": 10, "points": points}, slo=SLO, target=40, accelerators=1)
    total = sum(len(o) for o in outcomes)
    share = sum(sum(o) for o in outcomes) / total
    if got["goodput"] is not None:
        assert got["goodput"] <= round(share, 4) + 1e-9  # goodput is published to 4 places
    assert got["failed_requests"] == total - sum(sum(o) for o in outcomes)
