"""node_ready_time: from a provider API request for nodes to SSH up to Slurm idle, p50 and p95.

Asks the provider API for ``replicates`` nodes in one request (they boot in parallel; each is
one replicate), then watches each from the login node, as a tenant: SSH is "up" when the node's
port 22 answers with an SSH banner (no host key needs pinning for a node that did not exist a
minute ago), Slurm is "idle" when ``sinfo`` lists it idle and responding. A node not ready by
``ready_timeout_s`` is censored at that deadline (worst value). The nodes are released after.
"""

from __future__ import annotations

import contextlib
import time
import urllib.parse
from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, provider_call, provider_nodes, run, slurm_nodes
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers.stats import summarize
from probes.transport import Command


def banners(addresses: list[str]) -> Command:
    names = {f"a{i}": a for i, a in enumerate(addresses)}
    script = 'for a in "$@"; do (if timeout 2 bash -c \'exec 3<>/dev/tcp/$0/22; head -c 4 <&3\' "$a" 2>/dev/null | grep -q SSH-; then echo "$a up"; fi) & done; wait'
    return Command("bash -c {script} banners " + " ".join(f"{{{n}}}" for n in names), script=script, **names)


@register
class NodeReadyTime(CatalogProbe, definition="node_ready_time"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        count = int(self.setting(ctx, "replicates"))
        deadline_s = float(self.setting(ctx, "ready_timeout_s"))
        poll_s = float(self.setting(ctx, "poll_s"))
        if target.endpoint is None:
            raise Abort(Outcome.NOT_APPLICABLE, "no login node is configured")
        ctx.ssh(target.endpoint)  # connect before the clock starts
        start = time.monotonic()
        created = provider_call(ctx, "POST", "/v1/nodes", {"count": count})
        names = [str(n) for n in created.get("nodes", [])]
        if len(names) != count:
            raise Abort(
                Outcome.PROVIDER_ERROR, f"asked for {count} nodes, got {names}", {"response": created}
            )
        ssh_up: dict[str, float] = {}
        idle: dict[str, float] = {}
        try:
            while len(idle) < count and time.monotonic() - start < deadline_s:
                addresses = {
                    n["name"]: n["address"]
                    for n in provider_nodes(ctx)
                    if n["name"] in names and n.get("address")
                }
                waiting = [a for name, a in addresses.items() if name not in ssh_up]
                if waiting:
                    up = run(ctx, target.endpoint, banners(waiting), timeout_s=10, what="SSH banner check")
                    now = time.monotonic() - start
                    for line in up.stdout.splitlines():
                        addr = line.split()[0]
                        for name, a in addresses.items():
                            if a == addr:
                                ssh_up.setdefault(name, now)
                now = time.monotonic() - start
                for node in slurm_nodes(ctx):
                    if (
                        node.name in ssh_up
                        and node.name not in idle
                        and node.state == "idle"
                        and node.healthy_in_pool
                    ):
                        idle[node.name] = now
                if len(idle) < count:
                    time.sleep(poll_s)
        finally:
            for name in names:
                with contextlib.suppress(Abort):
                    provider_call(ctx, "DELETE", f"/v1/nodes/{urllib.parse.quote(name)}")
        measured = [idle[n] for n in names if n in idle]
        censored = count - len(measured)
        summary = summarize(measured, censored_at=deadline_s, censored=censored)
        evidence = {
            "nodes": names,
            "ssh_up_s": {k: round(v, 2) for k, v in ssh_up.items()},
            "slurm_idle_s": {k: round(v, 2) for k, v in idle.items()},
            "censored": censored,
        }
        findings = []
        for metric, value in (("p50_seconds", summary.p50), ("p95_seconds", summary.p95)):
            value = round(value, 2)
            outcome, ref = self.judge_metric(ctx, metric, value)
            if censored and metric == "p95_seconds":
                outcome = Outcome.TIMEOUT
            findings.append(
                self.finding(
                    target,
                    outcome,
                    value=value,
                    metric=self.metrics[metric],
                    evidence=evidence,
                    threshold_ref=ref,
                    summary=f"{metric.split('_')[0]} {value} s over {count} nodes ({censored} not ready by {deadline_s:g} s)",
                )
            )
        return findings
