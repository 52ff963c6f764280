"""ssh_reachable: can a tenant connect, authenticate and run a command on every node?

Connects (through the login node for compute nodes), authenticates with the tenant's key and runs
``true``: pass when it returns 0, fail when the node's shell is broken. The metric is pass/fail
(``""``): the handshake time is recorded as the finding's value and in the evidence but not
judged, since from the analyst's desk it mostly measures the analyst's own network distance,
not the operator. A host we cannot reach is ``error`` (raised by the transport and recorded by
the runner after its retries), never ``fail``: "could not measure" is not "bad".
"""

from __future__ import annotations

from collections.abc import Sequence

from probes.catalog import register
from probes.catalog.base import (
    Area,
    Direction,
    FindingDraft,
    Metric,
    Outcome,
    Probe,
    ProbeContext,
    Requirement,
    Scope,
    Target,
)
from probes.transport import Command

TRUE = Command("true")


@register
class SshReachable(Probe):
    id = "ssh_reachable"
    version = 2
    area = Area.PROVISIONING
    question = "Can a tenant connect, authenticate and run a command on every node over SSH?"
    scope = Scope.NODE
    requirements = frozenset({Requirement.SSH})
    timeout_s = 30
    # pass/fail, as the rubric binds it (opgrade 2026.2); the value is the unjudged handshake time
    metric = Metric(name="", unit="ms", direction=Direction.HIGHER)

    def execute(self, ctx: ProbeContext, target: Target) -> Sequence[FindingDraft]:
        assert target.endpoint is not None
        conn = ctx.ssh(target.endpoint)
        result = conn.run(TRUE, timeout_s=self.timeout_s)
        evidence = ctx.evidence(
            result, connect_s=round(conn.connect_s, 3), host_key=conn.host_key.fingerprint
        )
        if result.timed_out:
            return [self.finding(target, Outcome.TIMEOUT, summary="`true` did not return", evidence=evidence)]
        if result.exit_code != 0:
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    summary=f"`true` exited {result.exit_code}: broken shell",
                    evidence=evidence,
                )
            ]
        latency_ms = round(1000 * (conn.connect_s + result.duration_s), 1)
        evidence["latency_ms"] = latency_ms
        return [
            self.finding(
                target,
                Outcome.PASS,
                value=latency_ms,
                summary=f"connected, authenticated and ran `true` ({latency_ms} ms, not scored)",
                evidence=evidence,
            )
        ]
