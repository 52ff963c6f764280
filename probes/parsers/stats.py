"""Summaries over replicates: p50 and p95 for timing probes.

Percentiles are numpy's: linear interpolation between closest ranks (the default "linear"
method, Hyndman & Fan type 7), so p50 of an even count is the midpoint and results match what
an analyst gets from numpy or a spreadsheet. Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values`` by linear interpolation (``numpy.percentile``)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within 0..100, got {q}")
    data = np.asarray(values, dtype=np.float64)
    if np.isnan(data).any():
        raise ValueError("percentile of NaN")
    return float(np.percentile(data, q, method="linear"))


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
