"""The load generator against the REAL server: llama.cpp's llama-server (built by
scripts/install-llm.sh, cached outside the clone) on loopback, serving the gemma3-270m GGUF.

Its measurement must agree with what the server itself reports for the same requests, within 5%:
output tokens counted from the stream vs each response's ``usage`` and the ``/metrics`` counter,
and the decode rate the client times vs llama.cpp's own ``timings``. No mock: without the built
server this test FAILS with the command to run (it waits for a build that is still running, as in
CI, where .ci/run starts it in the background).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import pytest

from probes.catalog.serving_goodput import LOADGEN
from probes.parsers.serving import Slo, analyse, completions_verdict
from testbed import serving
from testbed.errors import TestbedError
from testbed.pytest_helpers import serving_exclusive

# testbed: it needs root (the server's CPU cgroup), so it runs in the testbed shard, where it also
# meets the other LLM servers' tests in one process and waits less for the serving lock
pytestmark = [pytest.mark.testbed, pytest.mark.timeout(3000)]  # may wait for CI's build (OPGRADE_LLM_WAIT_S)


def _metric(text: str, name: str) -> float:
    m = re.search(rf"^{re.escape(name)}\s+([0-9.e+]+)$", text, re.M)
    assert m, f"{name} not in /metrics"
    return float(m.group(1))


@pytest.fixture(scope="module")
def llm_server() -> Iterator[str]:
    try:
        serving.server_files()
    except TestbedError as exc:
        pytest.fail(f"the real LLM server is not built here: {exc}")
    # its own weighted one-CPU cgroup, as on a testbed node, and the machine's serving lock: the
    # suite's other shards load the same two cores (and run LLM servers of their own), and unshielded
    # the c=1 and c=4 points would be measured under different loads
    with (
        serving_exclusive(what="the real-server test"),
        serving.local_server({"serving": {"parallel": 4, "threads": 1, "cpu_quota": 1.0}}) as url,
    ):
        yield url


def _metrics(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:  # noqa: S310 (loopback http)
        return resp.read().decode()


def test_load_generator_tokens_and_decode_rate_agree_with_the_server_within_5_percent(llm_server):
    before = _metric(_metrics(llm_server), "llamacpp:tokens_predicted_total")
    done = subprocess.run(
        [
            sys.executable, str(LOADGEN), "--url", llm_server, "--input-words", "48", "--output-tokens", "24",
            "--concurrency", "1,4", "--requests-per-point", "4", "--point-seconds", "600", "--max-seconds", "900",
            "--request-timeout-s", "300", "--seed", "7", "--no-warmup",
        ],
        capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    after = _metric(_metrics(llm_server), "llamacpp:tokens_predicted_total")
    doc = json.loads(done.stdout)
    reqs = [r for p in doc["points"] for r in p["requests"]]
    assert len(reqs) == 8 and all(r["ok"] for r in reqs), [r["error"] for r in reqs if not r["ok"]]
    client_tokens = sum(r["output_tokens"] for r in reqs)
    assert client_tokens == 8 * 24  # fixed output length, counted from the stream

    result = analyse(doc, slo=Slo(ttft_ms=5000, tpot_ms=500), target=20, accelerators=1)
    check = result["server_check"]
    print("server_check", json.dumps(check), "frontier", json.dumps(result["frontier"]))
    assert check["requests_compared"] == 8 and check["requests_timed"] == 8
    assert check["token_ratio"] == 1.0, check  # usage.completion_tokens, request by request
    assert abs(check["decode_rate_ratio"] - 1) <= 0.05, check  # client decode rate vs timings.predicted_ms
    assert check["within_5pct"] is True
    # a real model answers different random prompts differently (a canned gateway would not)
    assert result["completions"]["checked"] == 8 and result["completions"]["distinct"] >= 2, result["completions"]
    assert completions_verdict(result["completions"], min_distinct=4) is None
    # the server's own counter saw the same tokens (the prompt-free warm-up is off)
    assert abs(client_tokens / (after - before) - 1) <= 0.05, (client_tokens, after - before)
    # and the client's throughput is what the server's counter gives over the same wall time
    wall = sum(p["wall_s"] for p in doc["points"])
    client_tps = client_tokens / wall
    server_tps = (after - before) / wall
    assert abs(client_tps / server_tps - 1) <= 0.05
    # concurrency trades interactivity for throughput on this server: the probe's curve
    c1, c4 = result["points"]
    assert c4["throughput_tok_s_per_gpu"] > c1["throughput_tok_s_per_gpu"]
    assert c4["interactivity_tok_s_per_user"] < c1["interactivity_tok_s_per_user"]
