"""gpu_inventory: does every node have the ordered GPU model and count?

Runs ``nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader`` on each
compute node and compares with the order (facts ``gpu_model`` and ``gpus_per_node``, or
``gpu_count`` when that is per node). Requires GPUs: on a CPU cluster the runner records
``not_applicable`` before this runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, compute_nodes, run
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Scope, Target, node_name
from probes.parsers import ParseError
from probes.parsers.nvidia import DEFAULT_FIELDS, inventory_matches, parse_query_gpu
from probes.transport import Command

QUERY_GPU = Command("nvidia-smi --query-gpu={fields} --format=csv,noheader", fields=",".join(DEFAULT_FIELDS))


@register
class GpuInventory(CatalogProbe, definition="gpu_inventory"):
    def targets(self, ctx: ProbeContext) -> list[Target]:
        return [Target(kind=Scope.NODE, name=node_name(e), endpoint=e) for e in compute_nodes(ctx)]

    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        model = ctx.facts.get("gpu_model", "")
        per_node = ctx.facts.get("gpus_per_node") or ctx.facts.get("gpu_count", "")
        if not model or not str(per_node).isdigit():
            raise Abort(Outcome.NOT_APPLICABLE, "the order (gpu_model, gpus_per_node) is not recorded")
        result = run(ctx, target.endpoint, QUERY_GPU, timeout_s=30, what="nvidia-smi")
        evidence = ctx.evidence(result)
        if result.exit_code == 127 or "not found" in result.stderr:
            return [
                self.finding(target, Outcome.FAIL, evidence=evidence, summary="nvidia-smi is not installed")
            ]
        try:
            gpus = parse_query_gpu(result.stdout)
        except ParseError as exc:
            return [
                self.finding(target, Outcome.FAIL, evidence=evidence, summary=f"nvidia-smi failed: {exc}")
            ]
        verdict = inventory_matches(gpus, model=model, count=int(per_node))
        summary = f"{verdict.found_count} x {', '.join(verdict.found_models) or 'no GPU'}; ordered {per_node} x {model}"
        return [
            self.finding(
                target, Outcome.PASS if verdict.ok else Outcome.FAIL, evidence=evidence, summary=summary
            )
        ]
