"""failure_detection_time: after an injected fault, how long until Slurm takes the node out?

Disruptive (runs only where the cluster opted in). Picks an idle node, injects a fault through
the provider's break-fix/test API (default ``unhealthy``: what a GPU XID would look like to a
health check), and polls ``sinfo`` as a tenant until the node is down, drained or not responding.
Not detected by ``detect_timeout_s`` is ``timeout``, censored at the deadline. The fault is cleared
after (a node the provider already replaced is simply gone).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import (
    CatalogProbe,
    fault_clear,
    fault_inject,
    pick_victim,
    settle,
    slurm_nodes,
    wait_for,
)
from probes.catalog.base import FindingDraft, ProbeContext, Target
from probes.parsers.slurm import node_state


@register
class FailureDetectionTime(CatalogProbe, definition="failure_detection_time"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        settle(ctx)
        victim = pick_victim(ctx)
        kind = str(self.setting(ctx, "fault"))
        timeout_s = float(self.setting(ctx, "detect_timeout_s"))
        seen: list[str] = []

        def detected() -> str | None:
            node = node_state(slurm_nodes(ctx), victim)
            label = (
                "gone"
                if node is None
                else f"{node.state}{'*' if node.not_responding else ''} {node.reason}".strip()
            )
            if not seen or seen[-1] != label:
                seen.append(label)
            return label if node is None or node.unavailable else None

        start = time.monotonic()
        fault_inject(ctx, victim, kind)
        try:
            state, _ = wait_for(detected, timeout_s=timeout_s, poll_s=float(self.setting(ctx, "poll_s")))
            seconds = round(time.monotonic() - start, 2)
        finally:
            fault_clear(ctx, victim)
        evidence = {"node": victim, "fault": kind, "states_seen": seen[:20]}
        return self.timed(
            ctx, target, seconds, observed=state is not None, evidence=evidence,
            summary=f"{kind} fault on {victim} detected after {seconds} s ({state})" if state is not None else f"{kind} fault on {victim} not detected in {seconds} s",
        )
