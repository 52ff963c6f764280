"""The serving probe's arithmetic: the load generator's JSON in, the throughput/interactivity curve out.

Pure (no Django, no sockets, no clock). Input: the document ``probes/catalog/_serving_loadgen.py``
prints (per concurrency point, per request: TTFT, TPOT, tokens counted from the stream, status,
and the server's own ``usage``/``timings`` for the same request). Output, per point:

* TTFT and TPOT p50/p90 (ms) over the point's successful requests;
* interactivity = 1000 / TPOT p50 (tok/s per user), InferenceX's x axis;
* throughput = output tokens of successful requests / the point's wall time / accelerators
  (tok/s per GPU; per node on a CPU testbed), InferenceX's y axis;
* error rate = failed requests / requests;
* goodput = tokens in requests that met both SLOs (TTFT <= ``ttft_ms`` and TPOT <= ``tpot_ms``)
  / tokens asked for by every request of the point (a failed request asked and got nothing);
* on-time share = the same good tokens / tokens asked for by the point's *successful* requests.

A request is useful only when it succeeded and met both SLOs; a failed, cut or late request is
counted (``error_rate``, ``failed_requests``, goodput below 1) and never useful. A point holds a few
requests, and the frontier and the knee pick the best point of a sweep, so a point's own error rate
would be the luckiest one (a gateway failing 20% of requests leaves many 4-request points without a
failure, and the chosen point read goodput 1.0): the goodput read at the target is therefore the
point's on-time share times the success share measured over *every* request of its sweep
(``success_share``), which no choice of point can flatter.

Then the Pareto frontier of throughput against interactivity (for the table and the chart), and the
throughput (and goodput) at a target interactivity by monotone cubic interpolation (scipy's
PchipInterpolator) along the frontier of *useful* throughput (throughput x goodput): a point whose
extra streams only queued, the same tokens with half of them late, is beaten by the point before it,
so the value is what the server delivers in time at the target, which is what the cost prices. A target above the frontier's measured interactivity is out of range with no
value: never extrapolated (the endpoint served no user that fast). A target below it has a value
only when the sweep shows the server saturated: a higher concurrency than the frontier's
best-throughput point raised throughput by no more than ``SATURATION_GAIN`` (or lowered it). Then
the best the server can do while serving every user at least as fast as the target is its measured
plateau (it serves them faster), and the value is the plateau's knee (``saturation_knee``: its
lowest concurrency within ``SATURATION_GAIN`` of the best useful throughput), marked ``saturated``;
otherwise (throughput still rising at the sweep's highest concurrency) it is out of range.

A document may hold several sweeps (the load generator's ``--repeats``; each point names its
``sweep``): each sweep is analysed on its own and is one replicate of (throughput, goodput) at the
target (``sweeps``), the value is their mean over the sweeps that measured it, and ``points`` and
``frontier`` pool the sweeps' requests per concurrency (for the table and the chart).

``completions`` counts the distinct completions of the run's first successful requests (each had
its own random prompt): ``completions_verdict`` says when they cannot be inference.

``server_check`` compares the client's measurement with the server's own for the same requests:
output tokens counted from the stream vs ``usage.completion_tokens``, and the decode rate
(tokens after the first / time from the first to the last token) vs llama.cpp's
``timings.predicted_ms`` over the same tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from probes.parsers import ParseError


@dataclass(frozen=True)
class Slo:
    ttft_ms: float
    tpot_ms: float


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default), ``q`` in 0..100; None for no values."""
    xs = sorted(float(v) for v in values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


SATURATION_GAIN = 0.05  # more concurrency adding at most 5% throughput: the server is saturated


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def point_summary(point: Mapping[str, Any], *, slo: Slo, accelerators: float, expected_tokens: int) -> dict[str, Any]:
    try:
        concurrency = int(point["concurrency"])
        wall = float(point["wall_s"])
        reqs = list(point["requests"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"not a load generator point: {exc}") from exc
    ok = [r for r in reqs if r.get("ok")]
    ttfts = [float(r["ttft_ms"]) for r in ok if r.get("ttft_ms") is not None]
    tpots = [float(r["tpot_ms"]) for r in ok if r.get("tpot_ms") is not None]
    tokens = sum(int(r.get("output_tokens", 0)) for r in ok)
    # the span in which this point's requests ran (the point's wall time includes thread joins)
    span = max((float(r.get("end_s", 0)) for r in reqs), default=0.0) - min(
        (float(r.get("start_s", 0)) for r in reqs), default=0.0
    )
    span = span if span > 0 else wall
    tpot_p50 = percentile(tpots, 50)
    good = sum(
        int(r.get("output_tokens", 0))
        for r in ok
        if r.get("ttft_ms") is not None
        and float(r["ttft_ms"]) <= slo.ttft_ms
        and r.get("tpot_ms") is not None
        and float(r["tpot_ms"]) <= slo.tpot_ms
    )
    asked = max(1, expected_tokens) * len(reqs)
    return {
        "concurrency": concurrency,
        "requests": len(reqs),
        "ttft_p50_ms": _r(percentile(ttfts, 50)),
        "ttft_p90_ms": _r(percentile(ttfts, 90)),
        "tpot_p50_ms": _r(tpot_p50),
        "tpot_p90_ms": _r(percentile(tpots, 90)),
        "interactivity_tok_s_per_user": _r(1000.0 / tpot_p50) if tpot_p50 else None,
        "throughput_tok_s_per_gpu": _r(tokens / span / accelerators) if span > 0 and ok else 0.0,
        "error_rate": _r((len(reqs) - len(ok)) / len(reqs), 4) if reqs else None,
        "goodput": _r(min(1.0, good / asked), 4) if reqs else None,
        "on_time_share": _r(min(1.0, good / (max(1, expected_tokens) * len(ok))), 4) if ok else None,
        "ok_requests": len(ok),
        "output_tokens": tokens,
        "span_s": _r(span),
    }


def _useful(p: Mapping[str, Any]) -> float:
    return float(p.get("throughput_tok_s_per_gpu") or 0) * float(p.get("goodput") or 0)


def pareto_frontier(points: Sequence[Mapping[str, Any]], *, useful: bool = False) -> list[dict[str, float]]:
    """The points no other point beats on both axes, by interactivity ascending (throughput then
    falls). Points without an interactivity (no successful request) are not on it. With ``useful``
    the throughput axis is throughput x goodput: a point whose extra streams only queued (the same
    tokens, half of them late) is beaten by the point before it, which served every user in time."""
    pts = [
        (float(p["interactivity_tok_s_per_user"]), float(p["throughput_tok_s_per_gpu"]), float(p.get("goodput") or 0))
        for p in points
        if p.get("interactivity_tok_s_per_user") and p.get("throughput_tok_s_per_gpu")
    ]
    front: list[tuple[float, float, float]] = []
    height = (lambda t: t[1] * t[2]) if useful else (lambda t: t[1])
    for x, y, g in sorted(pts, key=lambda t: (-t[0], -height(t))):  # from the most interactive down
        if not front or height((x, y, g)) > height(front[-1]):
            front.append((x, y, g))
    front.reverse()
    return [{"interactivity_tok_s_per_user": x, "throughput_tok_s_per_gpu": y, "goodput": g} for x, y, g in front]


def at_target(frontier: Sequence[Mapping[str, float]], target: float, key: str = "throughput_tok_s_per_gpu") -> float | None:
    """``key`` at interactivity ``target`` along the frontier (PCHIP, monotone); None out of range."""
    xs = [float(p["interactivity_tok_s_per_user"]) for p in frontier]
    ys = [float(p[key]) for p in frontier]
    if not xs or target < xs[0] or target > xs[-1]:
        return None
    if len(xs) == 1:
        return ys[0]
    from scipy.interpolate import PchipInterpolator  # scipy: only here, where the curve is drawn

    return float(PchipInterpolator(xs, ys, extrapolate=False)(target))


def server_check(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The client's token counts and decode rate against the server's own for the same requests."""
    client_tokens = server_tokens = 0
    client_ms = server_ms = 0.0
    client_steps = server_steps = 0
    compared = timed = 0
    for point in doc.get("points", []):
        for r in point.get("requests", []):
            if not r.get("ok"):
                continue
            usage = r.get("usage") or {}
            if usage.get("completion_tokens") is not None:
                compared += 1
                client_tokens += int(r["output_tokens"])
                server_tokens += int(usage["completion_tokens"])
            t = r.get("timings") or {}
            n = int(r.get("output_tokens", 0))
            if t.get("predicted_ms") and t.get("predicted_n") and r.get("tpot_ms") is not None and n > 1:
                timed += 1
                client_ms += float(r["tpot_ms"]) * (n - 1)
                client_steps += n - 1
                server_ms += float(t["predicted_ms"])
                # llama.cpp times generation from the first sampled token on: predicted_n tokens,
                # the first of which ends the prompt step, so predicted_ms spans predicted_n - 1 steps
                server_steps += max(1, int(t["predicted_n"]) - 1)
    out: dict[str, Any] = {"requests_compared": compared, "requests_timed": timed}
    if compared:
        out["output_tokens_client"] = client_tokens
        out["output_tokens_server"] = server_tokens
        out["token_ratio"] = round(client_tokens / server_tokens, 4) if server_tokens else None
    if timed and client_ms > 0 and server_ms > 0:
        client_rate = client_steps * 1000.0 / client_ms
        server_rate = server_steps * 1000.0 / server_ms
        out["decode_tok_s_client"] = round(client_rate, 3)
        out["decode_tok_s_server"] = round(server_rate, 3)
        out["decode_rate_ratio"] = round(client_rate / server_rate, 4)
    ratios = [out.get("token_ratio"), out.get("decode_rate_ratio")]
    out["within_5pct"] = bool(compared and timed) and all(r is not None and abs(r - 1) <= 0.05 for r in ratios)
    return out


def saturation(points: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
    """Whether the sweep shows the server saturated: the best-throughput point is not at the sweep's
    highest concurrency, or the step up to it gained at most ``SATURATION_GAIN``. With the reason."""
    measured = sorted(
        (p for p in points if p.get("throughput_tok_s_per_gpu") and p.get("interactivity_tok_s_per_user")),
        key=lambda p: int(p["concurrency"]),
    )
    if len(measured) < 2:
        return False, "one measured concurrency: saturation cannot be told"
    best = max(measured, key=lambda p: float(p["throughput_tok_s_per_gpu"]))
    top = measured[-1]
    if int(best["concurrency"]) < int(top["concurrency"]):
        return True, (
            f"throughput peaked at concurrency {best['concurrency']} ({best['throughput_tok_s_per_gpu']:g}); "
            f"{top['concurrency']} gave {top['throughput_tok_s_per_gpu']:g}"
        )
    prev = measured[-2]
    gain = float(top["throughput_tok_s_per_gpu"]) / float(prev["throughput_tok_s_per_gpu"]) - 1
    if gain <= SATURATION_GAIN:
        return True, f"concurrency {prev['concurrency']} -> {top['concurrency']} added {gain:+.1%} throughput"
    return False, f"throughput still rising at the highest concurrency ({gain:+.1%} from {prev['concurrency']})"


def saturation_knee(points: Sequence[Mapping[str, Any]], target: float) -> Mapping[str, Any]:
    """The point a saturated server's value is read at: of the points serving users at least as fast
    as ``target`` whose throughput is within ``SATURATION_GAIN`` of the best, the one at the lowest
    concurrency. Streams beyond it only queue: they add no throughput, and their queued requests'
    TTFT would charge the server's goodput for the sweep going past the knee."""
    measured = [
        p for p in points
        if p.get("throughput_tok_s_per_gpu") and p.get("interactivity_tok_s_per_user")
        and float(p["interactivity_tok_s_per_user"]) >= target
    ]  # fmt: skip
    # useful throughput (x goodput): a queued point's noise-high throughput never outranks the point
    # that served every stream in time (CI: 8 streams on 4 slots read at 12.9 tok/s, goodput 0.5)
    best = max(_useful(p) for p in measured)
    plateau = [p for p in measured if _useful(p) * (1 + SATURATION_GAIN) >= best]
    return min(plateau, key=lambda p: int(p["concurrency"]))


def value_at_target(points: Sequence[Mapping[str, Any]], target: float) -> dict[str, Any]:
    """(throughput, goodput) at the target along one sweep's frontier of useful throughput (the best the
    server delivers in time while serving users that fast), how it was found, and the range."""
    frontier = pareto_frontier(points, useful=True)
    xs = [f["interactivity_tok_s_per_user"] for f in frontier]
    out: dict[str, Any] = {"throughput_at_target": None, "goodput": None, "basis": "",
                           "range_tok_s_per_user": [min(xs), max(xs)] if xs else None}
    value = at_target(frontier, target)
    if value is not None:
        goodput = at_target(frontier, target, key="goodput")
        out.update(throughput_at_target=value, goodput=None if goodput is None else min(1.0, max(0.0, goodput)),
                   basis="interpolated")
    elif xs and target < xs[0]:
        ok, why = saturation(points)
        out["saturation"] = why
        if ok:
            knee = saturation_knee(points, target)
            out.update(throughput_at_target=float(knee["throughput_tok_s_per_gpu"]),
                       goodput=float(knee.get("goodput") or 0.0), basis="saturated",
                       saturated_at_concurrency=int(knee["concurrency"]))
    return out


PROMPT_SAMPLE = 16  # the first successful completions of a run judged for prompt dependence


def prompt_dependence(doc: Mapping[str, Any]) -> dict[str, Any]:
    """How many different completions the first ``PROMPT_SAMPLE`` successful requests got (their
    ``out_sha`` digests, in the order the run made them). Every request has its own random prompt at
    temperature 0, so a server doing inference answers most of them differently (a 270M model that
    repeats one prompt word gave 7-12 distinct of 16 here); a gateway replaying canned or cached
    completions gives one or a few. Requests without a digest are not counted (``checked``)."""
    shas = [
        r["out_sha"]
        for p in doc.get("points") or []
        if isinstance(p, Mapping)
        for r in p.get("requests") or []
        if isinstance(r, Mapping) and r.get("ok") and isinstance(r.get("out_sha"), str)
    ]
    sample = shas[:PROMPT_SAMPLE]
    return {"checked": len(sample), "distinct": len(set(sample)), "sample": PROMPT_SAMPLE}


def completions_verdict(completions: Mapping[str, Any], *, min_distinct: int) -> str | None:
    """Why the run's completions cannot count as inference (None: they can). ``min_distinct`` is of a
    full sample; a shorter sample (few successful requests) needs proportionally fewer, and fewer than
    four completions cannot be judged at all (never a pass)."""
    checked, distinct = int(completions.get("checked") or 0), int(completions.get("distinct") or 0)
    if checked < 4:
        return f"only {checked} completion(s) to check whether they depend on the prompt: not judged"
    need = max(2, math.ceil(min_distinct * checked / int(completions.get("sample") or PROMPT_SAMPLE)))
    if distinct < need:
        return (
            f"the endpoint's completions do not depend on the prompt: {distinct} distinct of {checked} random "
            f"prompts (at least {need} expected): canned or cached answers, not inference"
        )
    return None


def _pooled(points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The sweeps' raw points merged per concurrency, their requests laid end to end in time (so a
    merged point's span is the sum of its sweeps' spans)."""
    by_c: dict[int, dict[str, Any]] = {}
    for p in points:
        c = int(p["concurrency"])
        reqs = list(p["requests"])
        merged = by_c.setdefault(c, {"concurrency": c, "wall_s": 0.0, "requests": [], "_t": 0.0})
        lo = min((float(r.get("start_s", 0)) for r in reqs), default=0.0)
        hi = max((float(r.get("end_s", 0)) for r in reqs), default=lo)
        for r in reqs:
            merged["requests"].append({**r, "start_s": float(r.get("start_s", 0)) - lo + merged["_t"],
                                       "end_s": float(r.get("end_s", 0)) - lo + merged["_t"]})
        merged["_t"] += max(0.0, hi - lo)
        merged["wall_s"] += float(p["wall_s"])
    return [{k: v for k, v in m.items() if k != "_t"} for _, m in sorted(by_c.items())]


def analyse(doc: Mapping[str, Any], *, slo: Slo, target: float, accelerators: float) -> dict[str, Any]:
    """The evidence of one serving_goodput finding (the contract's keys) from one loadgen document."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("points"), list):
        raise ParseError("not a load generator document (no points)")
    if accelerators <= 0:
        raise ParseError("accelerators must be positive")
    expected = int(doc.get("output_tokens") or 0)
    try:
        by_sweep: dict[int, list[Mapping[str, Any]]] = {}
        for p in doc["points"]:
            by_sweep.setdefault(int(p.get("sweep", 0)), []).append(p)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ParseError(f"not a load generator point: {exc}") from exc
    sweeps = []
    for k, raw in sorted(by_sweep.items()):
        summaries = [point_summary(p, slo=slo, accelerators=accelerators, expected_tokens=expected) for p in raw]
        asked = sum(p["requests"] for p in summaries)
        succeeded = sum(p["ok_requests"] for p in summaries)
        success = succeeded / asked if asked else 0.0
        # the sweep's success share, not the chosen point's: failures are the server's, wherever they fell
        useful = [{**p, "goodput": None if p["on_time_share"] is None else min(1.0, p["on_time_share"] * success)}
                  for p in summaries]
        sweeps.append({"sweep": k, "requests": asked, "failed_requests": asked - succeeded,
                       "success_share": round(success, 4), **value_at_target(useful, target)})
    try:
        points = [point_summary(p, slo=slo, accelerators=accelerators, expected_tokens=expected)
                  for p in _pooled(doc["points"])]
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"not a load generator point: {exc}") from exc
    frontier = pareto_frontier(points)
    measured = [s for s in sweeps if s["throughput_at_target"] is not None and s["goodput"] is not None]
    value = sum(s["throughput_at_target"] for s in measured) / len(measured) if measured else None
    goodput = sum(s["goodput"] for s in measured) / len(measured) if measured else None
    total = sum(p["requests"] for p in points)
    failed = sum(p["requests"] - p["ok_requests"] for p in points)
    xs = [f["interactivity_tok_s_per_user"] for f in frontier]
    return {
        "points": points,
        "frontier": [
            {"interactivity_tok_s_per_user": f["interactivity_tok_s_per_user"], "throughput_tok_s_per_gpu": f["throughput_tok_s_per_gpu"]}
            for f in frontier
        ],
        "target_interactivity_tok_s_per_user": target,
        "in_range": value is not None,
        "range_tok_s_per_user": [min(xs), max(xs)] if xs else None,
        "throughput_at_target": None if value is None else round(value, 3),
        "goodput": None if goodput is None else round(min(1.0, max(0.0, goodput)), 4),
        "at_target": sorted({s["basis"] for s in measured}),
        "sweeps": [
            {**s, "throughput_at_target": _r(s["throughput_at_target"]), "goodput": _r(s["goodput"], 4)} for s in sweeps
        ],
        "error_rate": round(failed / total, 4) if total else None,
        "requests": total,
        "failed_requests": failed,
        "accelerators": accelerators,
        "slo": {"ttft_ms": slo.ttft_ms, "tpot_ms": slo.tpot_ms},
        "server_check": server_check(doc),
        "completions": prompt_dependence(doc),
    }
