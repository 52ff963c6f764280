"""node_replacement_time: after a node fails, how long until the pool is whole again?

Disruptive. Counts the healthy nodes in Slurm (responding, not drained or down), injects a fault
into one through the provider API, and polls until the healthy count is back to what it was,
with the broken node excluded unless it truly recovered. Replacement by a new node and repair of
the old one both count; nothing by ``replace_timeout_s`` is ``timeout`` (censored).
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


@register
class NodeReplacementTime(CatalogProbe, definition="node_replacement_time"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        settle(ctx)
        victim = pick_victim(ctx)
        kind = str(self.setting(ctx, "fault"))
        before = {n.name for n in slurm_nodes(ctx) if n.healthy_in_pool}
        trail: list[str] = []
        went_bad = False

        def whole() -> int | None:
            nonlocal went_bad
            nodes = slurm_nodes(ctx)
            healthy = {n.name for n in nodes if n.healthy_in_pool}
            went_bad = went_bad or victim not in healthy
            note = ",".join(sorted(healthy))
            if not trail or trail[-1] != note:
                trail.append(note)
            return len(healthy) if went_bad and len(healthy) >= len(before) else None

        start = time.monotonic()
        fault_inject(ctx, victim, kind)
        try:
            back, _ = wait_for(
                whole,
                timeout_s=float(self.setting(ctx, "replace_timeout_s")),
                poll_s=float(self.setting(ctx, "poll_s")),
            )
            seconds = round(time.monotonic() - start, 2)
        finally:
            fault_clear(ctx, victim)
        evidence = {
            "node": victim,
            "fault": kind,
            "healthy_before": sorted(before),
            "healthy_seen": trail[:20],
        }
        return self.timed(
            ctx, target, seconds, observed=back is not None, evidence=evidence,
            summary=f"{len(before)} healthy nodes again {seconds} s after a {kind} fault on {victim}" if back is not None else f"pool not whole {seconds} s after a {kind} fault on {victim}",
        )
