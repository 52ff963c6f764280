"""Peer-relative tiers from composites: optimal 1-D clustering, kept only where it is sure.

How one set of composites (the point estimate, or one bootstrap replicate) becomes tiers:

1. The composites are clustered into at most five groups with Ckmeans (``ckwrap``:
   optimal, deterministic 1-D k-means; the number of groups is chosen by BIC, as
   Ckmeans.1d.dp does by default, so a field without natural gaps stays one group). A
   boundary is only ever read between two different values, so equal composites always
   land in the same group.
2. A boundary between two neighbouring groups is kept only if the providers on either side
   of it (the lowest of the upper group, the highest of the lower group) differ with
   bootstrap probability P(upper > lower) >= ``boundary_confidence``. The probability comes
   from the whole bootstrap, so a boundary inside the noise is dropped and the two groups
   merge. (Ties inside a replicate count one half.)
3. A provider's peer-relative tier is the number of kept boundaries above it: the top group
   is Platinum, the next Gold, and so on (at most four boundaries, five tiers).
4. Absolute floors then lower (never raise) the tier: Platinum needs at least the Platinum
   floor, below the Bronze floor is Underperforming.
5. Failed gates cap the tier at the gate's cap tier (never raise).

Tier indices follow ``engine_types.TIERS``: 0 is Platinum, 4 Underperforming; "capping"
means taking the larger index. This module is pure: numpy and ckwrap, no Django, no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import ckwrap
import numpy as np

from ratings.engine_types import TIERS, TierFloors

MAX_GROUPS = len(TIERS)
WORST = MAX_GROUPS - 1

# P(S_upper > S_lower) for two provider indices, from the bootstrap.
PairProbability = Callable[[int, int], float]


@dataclass(frozen=True)
class PeerBreak:
    """A Ckmeans boundary between distinct values ``lower_value`` < ``upper_value``."""

    upper: tuple[int, ...]  # provider indices holding the upper value
    lower: tuple[int, ...]
    upper_value: float
    lower_value: float
    probability: float
    kept: bool


def floor_tier_index(composites: np.ndarray, floors: TierFloors) -> np.ndarray:
    """The best tier each composite may hold under the absolute floors (any shape)."""
    thresholds = np.asarray(floors.as_tuple(), dtype=np.float64)  # best first, descending
    return (np.asarray(composites, dtype=np.float64)[..., None] < thresholds).sum(axis=-1)


def _group_labels(ordered: np.ndarray, distinct: int) -> np.ndarray:
    """Ckmeans labels (0 = lowest group) for the sorted composites of all providers.

    The number of groups, at most five, is Ckmeans.1d.dp's own choice by BIC: a field with
    no natural gaps stays one group rather than being cut into five arbitrary bands.
    """
    result = ckwrap.ckmeans(ordered, (1, min(MAX_GROUPS, distinct)))
    labels = np.asarray(result.labels, dtype=np.int64)
    # Optimal 1-D clusters are contiguous in sorted order; ckwrap numbers them bottom-up.
    if np.any(np.diff(labels) < 0):  # pragma: no cover - a ckwrap contract violation
        raise RuntimeError("ckwrap returned non-contiguous clusters")
    return labels


def peer_ranks(
    composites: np.ndarray, pair_probability: PairProbability, confidence: float
) -> tuple[np.ndarray, list[PeerBreak]]:
    """Group rank (0 = top group) of every provider, and the candidate boundaries.

    ``composites`` holds one value per provider (already rounded so that equal means equal).
    """
    order = np.argsort(composites, kind="stable")
    ordered = composites[order]
    if len(ordered) < 2 or ordered[0] == ordered[-1]:
        return np.zeros(len(composites), dtype=np.int64), []
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    values = ordered[starts]
    counts = np.diff(np.append(starts, len(ordered)))
    labels = _group_labels(ordered, len(values))
    # A boundary can only sit between two distinct values (the last of one run of equal
    # values and the first of the next), so equal composites are never split.
    run_end = starts[1:] - 1
    positions = np.flatnonzero(labels[run_end] != labels[starts[1:]])  # between values[t] and values[t+1]
    kept_at = np.zeros(len(values), dtype=np.int64)
    breaks: list[PeerBreak] = []
    for t in positions:
        lower = tuple(int(i) for i in order[starts[t] : starts[t] + counts[t]])
        upper = tuple(int(i) for i in order[starts[t + 1] : starts[t + 1] + counts[t + 1]])
        probability = min(pair_probability(u, low) for u in upper for low in lower)
        kept = probability >= confidence
        if kept:
            kept_at[t] = 1
        breaks.append(PeerBreak(upper, lower, float(values[t + 1]), float(values[t]), probability, kept))
    # Kept boundaries at or above each distinct value = boundaries strictly above it.
    above = np.cumsum(kept_at[::-1])[::-1]
    ranks = np.empty(len(composites), dtype=np.int64)
    ranks[order] = np.repeat(above, counts)
    return ranks, breaks


def tier_indices(
    composites: np.ndarray,
    caps: np.ndarray,
    floors: TierFloors,
    pair_probability: PairProbability,
    confidence: float,
) -> tuple[np.ndarray, list[PeerBreak]]:
    """Final tier index per provider: peer rank, then floors, then gate caps (larger = worse)."""
    ranks, breaks = peer_ranks(composites, pair_probability, confidence)
    tiers = np.maximum(np.minimum(ranks, WORST), floor_tier_index(composites, floors))
    return np.maximum(tiers, caps), breaks


class BootstrapPairs:
    """P(S_u > S_l) (+ half the ties) over the bootstrap replicates, computed lazily and cached.

    ``replicates`` is (providers, B). Only the pairs that sit across a Ckmeans boundary in some
    replicate are ever asked for, so this stays cheap for a thousand providers.
    """

    def __init__(self, replicates: np.ndarray) -> None:
        self._replicates = np.ascontiguousarray(replicates)
        self._size = replicates.shape[1]
        self._cache: dict[tuple[int, int], float] = {}

    def __call__(self, upper: int, lower: int) -> float:
        key = (upper, lower)
        cached = self._cache.get(key)
        if cached is None:
            a, b = self._replicates[upper], self._replicates[lower]
            wins = np.count_nonzero(a > b) + 0.5 * np.count_nonzero(a == b)
            cached = float(wins / self._size)
            self._cache[key] = cached
        return cached


def replicate_tiers(
    replicates: np.ndarray,
    caps: np.ndarray,
    floors: TierFloors,
    pair_probability: PairProbability,
    confidence: float,
) -> np.ndarray:
    """Rerun the tier rule in every replicate: (providers, B) composites -> (providers, B) tiers."""
    n, size = replicates.shape
    ranks = np.empty((n, size), dtype=np.int64)
    for b in range(size):
        ranks[:, b], _ = peer_ranks(replicates[:, b], pair_probability, confidence)
    tiers = np.maximum(np.minimum(ranks, WORST), floor_tier_index(replicates, floors))
    return np.maximum(tiers, caps).astype(np.int8)


def tier_probabilities(tiers: np.ndarray) -> np.ndarray:
    """(providers, B) tier indices -> (providers, 5) probabilities."""
    n, size = tiers.shape
    counts = np.zeros((n, MAX_GROUPS), dtype=np.int64)
    for t in range(MAX_GROUPS):
        counts[:, t] = np.count_nonzero(tiers == t, axis=1)
    return counts / size


def publish(
    point_tier: int,
    probabilities: np.ndarray,
    previous: int | None,
    hysteresis_threshold: float,
    borderline_threshold: float,
    hard_cap: int,
) -> tuple[int, bool, bool, str]:
    """Published tier, hysteresis_held, borderline, outlook for one rated provider.

    Hysteresis: the last published tier is kept unless its bootstrap probability fell below
    ``hysteresis_threshold``. Floors and failed gates of the point estimate (``hard_cap``)
    still apply afterwards: stickiness never lifts a provider over an absolute rule.
    Borderline: the published tier's probability is under ``borderline_threshold`` (this
    includes every case where the most likely tier is under it). The outlook points to the
    side that holds more of the remaining probability.
    """
    tier = point_tier
    held = False
    if previous is not None and previous != point_tier and probabilities[previous] >= hysteresis_threshold:
        tier = max(previous, hard_cap)
        held = tier != point_tier
    borderline = bool(probabilities[tier] < borderline_threshold)
    above = float(probabilities[:tier].sum())
    below = float(probabilities[tier + 1 :].sum())
    outlook = "stable"
    if borderline:
        outlook = "positive" if above > below else "negative" if below > above else "stable"
    return tier, held, borderline, outlook
