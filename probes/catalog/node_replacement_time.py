"""node_replacement_time: after a node fails, how long until the pool is whole again?

Disruptive. Counts the healthy nodes in Slurm (responding, not drained or down), injects a fault
into one through the provider API, and polls until the healthy count is back to what it was.
Replacement by a new node and repair of the old one both count, but the broken node (the victim)
counts only once it has truly recovered (:class:`PoolWatch`): healthy in Slurm *and* without the
injected fault (the provider API lists a node's injected faults until they are cleared), and
healthy without a break for ``victim_stable_s``. A loop that un-drains the still-faulty node
without fixing it therefore does not make the pool whole. Nothing by ``replace_timeout_s`` is
``timeout`` (censored).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Set
from dataclasses import dataclass, field

from probes.catalog import register
from probes.catalog._support import (
    CatalogProbe,
    fault_clear,
    fault_inject,
    pick_victim,
    provider_nodes,
    settle,
    slurm_nodes,
    wait_for,
)
from probes.catalog.base import FindingDraft, ProbeContext, Target


@dataclass
class PoolWatch:
    """Pure core: is the pool whole again, counting the victim only once it truly recovered?

    ``observe`` takes one look (seconds since the fault, the healthy node names in Slurm, and the
    victim's active faults per the provider API, or None when the API does not say) and returns
    the second at which the pool became whole, or None while it is not.
    """

    victim: str
    needed: int
    stable_s: float
    went_bad: bool = False
    victim_ok_since: float | None = None
    notes: list[str] = field(default_factory=list)

    def observe(self, t: float, healthy: Set[str], victim_faults: list[str] | None) -> float | None:
        in_pool = self.victim in healthy
        self.went_bad = self.went_bad or not in_pool
        # Without the API's word, a victim that never left the pool was never seen to fail, and
        # one that left it must come back for good; with it, an active fault keeps it out.
        fault_free = (not victim_faults) if victim_faults is not None else self.went_bad
        if in_pool and fault_free:
            self.victim_ok_since = t if self.victim_ok_since is None else self.victim_ok_since
        else:
            self.victim_ok_since = None
        others = len(set(healthy) - {self.victim})
        note = f"{sorted(healthy)} victim_faults={victim_faults}"
        if not self.notes or self.notes[-1] != note:
            self.notes.append(note)
        if others >= self.needed:
            return t
        if (
            others + 1 >= self.needed
            and self.victim_ok_since is not None
            and t - self.victim_ok_since >= self.stable_s
        ):
            return self.victim_ok_since
        return None


@register
class NodeReplacementTime(CatalogProbe, definition="node_replacement_time"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        settle(ctx)
        victim = pick_victim(ctx)
        kind = str(self.setting(ctx, "fault"))
        before = {n.name for n in slurm_nodes(ctx) if n.healthy_in_pool}
        watch = PoolWatch(victim, len(before), float(self.setting(ctx, "victim_stable_s")))

        def whole() -> float | None:
            healthy = {n.name for n in slurm_nodes(ctx) if n.healthy_in_pool}
            listed = {n.get("name"): n for n in provider_nodes(ctx)}
            entry = listed.get(victim)
            if entry is None:
                faults: list[str] | None = ["gone"]  # released or replaced: it will not come back
            elif "faults" in entry:
                faults = [str(f) for f in entry.get("faults") or []]
            else:
                faults = None
            return watch.observe(time.monotonic() - start, healthy, faults)

        start = time.monotonic()
        fault_inject(ctx, victim, kind)
        try:
            back, waited = wait_for(
                whole,
                timeout_s=float(self.setting(ctx, "replace_timeout_s")),
                poll_s=float(self.setting(ctx, "poll_s")),
            )
        finally:
            fault_clear(ctx, victim)
        seconds = round(back if back is not None else waited, 2)
        evidence = {
            "node": victim,
            "fault": kind,
            "healthy_before": sorted(before),
            "victim_left_pool": watch.went_bad,
            "victim_stable_s": watch.stable_s,
            "healthy_seen": watch.notes[:20],
        }
        return self.timed(
            ctx,
            target,
            seconds,
            observed=back is not None,
            evidence=evidence,
            summary=f"{len(before)} healthy nodes again {seconds} s after a {kind} fault on {victim}"
            if back is not None
            else f"pool not whole {seconds} s after a {kind} fault on {victim} (the victim counts only once truly recovered)",
        )
