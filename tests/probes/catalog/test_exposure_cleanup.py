"""The exposure scan always removes B's canaries, and a cleanup that fails never hides why the scan failed."""

from __future__ import annotations

import re

import pytest

from probes.catalog import probe_get
from probes.catalog.base import Requirement
from probes.transport import CommandResult
from tests.probes.catalog.fake import FakeCluster, result
from tests.probes.catalog.test_catalog_probes import PAIR


class LinkDropped(ConnectionError):
    """What the fake transport raises when it is told the SSH link went away."""


def _cluster(*, scan: str, rm: str):
    """B plants; A's scan and B's removal each answer ``ok``, ``timeout`` or ``raise``."""

    def outcome(how: str, what: str, ok: CommandResult) -> CommandResult:
        if how == "timeout":
            return CommandResult(command="", exit_code=None, stdout="", stderr="", duration_s=1, timed_out=True)
        if how == "raise":
            raise LinkDropped(f"link dropped during {what}")
        return ok

    def handler(user: str, host: str, cmd: str) -> CommandResult:
        if " plant " in cmd:
            nonce = re.search(r"plant (opgrade-canary-[0-9a-f]+)", cmd).group(1)
            return result(f"planted\t/home/{user}/{nonce}.txt\n")
        if " scan " in cmd:
            ctl = re.search(r"(opgrade-ctl-[0-9a-f]+)", cmd).group(1)
            lines = ["root\topen\t/tmp", "control\tplanted\t/tmp", f"hit\t/tmp/.opgrade-ctl-{ctl}.txt\t{ctl}",
                     f"hit\t/tmp/.opgrade-ctl-{ctl}.gz\t{ctl}", "stat\tfiles\t3\tbytes\t30\tpartial\t0", "done"]
            return outcome(scan, "the scan", result("\n".join(lines)))
        return outcome(rm, "the cleanup", result(""))  # B's removal of its canaries

    cluster = FakeCluster(handler)
    return cluster, cluster.context(capabilities={Requirement.SSH, Requirement.TWO_TENANTS})


def _commands(cluster: FakeCluster) -> list[str]:
    # The scan script removes its own control files, so "scan" is told apart first (as the handler does).
    return ["scan" if " scan " in cmd else "plant" if " plant " in cmd else "rm" for _, _, cmd in cluster.log]


def test_a_scan_that_times_out_is_reported_as_such_even_when_the_cleanup_times_out_too():
    cluster, ctx = _cluster(scan="timeout", rm="timeout")
    (finding,) = probe_get("tenant_data_exposure")().execute(ctx, PAIR)
    assert str(finding.outcome) == "timeout"
    assert finding.summary.startswith("exposure scan did not finish"), finding.summary
    assert finding.evidence["cleanup_error"] == "cleanup after the failed scan failed too: remove did not finish in 30 s"
    assert _commands(cluster) == ["plant", "scan", "rm"]  # the cleanup was still tried


def test_a_scan_that_raises_surfaces_its_own_error_with_the_cleanup_failure_noted_beside_it():
    cluster, ctx = _cluster(scan="raise", rm="raise")
    with pytest.raises(LinkDropped, match="during the scan") as raised:
        probe_get("tenant_data_exposure")().execute(ctx, PAIR)
    assert raised.value.__notes__ == ["cleanup after the failed scan failed too: link dropped during the cleanup"]
    assert _commands(cluster) == ["plant", "scan", "rm"]


def test_a_failed_scan_still_removes_the_canaries_and_a_clean_cleanup_adds_nothing():
    cluster, ctx = _cluster(scan="timeout", rm="ok")
    (finding,) = probe_get("tenant_data_exposure")().execute(ctx, PAIR)
    assert str(finding.outcome) == "timeout" and "cleanup_error" not in finding.evidence
    assert _commands(cluster) == ["plant", "scan", "rm"]


def test_a_cleanup_that_fails_after_a_good_scan_is_still_an_error_of_its_own():
    _cluster_log, ctx = _cluster(scan="ok", rm="timeout")
    (finding,) = probe_get("tenant_data_exposure")().execute(ctx, PAIR)
    assert str(finding.outcome) == "timeout" and finding.summary == "remove did not finish in 30 s"
