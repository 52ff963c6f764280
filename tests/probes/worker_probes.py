"""Probes that exist only for the runner's integration tests: slow and hung commands.

The Celery worker subprocess imports this module (see tests/probes/celery_worker.py) so that it
knows these ids; production workers never do.
"""

from __future__ import annotations

import time
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
    Scope,
    Target,
)
from probes.transport import Command


@register
class SlowNode(Probe):
    """Takes a couple of seconds per node, so a test can kill the worker half-way through."""

    id = "test_slow_node"
    version = 1
    area = Area.PROVISIONING
    question = "Does each node answer after a pause? (test only)"
    scope = Scope.NODE
    timeout_s = 20
    metric = Metric(name="pause", unit="s", direction=Direction.LOWER)

    def execute(self, ctx: ProbeContext, target: Target) -> Sequence[FindingDraft]:
        assert target.endpoint is not None
        result = ctx.ssh(target.endpoint).run(Command("sleep {s}; echo done", s=2), timeout_s=self.timeout_s)
        outcome = Outcome.PASS if result.ok else Outcome.ERROR
        return [
            self.finding(target, outcome, value=round(result.duration_s, 3), evidence=ctx.evidence(result))
        ]


@register
class HungCommand(Probe):
    """Runs a command that never ends; its deadline must kill it (test only)."""

    id = "test_hung_command"
    version = 1
    area = Area.RELIABILITY
    question = "Is a hung command killed at its deadline? (test only)"
    scope = Scope.CLUSTER
    timeout_s = 8
    metric = Metric(name="hang", unit="s", direction=Direction.LOWER)

    def execute(self, ctx: ProbeContext, target: Target) -> Sequence[FindingDraft]:
        assert target.endpoint is not None
        marker = ctx.settings.get("pidfile", "/tmp/opgrade-hung-pid")
        result = ctx.ssh(target.endpoint).run(
            Command("echo $$ > {f}; sleep 300 & echo $! >> {f}; sleep 301", f=marker),
            timeout_s=self.timeout_s,
        )
        outcome = Outcome.TIMEOUT if result.timed_out else Outcome.ERROR
        return [
            self.finding(target, outcome, value=round(result.duration_s, 3), evidence=ctx.evidence(result))
        ]


@register
class Disruptive(Probe):
    """Would inject a fault; must only run where the cluster opted in (test only)."""

    id = "test_disruptive"
    version = 1
    area = Area.RELIABILITY
    question = "Does the scheduler notice an injected fault? (test only)"
    scope = Scope.CLUSTER
    disruptive = True
    timeout_s = 10
    metric = Metric(name="detect", unit="s", direction=Direction.LOWER)

    def execute(self, ctx: ProbeContext, target: Target) -> Sequence[FindingDraft]:
        assert target.endpoint is not None
        result = ctx.ssh(target.endpoint).run(Command("true"), timeout_s=self.timeout_s)
        return [self.finding(target, Outcome.PASS, value=result.duration_s)]


@register
class PausedNode(Probe):
    """Takes a moment per node and talks to nothing (test only): the coordination-outage tests
    (tests/integration/test_coordination_outages.py) need runs in flight, not a transport."""

    id = "test_paused_node"
    version = 1
    area = Area.PROVISIONING
    question = "Does each node answer after a pause, measured without a transport? (test only)"
    scope = Scope.NODE
    requirements = frozenset()
    timeout_s = 20
    metric = Metric(name="paused", unit="s", direction=Direction.LOWER)

    def execute(self, ctx: ProbeContext, target: Target) -> Sequence[FindingDraft]:
        seconds = float(ctx.settings.get("pause_s", 1.5))
        time.sleep(seconds)
        return [self.finding(target, Outcome.PASS, value=seconds, evidence={"paused_s": seconds})]
