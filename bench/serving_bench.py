"""Opgrade's serving load generator beside NVIDIA AIPerf, against the same real LLM server.

Starts llama.cpp's ``llama-server`` (scripts/install-llm.sh, the exemplary configuration: 4 slots,
1 thread) on loopback with the gemma3-270m GGUF, in its own CPU cgroup (``--cpu-quota``, as on a
testbed node: what it serves does not follow the machine's load), then for each concurrency of the
sweep runs Opgrade's generator (``probes/catalog/_serving_loadgen.py``, what serving_goodput
uploads) and ``aiperf profile`` with the same request shape (same prompt length as the server
counts it, fixed output length with ``ignore_eos``, same request count, streaming
``/v1/completions``), alternating which goes first each round, and prints both tools' output
throughput and TTFT p50 (medians over the rounds) and their ratio (Opgrade / AIPerf).

Same shape, checked on the server: aiperf shapes prompts with its own tokenizer, so before the sweep
a calibration run reads the server's ``llamacpp:prompt_tokens_total`` (``/metrics``) around an
aiperf run and scales aiperf's requested prompt length until the server sees ours (printed). Each
measured run's prompt, cached-prompt and output tokens per request, as the server counted them, are
printed too. Both tools send ``cache_prompt: false``: aiperf's synthetic prompts share a prefix, and
with llama-server's default prompt cache the server prefilled ~5 new tokens a request, so aiperf's
TTFT measured the cache (a first run here: aiperf TTFT p50 90-144 ms against ours 754-1533 ms).

AIPerf lives in its own venv (``var/bench-serving-venv``, ``requirements-bench-serving.txt``;
``--install`` creates it). It counts tokens with the served model's own tokenizer, read by
transformers from the GGUF (nothing from a model hub).

    .venv/bin/python bench/serving_bench.py [--install] [--concurrency 1,2,4] [--requests 8]

Root for the CPU cgroup (``--cpu-quota 0``: none, the shared cores); loopback only. The clients
run on the cores left over, so a loaded machine still moves TTFT a little: the rounds' spread is
printed beside the medians.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from probes.catalog.serving_goodput import LOADGEN  # noqa: E402
from probes.parsers.serving import percentile  # noqa: E402
from testbed import serving  # noqa: E402

VENV = ROOT / "var" / "bench-serving-venv"
AIPERF_WARMUP = 1  # aiperf's warm-up request (it refuses 0): the server counts it too, so per-request figures divide by n + 1
# The served model's own vocabulary, read from the GGUF with the gguf package (SentencePiece pieces
# and scores as a Unigram model for the tokenizers library): aiperf shapes its synthetic prompts
# with it. Output tokens are the server's own counts (--use-server-token-count), as ours are checked.
TOKENIZER_SCRIPT = """
import json, sys
from pathlib import Path
import gguf
from tokenizers import Tokenizer, decoders, models, normalizers
r = gguf.GGUFReader(sys.argv[1])
def arr(name):
    fld = r.fields[name]
    return [fld.parts[i] for i in fld.data]
toks = [bytes(x).decode("utf-8", "replace") for x in arr("tokenizer.ggml.tokens")]
scores = [float(x[0]) for x in arr("tokenizer.ggml.scores")]
tok = Tokenizer(models.Unigram(list(zip(toks, scores)), unk_id=3))
tok.normalizer = normalizers.Replace(" ", "\u2581")
tok.decoder = decoders.Replace("\u2581", " ")
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
tok.save(str(out / "tokenizer.json"))
(out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast",
    "bos_token": toks[2], "eos_token": toks[1], "unk_token": toks[3], "pad_token": toks[0]}))
print(len(toks))
"""


def install() -> None:
    if not (VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run(
        [str(VENV / "bin" / "pip"), "install", "-q", "-r", str(ROOT / "requirements-bench-serving.txt")],
        check=True,
        timeout=1800,
    )


def tokenizer_dir(model: Path, out: Path) -> Path:
    if not (out / "tokenizer.json").exists() and not (out / "tokenizer_config.json").exists():
        subprocess.run(
            [str(VENV / "bin" / "python"), "-c", TOKENIZER_SCRIPT, str(model.resolve()), str(out)], check=True, timeout=600
        )
    return out


def ours(url: str, c: int, n: int, words: int, out_tokens: int) -> dict:
    t0 = time.monotonic()
    done = subprocess.run(
        [
            sys.executable, str(LOADGEN), "--url", url, "--input-words", str(words), "--output-tokens", str(out_tokens),
            "--concurrency", str(c), "--requests-per-point", str(n), "--max-seconds", "600", "--no-warmup",
        ],
        capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    doc = json.loads(done.stdout)
    reqs = [r for p in doc["points"] for r in p["requests"] if r["ok"]]
    span = max(r["end_s"] for r in reqs) - min(r["start_s"] for r in reqs)
    return {
        "throughput": sum(r["output_tokens"] for r in reqs) / span,
        "ttft_p50": percentile([r["ttft_ms"] for r in reqs], 50),
        "prompt_tokens": statistics.mean(r["usage"]["prompt_tokens"] for r in reqs if r.get("usage")),
        "wall": time.monotonic() - t0,
    }


def _find(doc: object, *names: str) -> dict:
    """The metric record named ``names`` anywhere in aiperf's export (a key, or a record's tag)."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for name in names:
                if isinstance(node.get(name), dict):
                    return node[name]
            if node.get("tag") in names or node.get("name") in names:
                return node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    raise KeyError(f"none of {names} in aiperf's export")


def server_counts(url: str) -> dict[str, float]:
    """The server's own counters (llama-server ``/metrics``): prompt and predicted tokens, requests."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:  # noqa: S310 (loopback http)
        text = resp.read().decode()
    out = {}
    for name in ("prompt_tokens_total", "prompt_tokens_cached_total", "tokens_predicted_total", "n_decode_total"):
        m = re.search(rf"^llamacpp:{name} ([0-9.eE+-]+)$", text, re.M)
        out[name] = float(m.group(1)) if m else float("nan")
    return out


def on_server(url: str, run, n: int) -> tuple[dict, dict]:
    """``run()``'s result and what the server counted for it per request (prompt and output tokens)."""
    before = server_counts(url)
    result = run()
    after = server_counts(url)
    per = {k: (after[k] - before[k]) / n for k in ("prompt_tokens_total", "tokens_predicted_total")}
    cached = (after["prompt_tokens_cached_total"] - before["prompt_tokens_cached_total"]) / n
    per["prompt_tokens_cached"] = cached if cached == cached else 0.0  # NaN: a server without the counter
    return result, per


def aiperf(url: str, c: int, n: int, prompt_tokens: int, out_tokens: int, tok: Path, work: Path, tag: str = "") -> dict:
    art = work / f"aiperf-c{c}{tag}"
    t0 = time.monotonic()
    done = subprocess.run(
        [
            str(VENV / "bin" / "aiperf"), "profile", "--model", "gemma3-270m", "--tokenizer", str(tok),
            "--url", url, "--endpoint-type", "completions", "--streaming",
            "--synthetic-input-tokens-mean", str(prompt_tokens), "--synthetic-input-tokens-stddev", "0",
            "--output-tokens-mean", str(out_tokens), "--output-tokens-stddev", "0",
            "--extra-inputs", "ignore_eos:true", "--extra-inputs", f"min_tokens:{out_tokens}",
            # llama-server caches prompt prefixes by default and aiperf's synthetic prompts share theirs:
            # without this the server prefilled ~5 new tokens a request and aiperf timed the cache
            "--extra-inputs", "cache_prompt:false",
            "--concurrency", str(c), "--request-count", str(n), "--warmup-request-count", "1",
            "--random-seed", "7", "--artifact-dir", str(art), "--ui-type", "none", "--use-server-token-count",
        ],
        capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"aiperf failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    export = art / "profile_export_aiperf.json"  # the profiling phase (phases/warmup/ holds the warm-up's)
    if not export.exists():
        raise SystemExit(f"aiperf wrote no {export.name} under {art}")
    data = json.loads(export.read_text())
    try:
        throughput = _find(data, "output_token_throughput")
        ttft = _find(data, "time_to_first_token", "ttft")
    except KeyError as exc:
        raise SystemExit(f"{exc} ({export})") from exc
    isl = data.get("input_sequence_length") or {}
    return {
        "throughput": float(throughput.get("avg", throughput.get("value", 0))),
        "ttft_p50": float(ttft.get("p50", ttft.get("median", 0))),
        "isl": float(isl.get("avg", 0)),
        "wall": time.monotonic() - t0,
    }


def calibrate(url: str, want: float, out_tokens: int, tok: Path, work: Path, n: int = 4) -> tuple[int, list[str]]:
    """aiperf's requested prompt length that makes the server see ``want`` prompt tokens per request."""
    ask, notes = round(want), []
    for i in range(3):
        _, per = on_server(url, lambda a=ask, k=i: aiperf(url, 1, n, a, out_tokens, tok, work, f"-cal{k}"), n + AIPERF_WARMUP)
        seen = per["prompt_tokens_total"]
        notes.append(f"aiperf asked {ask} prompt tokens -> the server saw {seen:.1f} per request")
        if abs(seen - want) <= max(2.0, 0.03 * want) or seen <= 0:
            break
        ask = max(1, round(ask * want / seen))
    return ask, notes


def _med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _spread(rows: list[dict], key: str) -> str:
    vals = [r[key] for r in rows]
    return f"{min(vals):.1f}-{max(vals):.1f}" if len(vals) > 1 else f"{vals[0]:.1f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--install", action="store_true", help="create var/bench-serving-venv with aiperf first")
    p.add_argument("--concurrency", default="1,2,4")
    p.add_argument("--requests", type=int, default=8)
    p.add_argument("--rounds", type=int, default=2, help="runs per tool per concurrency, alternating which goes first")
    p.add_argument("--input-words", type=int, default=96)
    p.add_argument("--output-tokens", type=int, default=32)
    p.add_argument("--cpu-quota", type=float, default=1.0, help="the server's CPUs (cgroup); 0: the shared cores")
    p.add_argument("--keep", action="store_true", help="keep aiperf's artifacts in var/bench-serving-artifacts")
    args = p.parse_args()
    if args.install:
        install()
    if not (VENV / "bin" / "aiperf").exists():
        print("aiperf is not installed: run with --install (requirements-bench-serving.txt)", file=sys.stderr)
        return 2
    _, model = serving.server_files(wait_s=0)
    levels = [int(c) for c in args.concurrency.split(",")]
    n = args.requests
    rows = []
    with tempfile.TemporaryDirectory(prefix="opgrade-serving-bench-") as tmp:
        work = Path(tmp) if not args.keep else ROOT / "var" / "bench-serving-artifacts"
        tok = tokenizer_dir(model, ROOT / "var" / "bench-serving-tokenizer")
        with serving.local_server({"serving": {"cpu_quota": args.cpu_quota, "threads": max(1, int(args.cpu_quota))}}) as url:
            ours(url, 1, 2, 8, 4)  # warm the server once
            _, per = on_server(url, lambda: ours(url, 1, 4, args.input_words, args.output_tokens), 4)
            want = per["prompt_tokens_total"]
            ask, notes = calibrate(url, want, args.output_tokens, tok, work)
            print(f"prompt shape: ours {args.input_words} words -> the server saw {want:.1f} tokens per request; "
                  + "; ".join(notes) + f"; aiperf runs ask for {ask}", file=sys.stderr)
            for c in levels:
                mine_runs, theirs_runs = [], []
                for r in range(args.rounds):
                    def run_ours(c=c):
                        return on_server(url, lambda: ours(url, c, n, args.input_words, args.output_tokens), n)

                    def run_theirs(c=c, r=r):
                        return on_server(url, lambda: aiperf(url, c, n, ask, args.output_tokens, tok, work, f"-r{r}"),
                                         n + AIPERF_WARMUP)

                    order = (run_ours, run_theirs) if r % 2 == 0 else (run_theirs, run_ours)
                    for fn in order:
                        res, per = fn()
                        res.update(server_prompt=per["prompt_tokens_total"], server_output=per["tokens_predicted_total"],
                                   server_cached=per["prompt_tokens_cached"])
                        (mine_runs if fn is run_ours else theirs_runs).append(res)
                rows.append((c, mine_runs, theirs_runs))
                print(f"c={c}: done ({args.rounds} rounds)", file=sys.stderr)
    print(f"server: llama-server, {args.cpu_quota:g} CPU cgroup quota; {n} requests per run, {args.rounds} rounds per tool "
          f"(order alternating); medians, the rounds' range in brackets")
    print(
        f"{'conc':>4} | {'opgrade tok/s':>19} {'aiperf tok/s':>19} {'ratio':>6} | {'opgrade TTFT p50 ms':>21} "
        f"{'aiperf TTFT p50 ms':>21} {'ratio':>6} | server prompt/output tokens per request: opgrade, aiperf"
    )
    for c, mine, theirs in rows:
        mt, tt = _med(mine, "throughput"), _med(theirs, "throughput")
        mf, tf = _med(mine, "ttft_p50"), _med(theirs, "ttft_p50")
        print(
            f"{c:>4} | {mt:>7.1f} [{_spread(mine, 'throughput'):>9}] {tt:>7.1f} [{_spread(theirs, 'throughput'):>9}] "
            f"{mt / tt:>6.3f} | {mf:>8.0f} [{_spread(mine, 'ttft_p50'):>11}] {tf:>8.0f} [{_spread(theirs, 'ttft_p50'):>11}] "
            f"{mf / tf:>6.3f} | {_med(mine, 'server_prompt'):.1f}/{_med(mine, 'server_output'):.1f}, "
            f"{_med(theirs, 'server_prompt'):.1f}/{_med(theirs, 'server_output'):.1f} "
            f"(cached {_med(mine, 'server_cached'):.1f}, {_med(theirs, 'server_cached'):.1f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
