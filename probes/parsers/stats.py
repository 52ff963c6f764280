"""Summaries over replicates: p50 and p95 for timing probes.

Percentiles use linear interpolation between closest ranks (numpy's default "linear" method,
Hyndman & Fan type 7), so p50 of an even count is the midpoint and results match what an
analyst gets from numpy or a spreadsheet. Pure: no clock, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values`` by linear interpolation."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within 0..100, got {q}")
    if any(math.isnan(v) for v in values):
        raise ValueError("percentile of NaN")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    if low == high:
        return float(ordered[low])
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class ReplicateSummary:
    """p50 and p95 over the replicates that produced a value; ``censored`` counts the ones that did not."""

    n: int
    p50: float
    p95: float
    censored: int = 0


def summarize(
    values: Sequence[float], *, censored_at: float | None = None, censored: int = 0
) -> ReplicateSummary:
    """Summarise measured ``values``; ``censored`` replicates that hit the deadline count as ``censored_at``.

    A replicate that timed out is censored at its deadline (the worst value we know it exceeded),
    as the domain's outcome table says, rather than silently dropped.
    """
    if censored and censored_at is None:
        raise ValueError("censored replicates need censored_at")
    full = list(values) + [float(censored_at)] * censored if censored else list(values)
    return ReplicateSummary(
        n=len(full), p50=percentile(full, 50), p95=percentile(full, 95), censored=censored
    )
