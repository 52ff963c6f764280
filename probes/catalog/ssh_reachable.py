"""ssh_reachable: can a tenant connect, authenticate and run a command on every node?

Connects (through the login node for compute nodes), authenticates with the tenant's key and runs
``true``. The value is the latency a user feels: the SSH handshake plus authentication plus one
command round trip, in milliseconds. A host we cannot reach is ``error`` (raised by the transport
and recorded by the runner after its retries), never ``fail``: "could not measure" is not "bad".
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
    Threshold,
    Thresholds,
)
from probes.transport import Command

TRUE = Command("true")


@register
class SshReachable(Probe):
    id = "ssh_reachable"
    version = 1
    area = Area.PROVISIONING
    question = "Can a tenant connect, authenticate and run a command on every node over SSH?"
    scope = Scope.NODE
    requirements = frozenset({Requirement.SSH})
    timeout_s = 30
    metric = Metric(name="latency_ms", unit="ms", direction=Direction.LOWER)  # as the rubric binds it
    thresholds = Thresholds(
        (
            Threshold(
                pass_at=2000, warn_at=5000, reference="interactive use: a login within 2 s, 5 s at worst"
            ),
        )
    )

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
        outcome, ref = self.judge(ctx, latency_ms)
        return [
            self.finding(
                target,
                outcome,
                value=latency_ms,
                summary=f"connected, authenticated and ran `true` in {latency_ms} ms",
                evidence=evidence,
                threshold_ref=ref,
            )
        ]
