"""metrics_coverage: does the tenant's Prometheus scrape every node (and GPU)?

Lists the compute nodes Slurm knows (as a tenant, with their addresses), then asks the tenant's
metrics API for ``up`` of node exporters. A node counts as covered when a series with value 1
names it (``node``/``nodename``/``hostname`` label) or its address (``instance`` host); ``up`` is taken
as its maximum over the last minute, so one scrape lost to a busy node is not a coverage gap. With GPUs,
the DCGM exporter's ``DCGM_FI_DEV_GPU_UTIL`` series are counted against ``gpus_per_node``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, endpoint_url, http, run, tenant_http_auth
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Requirement, Target
from probes.parsers import ParseError
from probes.parsers.prometheus import Sample, coverage_ratio, parse_response, vector_samples
from probes.parsers.slurm import parse_node_addresses
from probes.transport import Command

NODE_ADDRESSES = Command("sinfo -N -h -o {fmt}", fmt="%N|%o")
NAME_LABELS = ("node", "nodename", "hostname", "Hostname")


def covered_nodes(nodes: dict[str, str], samples: Iterable[Sample]) -> set[str]:
    """Nodes named by an ``up == 1`` series: by a node-name label or by the instance's host."""
    covered = set()
    for s in samples:
        if s.value != 1:
            continue
        names = {s.labels.get(k, "") for k in NAME_LABELS}
        host = s.labels.get("instance", "").rsplit(":", 1)[0]
        covered |= {n for n, addr in nodes.items() if n in names or addr == host or n == host}
    return covered


# A node missing from every read over COVERAGE_WAIT_S (reads READ_SPACING_S apart) is missing, not
# unlucky: long enough for a node added a moment ago to reach its first scrape (file discovery and
# one scrape interval), short beside a run's deadline.
COVERAGE_WAIT_S = 30.0
READ_SPACING_S = 3.0
MAX_READS = 12


@register
class MetricsCoverage(CatalogProbe, definition="metrics_coverage"):
    def _nodes(self, ctx: ProbeContext, target: Target) -> dict[str, str]:
        listed = run(ctx, target.endpoint, NODE_ADDRESSES, timeout_s=20, what="sinfo")
        try:
            return parse_node_addresses(listed.stdout)
        except ParseError as exc:
            raise Abort(Outcome.ERROR, f"could not list nodes: {exc}", ctx.evidence(listed)) from exc

    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        url = endpoint_url(ctx, "metrics_url")
        tenant = ctx.tenants[0].label if ctx.tenants else None
        auth = tenant_http_auth(ctx, tenant) if tenant else None
        if url is None or auth is None:
            raise Abort(
                Outcome.DECLINED,
                "declined: the provider gives tenants no metrics endpoint (none registered: settings.metrics_url + tenant password)",
            )
        evidence: dict[str, Any] = {"attempts": []}
        covered: set[str] = set()
        deadline = time.monotonic() + COVERAGE_WAIT_S
        for attempt in range(MAX_READS):
            if attempt:
                time.sleep(READ_SPACING_S)
            # the nodes as Slurm lists them now: a node the operator is adding or removing this minute
            # is expected once it is listed, and no longer once it is gone
            nodes = self._nodes(ctx, target)
            evidence["expected_nodes"] = sorted(nodes)
            covered &= set(nodes)
            resp = http("GET", f"{url}/api/v1/query", auth=auth, params={"query": "max_over_time(up[1m])"})
            try:
                samples = vector_samples(parse_response(resp.body))
            except ParseError as exc:
                evidence["query"] = resp.evidence(secrets_=ctx.secrets())
                raise Abort(Outcome.ERROR, f"metrics API answered {resp.status}: {exc}", evidence) from exc
            evidence["attempts"].append({s.labels.get("instance", "?"): s.value for s in samples})
            evidence["query"] = resp.evidence(secrets_=ctx.secrets(), max_bytes=512)
            covered |= covered_nodes(nodes, samples)
            if len(covered) == len(nodes) or time.monotonic() >= deadline:
                break
        ratio = coverage_ratio(nodes, covered)
        evidence["covered"] = sorted(covered)
        if Requirement.GPU in ctx.capabilities and str(ctx.facts.get("gpus_per_node", "")).isdigit():
            gpu = http(
                "GET", f"{url}/api/v1/query", auth=auth, params={"query": "count(DCGM_FI_DEV_GPU_UTIL)"}
            )
            try:
                found = sum(s.value for s in vector_samples(parse_response(gpu.body)))
            except ParseError:
                found = 0.0
            expected = int(ctx.facts["gpus_per_node"]) * len(nodes)
            evidence["gpus"] = {"expected": expected, "exported": found}
            ratio = min(ratio, found / expected if expected else 0.0)
        outcome, ref = self.judge(ctx, round(ratio, 4))
        return [
            self.finding(
                target,
                outcome,
                value=round(ratio, 4),
                evidence=evidence,
                threshold_ref=ref,
                summary=f"{len(covered)}/{len(nodes)} nodes scraped and up in the tenant's Prometheus",
            )
        ]
