"""The cost section of a report (and of the costs API): plain JSON-able figures with their inputs.

``cost_section(cycle)`` is the one hook reports call when they freeze a document: it reads the
cycle through ``costs.selectors`` and returns a dict that never changes a tier (it sits beside
the providers, not in them). Every figure carries its inputs (P and its components with sources,
the T and g replicates with their findings, A's sample counts and downtime) so the JSON, CSV and
public API say how each cost was reached, and the interval says how sure it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from costs import engine
from costs.selectors import ClusterCost, cost_standings, cycle_costs

SCHEMA = "opgrade.costs/1"
DECIMALS = 6
UNIT = "$ per million useful output tokens"


def _n(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return round(value, DECIMALS) if math.isfinite(value) else None


def _components(parts: Sequence[engine.PriceComponent]) -> list[dict[str, Any]]:
    return [{"name": p.name, "per_gpu_hour": _n(p.amount_per_gpu_hour), "source": p.source} for p in parts]


def _estimate(est: engine.CostEstimate | None) -> dict[str, Any] | None:
    if est is None:
        return None
    return {"point": _n(est.point), "low": _n(est.low), "high": _n(est.high), "level": est.level,
            "bootstrap": est.bootstrap, "seed": est.seed}


def cluster_entry(c: ClusterCost) -> dict[str, Any]:
    a = c.availability
    return {
        "provider": c.provider_slug, "provider_name": c.provider_name, "cluster": c.cluster_name,
        "gpu_count": c.gpu_count, "known": c.known, "reason": c.reason, "notes": list(c.notes),
        "cost_per_useful_mtok": _estimate(c.estimate),
        "cost_per_useful_mtok_owned": _estimate(c.owned_estimate),
        "inferencex_cost_per_mtok": _n(c.inferencex),
        "price": {
            "effective_per_gpu_hour": _n(c.price.effective), "components": _components(c.price.components),
            "owned_per_gpu_hour": _n(c.price.owned), "owned_components": _components(c.price.owned_components),
            "reason": c.price.reason,
        },
        "throughput": {"point": _n(c.throughput), "unit": "tok/s/gpu",
                       "replicates": [
                           {"finding": r.finding_id, "run": r.run_id, "sweep": r.sweep, "value": _n(r.throughput),
                            "goodput": _n(r.goodput), "in_range": r.in_range, "error_rate": _n(r.error_rate),
                            "accelerators": r.accelerators, "target_interactivity": _n(r.target_interactivity)}
                           for r in c.replicates
                       ]},
        "goodput": {"point": _n(c.goodput)},
        "availability": {
            "point": _n(a.value), "usable_samples": a.usable, "measured_samples": a.measured,
            "unmeasured_samples": a.unmeasured, "downtime_s": _n(a.downtime_s), "period_s": _n(a.period_s),
            "reason": a.reason,
        },
    }


def cost_section(cycle: Any, *, history: int = 4) -> dict[str, Any]:
    """The cycle's cost curve (clusters cheapest first) and each provider's standing over cycles."""
    costs = cycle_costs(cycle)
    standing = cost_standings(cycle, history=history, current=costs)
    return {
        "schema": SCHEMA,
        "engine": engine.ENGINE_VERSION,
        "unit": UNIT,
        "formula": "P * 1e6 / (3600 * T * g * A)",
        "clusters": [cluster_entry(c) for c in costs],
        "standings": {
            slug: [{"cycle": s.cycle, "cost": _n(s.cost), "rank": s.rank, "peers": s.peers,
                    "previous_cost": _n(s.previous_cost), "previous_rank": s.previous_rank,
                    "improved": s.improved, "fell_behind": s.fell_behind, "overtaken_by": list(s.overtaken_by)}
                   for s in rows]
            for slug, rows in sorted(standing.items())
        },
    }
