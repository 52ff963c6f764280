#!/usr/bin/env python3
"""Opgrade's serving load generator: standard library only, uploaded over SFTP and run on a tenant node.

It drives an OpenAI-compatible ``/v1/completions`` endpoint (llama.cpp's ``llama-server``, vLLM,
SGLang, TensorRT-LLM's server all speak it) with streamed requests of a fixed shape: a random
prompt of ``--input-words`` words (a fresh random prefix per request, so no prefix cache helps)
and exactly ``--output-tokens`` generated tokens (``ignore_eos``), in a closed loop at each
concurrency of ``--concurrency`` (a sweep), the whole sweep ``--repeats`` times (each a replicate;
every point names its ``sweep``). With ``--extend-above X`` a sweep whose last point still served
users faster than X tok/s each goes on at twice the concurrency (up to ``--max-concurrency``;
such points say ``extension``), so it reaches the target instead of stopping short of it, until
a step adds no more than 5% throughput (the server is saturated: more streams would only queue). Every point is bounded in requests and in seconds, and so is the
whole run.

It prints one JSON document: per point, per request, what the client saw (time to the first token,
time per output token after it, tokens counted from the stream, status, error, a digest of the
completion's text) and what the server
said about the same request (``usage`` and llama.cpp's ``timings`` when present), so the caller can
check the client's measurement against the server's own. Aggregation is the caller's
(``probes/parsers/serving.py``): this file stays small and dependency-free.

Exit status: 0 when the sweep ran (failed requests are data, not an exit status), 2 on bad
arguments, 3 when the endpoint did not answer at all.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse

VERSION = 1
WORDS = ["river", "stone", "cloud", "amber", "signal", "harbor", "lantern", "meadow", "copper", "violet", "orbit", "canyon", "ember", "glacier", "thunder", "willow", "quartz", "falcon", "prairie", "cobalt", "sparrow", "tundra", "beacon", "cinder", "delta", "fjord", "garnet", "hollow", "island", "jasper", "kettle", "lilac", "marble", "nectar", "onyx", "pepper", "quiver", "raven", "saffron", "timber", "umber", "velvet", "walnut", "yarrow", "zephyr", "anchor", "bramble", "cedar", "dune", "fennel", "grove", "heron", "indigo", "juniper", "kelp"]


def prompt(rng: random.Random, words: int) -> str:
    # a random prefix first: two requests never share a cached prefix beyond the first token or two
    head = f"{rng.getrandbits(64):016x} {rng.getrandbits(64):016x}"
    return head + " " + " ".join(rng.choice(WORDS) for _ in range(max(1, words)))


def one_request(url: urllib.parse.SplitResult, body: dict, timeout_s: float, headers: dict) -> dict:
    rec: dict = {"ok": False, "status": 0, "error": "", "output_tokens": 0}
    conn_cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    start = time.monotonic()
    rec["start"] = start
    first = last = None
    pieces: list[str] = []
    try:
        conn = conn_cls(url.hostname, url.port or (443 if url.scheme == "https" else 80), timeout=timeout_s)
        path = (url.path.rstrip("/") or "") + "/v1/completions"
        conn.request("POST", path, body=json.dumps(body), headers=headers)
        resp = conn.getresponse()
        rec["status"] = resp.status
        done = False
        if resp.status != 200:
            rec["error"] = f"HTTP {resp.status}: {resp.read(300).decode('utf-8', 'replace')}"
            done = True  # nothing to stream; the record is finished below like any other
        while not done:
            if time.monotonic() - start > timeout_s:
                rec["error"] = "request deadline passed"
                break
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                done = True
                break
            try:
                event = json.loads(data)
            except ValueError:
                rec["error"] = "unparsable stream event"
                break
            if "error" in event:
                rec["error"] = str(event["error"])[:300]
                break
            choices = event.get("choices") or []
            if choices and (choices[0].get("text") is not None) and choices[0].get("finish_reason") is None:
                now = time.monotonic()
                pieces.append(str(choices[0]["text"]))
                rec["output_tokens"] += 1
                if first is None:
                    first = now
                last = now
            if event.get("usage"):
                rec["usage"] = {k: event["usage"].get(k) for k in ("prompt_tokens", "completion_tokens")}
            if event.get("timings"):
                t = event["timings"]
                rec["timings"] = {
                    k: t.get(k) for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")
                }
        conn.close()
        if done and not rec["error"] and first is not None:
            rec["ok"] = True
            # what was generated, as a short digest (the text stays on the node): the caller checks
            # that different random prompts got different completions (canned answers are no inference)
            rec["out_sha"] = hashlib.sha256("".join(pieces).encode()).hexdigest()[:16]
        elif not rec["error"]:
            rec["error"] = "stream ended early" if first is not None else "no token received"
    except (OSError, http.client.HTTPException) as exc:
        rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
    end = time.monotonic()
    rec["end"] = end
    rec["e2e_ms"] = round((end - start) * 1000, 3)
    if first is not None:
        rec["ttft_ms"] = round((first - start) * 1000, 3)
        n = rec["output_tokens"]
        if n > 1 and last is not None:
            rec["tpot_ms"] = round((last - first) * 1000 / (n - 1), 3)
    return rec


def run_point(args: argparse.Namespace, url, concurrency: int, rng: random.Random, deadline: float) -> dict:
    lock = threading.Lock()
    records: list[dict] = []
    # at least one request per stream: a point at concurrency c with fewer than c requests would
    # measure a lower concurrency than it names
    count = max(args.requests_per_point, concurrency)
    budget = {"left": count}
    point_end = min(deadline, time.monotonic() + args.point_seconds)
    bodies = []
    for _ in range(count):
        bodies.append(
            {
                "model": args.model,
                "prompt": prompt(rng, args.input_words),
                "max_tokens": args.output_tokens,
                "min_tokens": args.output_tokens,
                "ignore_eos": True,
                "temperature": 0.0,
                "stream": True,
                "stream_options": {"include_usage": True},
                "cache_prompt": False,
            }
        )
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if args.api_key_env:
        import os

        key = os.environ.get(args.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"

    def worker() -> None:
        while True:
            with lock:
                if budget["left"] <= 0 or time.monotonic() >= point_end:
                    return
                budget["left"] -= 1
                body = bodies[budget["left"]]
            rec = one_request(url, body, args.request_timeout_s, headers)
            with lock:
                records.append(rec)

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, point_end - time.monotonic()) + args.request_timeout_s + 1)
    t1 = time.monotonic()
    with lock:
        done = list(records)
    for rec in done:
        rec["start_s"] = round(rec.pop("start") - t0, 4)
        rec["end_s"] = round(rec.pop("end") - t0, 4)
    return {
        "concurrency": concurrency,
        "wall_s": round(t1 - t0, 4),
        "requests": done,
        "unfinished": max(0, count - budget["left"] - len(done)),
    }


def interactivity(point: dict) -> float | None:
    """1000 / the median TPOT (ms) of the point's successful requests: tok/s per user (None: none)."""
    tpots = sorted(r["tpot_ms"] for r in point["requests"] if r.get("ok") and r.get("tpot_ms"))
    if not tpots:
        return None
    mid = len(tpots) // 2
    median = tpots[mid] if len(tpots) % 2 else (tpots[mid - 1] + tpots[mid]) / 2
    return 1000.0 / median if median > 0 else None


def throughput(point: dict) -> float:
    """Output tokens of the point's successful requests per second of the span they ran in."""
    reqs = point["requests"]
    span = max((r["end_s"] for r in reqs), default=0.0) - min((r["start_s"] for r in reqs), default=0.0)
    tokens = sum(r["output_tokens"] for r in reqs if r.get("ok"))
    return tokens / span if span > 0 else 0.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True, help="base URL of the OpenAI-compatible server")
    p.add_argument("--model", default="default")
    p.add_argument("--input-words", type=int, default=100)
    p.add_argument("--output-tokens", type=int, default=32)
    p.add_argument("--concurrency", default="1,2,4", help="comma-separated sweep")
    p.add_argument("--requests-per-point", type=int, default=8)
    p.add_argument("--point-seconds", type=float, default=60.0)
    p.add_argument("--max-seconds", type=float, default=240.0)
    p.add_argument("--request-timeout-s", type=float, default=60.0)
    p.add_argument("--repeats", type=int, default=1, help="run the whole sweep this many times (replicates)")
    p.add_argument("--extend-above", type=float, default=0.0,
                   help="after the sweep's levels, double the concurrency while the last point served users "
                        "faster than this (tok/s per user): the sweep reaches the target instead of stopping short")
    p.add_argument("--max-concurrency", type=int, default=0, help="the extension's cap (0: no extension)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--api-key-env", default="", help="environment variable holding a bearer token")
    p.add_argument("--no-warmup", action="store_true")
    p.add_argument("--warmup-wait-s", type=float, default=120.0)  # a model still loading answers 503
    try:
        args = p.parse_args(argv)
        levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    except (SystemExit, ValueError):
        return 2
    if (not levels or min(levels) < 1 or max(levels) > 256 or args.requests_per_point < 1 or not 1 <= args.repeats <= 20
            or not 0 <= args.max_concurrency <= 256 or not args.extend_above >= 0):
        print("concurrency and max-concurrency must be 1..256, requests-per-point >= 1, repeats 1..20 and "
              "extend-above >= 0", file=sys.stderr)
        return 2
    url = urllib.parse.urlsplit(args.url)
    if url.scheme not in ("http", "https") or not url.hostname:
        print("--url must be http(s)://host[:port]", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)  # noqa: S311 (random prompts, not secrets)
    started = time.monotonic()
    deadline = started + args.max_seconds
    out: dict = {"version": VERSION, "url": args.url, "model": args.model, "input_words": args.input_words,
                 "output_tokens": args.output_tokens, "points": [], "truncated": False}
    if not args.no_warmup:
        # a server still loading its model answers 503 (or not at all), and a gateway in front of it
        # may answer 500 or 502 meanwhile: wait a bounded while for one request to succeed (a flaky
        # gateway's one-in-five 500 once ended the wait and the sweep met a model still loading).
        # A client error (bad URL path, auth) will not pass by waiting: the sweep records it.
        until = time.monotonic() + args.warmup_wait_s
        while True:
            warm = one_request(
                url,
                {"model": args.model, "prompt": prompt(rng, 8), "max_tokens": 4, "stream": True, "cache_prompt": False},
                args.request_timeout_s,
                {"Content-Type": "application/json"},
            )
            client_error = 400 <= warm["status"] < 500 and warm["status"] != 429
            if warm["ok"] or client_error or time.monotonic() >= until:
                break
            time.sleep(1)
        out["warmup"] = {"ok": warm["ok"], "status": warm["status"], "error": warm["error"]}
        if warm["status"] == 0:
            print(json.dumps(out))
            return 3
    for sweep in range(args.repeats):
        sweep_levels = list(levels)
        i = 0
        while i < len(sweep_levels):
            if time.monotonic() >= deadline:
                out["truncated"] = True
                break
            c = sweep_levels[i]
            point = {"sweep": sweep, **run_point(args, url, c, rng, deadline)}
            if i >= len(levels):
                point["extension"] = True  # not in --concurrency: added to reach --extend-above
            out["points"].append(point)
            i += 1
            if i == len(sweep_levels) and args.extend_above > 0 and c * 2 <= args.max_concurrency:
                x = interactivity(point)
                # stop once more streams stopped adding throughput (within 5%): the server is
                # saturated, which the caller reads from these points; more would only queue
                before = [q for q in out["points"] if q["sweep"] == sweep and q["concurrency"] < c]
                flat = bool(before) and throughput(point) <= 1.05 * throughput(before[-1])
                if x is not None and x > args.extend_above and not flat:
                    sweep_levels.append(c * 2)
        if out["truncated"]:
            break
    out["elapsed_s"] = round(time.monotonic() - started, 3)
    print(json.dumps(out, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
