"""The serving stack on the testbed, measured by serving_goodput as a tenant would.

Three testbeds with ``serving.enabled`` (node1 runs the real llama-server): the well-chosen
configuration of ``exemplary``, the same node badly configured (``testbed.serving.POORLY_CHOSEN``:
8 slots on 1 thread, 16-token prompt batches) and ``flaky``, whose gateway fails a share of
requests. The probe runs from a tenant node through srun, uploads its load generator over SFTP and
sweeps concurrency. The two configurations must measurably differ at the same target
interactivity; flaky must show failed requests and not pass.

Needs the built server (scripts/install-llm.sh): without it these tests fail with that command,
unless the machine cannot run the testbed at all (then they skip like every testbed test).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from probes.management.commands.probe_matrix import catalog_run
from probes.management.commands.probe_matrix import testbed_context as context_for
from testbed import serving
from testbed.errors import TestbedError
from testbed.pytest_helpers import missing_testbed_requirements, prefixed_name, running_testbed

pytestmark = [pytest.mark.testbed, pytest.mark.timeout(2400)]


# a lighter sweep than the preset: the suite's other halves share the 2 cores
LIGHT = {"serving_goodput.requests_per_point": 4, "serving_goodput.output_tokens": 24, "serving_goodput.input_words": 48}


def _run(name: str, **settings: object):
    ctx = context_for(name, settings={**LIGHT, **settings})
    (finding,) = catalog_run(ctx, ["serving_goodput"])["serving_goodput"].findings
    return finding


def _table(label: str, finding) -> str:
    rows = [f"{label}: outcome {finding.outcome} value {finding.value} {finding.unit}"]
    for p in finding.evidence.get("points", []):
        rows.append(
            f"  c={p['concurrency']:<2} interactivity {p['interactivity_tok_s_per_user']} tok/s/user "
            f"throughput {p['throughput_tok_s_per_gpu']} tok/s/node ttft_p50 {p['ttft_p50_ms']} ms "
            f"errors {p['error_rate']} goodput {p['goodput']}"
        )
    rows.append(f"  frontier {json.dumps(finding.evidence.get('frontier'))}")
    rows.append(f"  server_check {json.dumps(finding.evidence.get('server_check'))}")
    return "\n".join(rows)


@pytest.fixture(scope="module")
def measured():
    why = missing_testbed_requirements()
    if why is None:
        try:
            serving.server_files()
        except TestbedError as exc:
            pytest.fail(str(exc))
    configs = {
        "good": ("exemplary", prefixed_name("svg"), {"serving": {"enabled": True}}),
        "poor": ("exemplary", prefixed_name("svp"), {"serving": {"enabled": True, **serving.POORLY_CHOSEN}}),
        "flaky": ("flaky", prefixed_name("svf"), {"serving": {"enabled": True}, "faults": {"drop_rate_per_hour": 0}}),
    }
    out = {}
    # The two configurations are measured at the same time, on the same machine: the 2 shared cores'
    # load swings decode rates several-fold within minutes, so measuring one after the other would
    # compare the load, not the configuration. Then flaky alone.
    with (
        running_testbed(*configs["good"][:1], name=configs["good"][1], nodes=2, overrides=configs["good"][2]) as good,
        running_testbed(*configs["poor"][:1], name=configs["poor"][1], nodes=2, overrides=configs["poor"][2]) as poor,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        assert good.serving_url.endswith(":8080") and poor.serving_url.endswith(":8080")
        futures = {"good": pool.submit(_run, good.name), "poor": pool.submit(_run, poor.name)}
        out.update({k: f.result() for k, f in futures.items()})
    profile, name, overrides = configs["flaky"]
    with running_testbed(profile, name=name, nodes=2, overrides=overrides) as flaky:
        out["flaky"] = _run(flaky.name)
    for key in ("good", "poor", "flaky"):
        print(_table(key, out[key]))
    return out


def test_the_well_chosen_configuration_is_measured_with_the_contracts_evidence(measured):
    good = measured["good"]
    # measured and judged (the preset's target assumes idle cores: out of range is a fail, not an error)
    assert str(good.outcome) in ("pass", "warn", "fail"), good.summary
    assert good.metric == "throughput_at_target" and good.unit == "tok/s/gpu"
    ev = good.evidence
    assert (good.value is not None) == ev["in_range"] and ev["accelerators"] == 1.0
    assert len(ev["points"]) >= 3 and ev["frontier"] and ev["error_rate"] == 0
    assert all(p["goodput"] is not None and 0 <= p["goodput"] <= 1 for p in ev["points"])
    assert ev["server_check"]["token_ratio"] == 1.0 and ev["server_check"]["within_5pct"], ev["server_check"]


# Not a test any more: "the badly chosen configuration delivers measurably less at the target".
# Calibrated on a machine at load 9-12, it failed on a quiet one (CI, 2026-12-01): the one-slot
# configuration then decoded 57 tok/s per user against the four-slot one's 11-22, so the two
# frontiers did not overlap the way the test assumed. What one slot loses is goodput under
# concurrency (requests queue, TTFT misses its SLO), not interactivity; a contrast that holds on
# both a quiet and a loaded machine is issue 16's open work (see the closing note).


def test_flaky_serving_shows_failed_requests_and_does_not_pass(measured):
    flaky = measured["flaky"]
    assert flaky.evidence["error_rate"] > 0, flaky.summary
    assert str(flaky.outcome) != "pass"
    assert any(p["error_rate"] > 0 for p in flaky.evidence["points"])
