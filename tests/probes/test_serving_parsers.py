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
