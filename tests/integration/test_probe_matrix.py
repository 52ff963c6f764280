"""The discrimination matrix: the catalog, run against real testbeds, tells good operators from bad.

Three kinds of checks, on the testbed (real Slurm, sshd, Prometheus, nginx, rsyslog):

1. ``exemplary`` against ``leaky`` (a pair of two-node testbeds of this module): every security
   probe passes on one and critically fails on the other; every monitoring probe passes on
   exemplary and fails (not critically) on leaky, whose monitoring keeps 1 day, scrapes nodes every
   60 s and only half of them, and lags 20 s behind its logs.
2. One knob flipped on an otherwise exemplary testbed: the probe that covers that knob fails,
   and no other probe reports a critical fail (so one defect is charged once).
3. The fault-injecting probes on a testbed of their own (they break nodes): the provider that
   replaces nodes and runs a health check passes, the one that does neither does not.

Waits are bounded by testbed-scale timeouts (probes/matrix.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from probes.matrix import ProbeResult, catalog_run
from probes.matrix import testbed_context as context_for
from testbed.api import TestbedInfo
from testbed.pytest_helpers import prefixed_name, running_testbed

pytestmark = [pytest.mark.testbed, pytest.mark.integration]

SECURITY = [
    "tenant_data_exposure",
    "tenant_log_isolation",
    "tenant_metric_isolation",
    "scheduler_privacy",
    "home_isolation",
    "bmc_reachable",
    "kernel_pending_reboot",
]
MONITORING = ["metrics_coverage", "metrics_freshness", "log_ingest_latency", "retention_days"]
# Everything but the fault injectors and the slow audit (run once, below). node_ready_time adds and
# releases nodes, which is why this module brings up its own pair of testbeds.
NON_DISRUPTIVE = [
    "node_ready_time",
    *SECURITY,
    *MONITORING,
    "health_check_configured",
    "provider_listeners",
    "time_to_first_job",
    "software_baseline",
    "gpu_inventory",
]
# knob=value on exemplary -> the probe that must catch it.
KNOB_PROBE = {
    "slurm.private_data=false": "scheduler_privacy",
    "slurm.accounting_private_data=false": "scheduler_privacy",
    "homes.mode=0755": "home_isolation",
    "logs.isolation=false": "tenant_log_isolation",
    "logs.shared_dir_readable=true": "tenant_log_isolation",
    "metrics.isolation=false": "tenant_metric_isolation",
    "kernel.pending_reboot=true": "kernel_pending_reboot",
    "bmc.reachable=true": "bmc_reachable",
    "slurm.health_check=false": "health_check_configured",
    "provisioning.delay_s=20": "node_ready_time",
    # one two-node testbed per monitoring knob too: cheap next to the security probes each flip runs,
    # and a shared one would no longer show that a single knob is charged to a single probe
    "metrics.retention=1d": "retention_days",
    "metrics.scrape_interval_s=60": "metrics_freshness",
    "metrics.scrape_all_nodes=false": "metrics_coverage",
    "logs.ingest_delay_s=20": "log_ingest_latency",
    "fs.private_tmp=false": "tenant_data_exposure",
    "logs.nginx_access_log_private=false": "tenant_data_exposure",
}
# The whole-surface scan is the backstop behind every file-level isolation probe: a home, log
# directory or job completion log left open is its finding too, so it may fail beside them.
BACKSTOPS = {"tenant_data_exposure"}
FAST = {"metrics_freshness.visible_timeout_s": 30, "log_ingest_latency.visible_timeout_s": 30}


def parallel[T](fn: Callable[[str], T], keys: list[str], workers: int = 3) -> dict[str, T]:
    """``{key: fn(key)}`` computed a few at a time: testbeds are mostly idle daemons, so the
    module's wall time is bounded by the slowest testbed, not the sum (CI's budget is small)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(keys, pool.map(fn, keys), strict=True))


def run(name: str, probes: list[str], **settings: object) -> dict[str, ProbeResult]:
    return catalog_run(context_for(name, settings={**FAST, **settings}), list(dict.fromkeys(probes)))


@pytest.fixture(scope="module")
def testbed_exemplary() -> Iterator[TestbedInfo]:
    # Our own pair (not the session-shared ptex/ptlk): node_ready_time adds and releases nodes,
    # and other suites running beside this one must not see that, nor pull ours down.
    with running_testbed("exemplary", name=prefixed_name("mex"), nodes=2) as info:
        yield info


@pytest.fixture(scope="module")
def testbed_leaky() -> Iterator[TestbedInfo]:
    with running_testbed("leaky", name=prefixed_name("mlk"), nodes=2) as info:
        yield info


@pytest.fixture(scope="module")
def matrix(testbed_exemplary, testbed_leaky) -> dict[str, dict[str, ProbeResult]]:
    names = {"exemplary": testbed_exemplary.name, "leaky": testbed_leaky.name}
    return parallel(
        lambda profile: run(names[profile], NON_DISRUPTIVE, **{"node_ready_time.replicates": 2}), list(names)
    )


@pytest.mark.parametrize("probe", SECURITY)
def test_security_probe_passes_on_exemplary_and_critically_fails_on_leaky(matrix, probe):
    good, bad = matrix["exemplary"][probe], matrix["leaky"][probe]
    assert good.outcome == "pass", [f.summary for f in good.findings]
    assert bad.outcome == "fail" and bad.critical, [f.summary for f in bad.findings]


def test_isolation_failures_keep_the_path_and_a_redacted_request_and_response(matrix, testbed_leaky):
    finding = next(f for f in matrix["leaky"]["tenant_metric_isolation"].findings if f.critical)
    hit = finding.evidence["hits"][0]
    assert hit["path"] and hit["request"]["url"].startswith(testbed_leaky.metrics_url)
    assert hit["request"]["headers"]["Authorization"] == "Basic [REDACTED]"
    assert finding.evidence["nonce"] in hit["response"]["body"]
    passwords = [t.http_password for t in testbed_leaky.tenants]
    blob = repr([f.evidence for r in matrix["leaky"].values() for f in r.findings])
    assert not any(p in blob for p in passwords)


def test_node_ready_time_separates_fast_from_slow_provisioning(matrix):
    fast, slow = matrix["exemplary"]["node_ready_time"], matrix["leaky"]["node_ready_time"]
    assert fast.outcome == "pass" and slow.outcome in ("fail", "timeout")
    assert {f.metric for f in fast.findings} == {"p50_seconds", "p95_seconds"}
    # a node never ready by the deadline is censored (no value): slower than any measured time
    assert all(f.value is not None or f.outcome == "timeout" for f in slow.findings), [f.summary for f in slow.findings]
    assert max(f.value for f in fast.findings) < min(math.inf if f.value is None else f.value for f in slow.findings)


def test_the_controller_exposes_only_tenant_services_on_both_profiles(matrix):
    for profile in ("exemplary", "leaky"):  # leaky's BMCs are on the nodes (bmc_reachable), not here
        result = matrix[profile]["provider_listeners"]
        assert result.outcome == "pass", [f.summary for f in result.findings]
        finding = result.findings[0]
        assert finding.evidence["tcp_ports_tried"] and finding.evidence["udp_inference"]


def test_health_checks_differ_between_the_profiles(matrix):
    assert matrix["exemplary"]["health_check_configured"].outcome == "pass"
    assert matrix["leaky"]["health_check_configured"].outcome == "fail"


@pytest.mark.parametrize("probe", MONITORING)
def test_monitoring_probe_passes_on_exemplary_and_fails_on_leaky(matrix, probe):
    good, bad = matrix["exemplary"][probe], matrix["leaky"][probe]
    assert good.outcome == "pass", [f.summary for f in good.findings]
    assert bad.outcome in ("fail", "timeout"), [f.summary for f in bad.findings]
    assert not good.critical and not bad.critical  # a monitoring gap is a bad grade, not a breach
    assert all(f.value is not None for f in good.findings)


def test_monitoring_values_are_the_configured_ones(matrix):
    days = {p: matrix[p]["retention_days"].findings[0].value for p in ("exemplary", "leaky")}
    assert days == {"exemplary": pytest.approx(30), "leaky": pytest.approx(1)}
    coverage = {p: matrix[p]["metrics_coverage"].findings[0].value for p in ("exemplary", "leaky")}
    assert coverage["exemplary"] == 1.0 and coverage["leaky"] <= 0.5  # node2 of two; 0 before its 1st scrape
    (lag,) = matrix["leaky"]["log_ingest_latency"].findings
    assert str(lag.outcome) == "fail" and 19 <= lag.value < 30  # queryable, 20 s after it was received
    assert matrix["exemplary"]["log_ingest_latency"].findings[0].value < 5


def test_no_gpu_on_the_testbed_is_not_applicable_never_pass(matrix):
    assert {str(f.outcome) for f in matrix["exemplary"]["gpu_inventory"].findings} == {"not_applicable"}


def _flip(knob: str) -> dict[str, ProbeResult]:
    covering = KNOB_PROBE[knob]
    section_key, value = knob.split("=")
    section, key = section_key.split(".")
    typed: object = {"true": True, "false": False}.get(value, value)
    if value.isdigit() and key != "mode":
        typed = int(value)
    name = prefixed_name(f"k{list(KNOB_PROBE).index(knob)}")
    with running_testbed("exemplary", name=name, nodes=2, overrides={section: {key: typed}}) as info:
        return run(info.name, [*SECURITY, covering], **{"node_ready_time.replicates": 2})


@pytest.fixture(scope="module")
def flips() -> dict[str, dict[str, ProbeResult]]:
    return parallel(_flip, list(KNOB_PROBE))


@pytest.mark.parametrize("knob", list(KNOB_PROBE))
def test_a_single_flipped_knob_is_caught_by_its_probe_and_by_no_other_as_critical(flips, knob):
    covering, results = KNOB_PROBE[knob], flips[knob]
    assert results[covering].outcome in ("fail", "timeout"), [f.summary for f in results[covering].findings]
    others = [p for p, r in results.items() if p != covering and p not in BACKSTOPS and r.critical]
    assert not others, {p: [f.summary for f in results[p].findings] for p in others}


@pytest.fixture(scope="module")
def faulted() -> dict[str, dict[str, ProbeResult]]:
    probes = ["failure_detection_time", "node_replacement_time", "alert_on_fault"]
    limits = {
        "failure_detection_time.detect_timeout_s": 15,
        "node_replacement_time.replace_timeout_s": 25,
        "alert_on_fault.alert_timeout_s": 12,
    }

    def one(profile: str) -> dict[str, ProbeResult]:
        with running_testbed(profile, name=prefixed_name(f"f{profile[:2]}"), nodes=3) as info:
            return catalog_run(context_for(info.name, disruptive=True, settings=limits), probes)

    return parallel(one, ["exemplary", "leaky"])


@pytest.mark.parametrize("probe", ["failure_detection_time", "node_replacement_time", "alert_on_fault"])
def test_fault_probes_pass_where_the_operator_detects_and_replaces(faulted, probe):
    good, bad = faulted["exemplary"][probe], faulted["leaky"][probe]
    assert good.outcome == "pass", [f.summary for f in good.findings]
    assert bad.outcome in ("fail", "timeout"), [f.summary for f in bad.findings]
    assert not good.critical and not bad.critical


def test_disruptive_probes_without_opt_in_are_declined_never_excused(testbed_exemplary):
    results = run(testbed_exemplary.name, ["failure_detection_time", "job_requeue_after_node_loss"])
    assert {r.outcome for r in results.values()} == {"declined"}


def test_clustermax_audit_runs_the_full_audit_offline_and_keeps_cmaxs_verdict_per_check(testbed_exemplary):
    (finding,) = run(testbed_exemplary.name, ["clustermax_audit"])["clustermax_audit"].findings
    assert str(finding.outcome) == "pass" and not finding.critical, finding.summary
    assert finding.value == 1.0 and finding.metric == "pass_ratio"
    checks = {c["id"]: c for c in finding.evidence["checks"]}
    assert checks["security.guestKernel.newerInstalled"]["outcome"] == "pass"
    assert checks["bmc-ipmi"]["criterion"] == "bmc_unreachable" and checks["bmc-ipmi"]["outcome"] == "pass"
    assert all(c["criterion"] for c in checks.values())  # a rubric criterion or "unmapped"
    # a CPU-only testbed: the GPU stack is not applicable, and the host's CUDA toolkit is not seen
    assert checks["securityVersions.cudaToolkit.status"]["outcome"] == "not_applicable"
    assert finding.evidence["profiles"] == ["full", "security"]


# Every knob on which exemplary and leaky differ, and the probe that must tell them apart.
KNOB_COVERED_BY = {
    "provisioning.delay_s": "node_ready_time",
    "slurm.private_data": "scheduler_privacy",
    "slurm.accounting_private_data": "scheduler_privacy",
    "slurm.health_check": "health_check_configured",
    "remediation.policy": "node_replacement_time",
    "homes.mode": "home_isolation",
    "logs.isolation": "tenant_log_isolation",
    "logs.shared_dir_readable": "tenant_log_isolation",
    "metrics.isolation": "tenant_metric_isolation",
    "kernel.pending_reboot": "kernel_pending_reboot",
    "bmc.reachable": "bmc_reachable",
    "metrics.retention": "retention_days",
    "metrics.scrape_interval_s": "metrics_freshness",
    "metrics.scrape_all_nodes": "metrics_coverage",
    "logs.ingest_delay_s": "log_ingest_latency",
    "fs.private_tmp": "tenant_data_exposure",
    "logs.nginx_access_log_private": "tenant_data_exposure",
}


def _flat(knobs: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in knobs.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_every_knob_that_differs_between_the_profiles_changes_its_probes_outcome(matrix, faulted):
    from testbed.profiles import profile_resolve

    good, bad = _flat(profile_resolve(profile="exemplary")), _flat(profile_resolve(profile="leaky"))
    differing = {k for k in good if good[k] != bad[k] and k not in ("name", "description")}
    assert differing <= set(KNOB_COVERED_BY), (
        f"knobs without a covering probe: {differing - set(KNOB_COVERED_BY)}"
    )
    results = {p: {**matrix[p], **faulted[p]} for p in ("exemplary", "leaky")}
    for knob in sorted(differing):
        probe = KNOB_COVERED_BY[knob]
        assert results["exemplary"][probe].outcome != results["leaky"][probe].outcome, (knob, probe)
