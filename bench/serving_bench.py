"""Opgrade's serving load generator beside NVIDIA AIPerf, against the same real LLM server.

Starts llama.cpp's ``llama-server`` (scripts/install-llm.sh, the exemplary configuration: 4 slots,
2 threads) on loopback with the gemma3-270m GGUF, then for each concurrency of the sweep runs
Opgrade's generator (``probes/catalog/_serving_loadgen.py``, what serving_goodput uploads) and
``aiperf profile`` with the same request shape (same prompt length in the model's tokens, fixed
output length with ``ignore_eos``, same request count, streaming ``/v1/completions``), one after
the other, and prints both tools' output throughput and TTFT p50 and their ratio (Opgrade / AIPerf).

AIPerf lives in its own venv (``var/bench-serving-venv``, ``requirements-bench-serving.txt``;
``--install`` creates it). It counts tokens with the served model's own tokenizer, read by
transformers from the GGUF (nothing from a model hub).

    .venv/bin/python bench/serving_bench.py [--install] [--concurrency 1,2,4] [--requests 8]

Root not needed; loopback only. The 2 shared cores make absolute figures noisy (the two tools run one after the other, and the
machine's load swings decode rates several-fold within minutes); aiperf shapes prompts with an
approximation of the model's tokenizer (Unigram over the GGUF's SentencePiece pieces), so its
prompts can be shorter on the server than ours: both prompt lengths are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from probes.catalog.serving_goodput import LOADGEN  # noqa: E402
from probes.parsers.serving import percentile  # noqa: E402
from testbed import serving  # noqa: E402

VENV = ROOT / "var" / "bench-serving-venv"
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


def aiperf(url: str, c: int, n: int, prompt_tokens: int, out_tokens: int, tok: Path, work: Path) -> dict:
    art = work / f"aiperf-c{c}"
    t0 = time.monotonic()
    done = subprocess.run(
        [
            str(VENV / "bin" / "aiperf"), "profile", "--model", "gemma3-270m", "--tokenizer", str(tok),
            "--url", url, "--endpoint-type", "completions", "--streaming",
            "--synthetic-input-tokens-mean", str(prompt_tokens), "--synthetic-input-tokens-stddev", "0",
            "--output-tokens-mean", str(out_tokens), "--output-tokens-stddev", "0",
            "--extra-inputs", "ignore_eos:true", "--extra-inputs", f"min_tokens:{out_tokens}",
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--install", action="store_true", help="create var/bench-serving-venv with aiperf first")
    p.add_argument("--concurrency", default="1,2,4")
    p.add_argument("--requests", type=int, default=8)
    p.add_argument("--input-words", type=int, default=96)
    p.add_argument("--output-tokens", type=int, default=32)
    p.add_argument("--keep", action="store_true", help="keep aiperf's artifacts in var/bench-serving-artifacts")
    args = p.parse_args()
    if args.install:
        install()
    if not (VENV / "bin" / "aiperf").exists():
        print("aiperf is not installed: run with --install (requirements-bench-serving.txt)", file=sys.stderr)
        return 2
    _, model = serving.server_files(wait_s=0)
    levels = [int(c) for c in args.concurrency.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="opgrade-serving-bench-") as tmp:
        work = Path(tmp) if not args.keep else ROOT / "var" / "bench-serving-artifacts"
        tok = tokenizer_dir(model, ROOT / "var" / "bench-serving-tokenizer")
        with serving.local_server() as url:
            ours(url, 1, 2, 8, 4)  # warm the server once
            for c in levels:
                mine = ours(url, c, args.requests, args.input_words, args.output_tokens)
                theirs = aiperf(url, c, args.requests, round(mine["prompt_tokens"]), args.output_tokens, tok, work)
                rows.append((c, mine, theirs))
                print(f"c={c}: done (opgrade {mine['wall']:.0f} s, aiperf {theirs['wall']:.0f} s)", file=sys.stderr)
    print(
        f"{'conc':>4} | {'opgrade tok/s':>13} {'aiperf tok/s':>12} {'ratio':>6} | {'opgrade TTFT p50 ms':>19} "
        f"{'aiperf TTFT p50 ms':>18} {'ratio':>6} | prompt tokens (server / aiperf's count)"
    )
    for c, mine, theirs in rows:
        print(
            f"{c:>4} | {mine['throughput']:>13.1f} {theirs['throughput']:>12.1f} {mine['throughput'] / theirs['throughput']:>6.3f} | "
            f"{mine['ttft_p50']:>19.1f} {theirs['ttft_p50']:>18.1f} {mine['ttft_p50'] / theirs['ttft_p50']:>6.3f} | "
            f"{mine['prompt_tokens']:.0f} / {theirs['isl']:.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
