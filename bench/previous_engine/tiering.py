"""The tier rule: boundaries only in confirmed gaps, at most four, floors and gates as caps.

How the rated providers' composites become tiers (docs/domain.md "Tiers"):

1. **Candidate boundaries.** Sort the point composites. A candidate boundary (a *cut*) lies
   between two neighbouring distinct values, so equal composites are never split. A cut
   divides the providers into an upper set U and a lower set L.
2. **Confirmation.** A cut is *confirmed* when every provider above it beats every provider
   below it with bootstrap probability at least the rubric's ``boundary_confidence``:
   ``min over u in U, l in L of P(u > l) >= confidence``. ``P(u > l)`` compares the two
   providers' bootstrap distributions as independent samples (ties count one half); it
   depends on those two providers only, never on a third one or on the replicates' pairing.
   The gap must also be at least the rubric's ``boundary_min_gap`` (composite points), so a
   certain but negligible difference (two reviewers agreeing on 3.6 and 3.65) is no boundary.
3. **Choice.** Of the confirmed cuts, the (at most) four with the largest gaps become tier
   boundaries; equal gaps prefer the higher cut. Nothing else: no number of groups is
   estimated, so no small move elsewhere can change how many groups there are.
4. **Peer tier** = the number of chosen boundaries above the provider (0 Platinum ... 4).
5. **Caps.** The absolute floors and failed gates can only worsen a tier, never improve it:
   ``tier = max(peer tier, floor tier, gate cap)`` in index terms (0 is best).

Tier probabilities rerun the rule once per bootstrap replicate of the provider's own
composite, the other providers held at their point composites (``conditional_tiers``).

Properties (proved in the docstrings below, tested in tests/ratings/test_tier_rule*.py):

* **Own monotonicity.** If one provider's composite rises and its bootstrap distribution
  moves up (each of its ``P(i > l)`` rises, each ``P(u > i)`` falls), its peer tier never
  worsens. Proof: the cuts above it can only shrink (the one right above it), lose
  confirmation (its pairs as the lower side weaken) or vanish (when it reaches a neighbour);
  the cuts below it can only grow or gain confirmation. A cut's confirmation depends only on
  who is above and below it, so passing a neighbour turns one cut above into one cut below
  and leaves every other cut's sets, and hence its confirmation, as they were. Choosing the
  four largest: the cuts above can only fall in the size order against the cuts below
  (ties go to the higher cut, which is always one above), so fewer or as many of the chosen
  four lie above. Floors and gates are monotone in the provider's own values.
* **Identical evidence, identical tier.** The rule reads values, never names; equal
  composites sit in one run and equal distributions give equal ``P``.
* **Irrelevant providers.** A provider W that every other rated provider beats with
  probability 1 and that sits below all of them adds one confirmed cut, below everyone, and
  changes no other cut (``P(u > W) = 1`` leaves every minimum as it was). So adding W never
  reorders the others and never worsens anyone's tier; if four boundaries were already chosen
  and W's gap is larger than the smallest of them, that boundary is dropped and every provider
  below it moves up exactly one tier. Removing W is the same in reverse. Otherwise nothing
  changes.
* **No invented groups.** A boundary needs confirmation, so a field in which no provider is
  confirmed apart from its neighbours is one group (the floors still apply).
* **What is not promised: no peer windfall in every case.** When another provider improves,
  a provider's tier can improve only through a boundary above it being dropped: the cut
  right above the improver shrinking or vanishing (the improver joins the group above), a cut
  whose weakest pair had the improver on the lower side losing its confirmation, or the gap
  right below the improver growing into the four largest and displacing a smaller boundary.
  No rule can exclude all three and still give well-separated groups consecutive tiers: move
  the Gold group one provider at a time up into the Platinum group; the Silver group must
  then become Gold, or Gold stays empty. Everything else about a peer (composite, interval,
  its own evidence) never changes when another provider's evidence changes.

Pure: numpy only; no Django, no clock, no random numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ratings.engine_types import TIERS, TierFloors

MAX_GROUPS = len(TIERS)
WORST = MAX_GROUPS - 1
MAX_BOUNDARIES = MAX_GROUPS - 1
# Each provider's bootstrap distribution is summarised by this many quantiles before the
# pairwise comparison: a fixed, deterministic resolution (1/GRID_SIZE**2 per pair) that keeps
# the all-pairs comparison cheap for a thousand providers. Quantiles of pointwise larger
# replicates are pointwise larger, so every monotonicity argument carries over.
GRID_SIZE = 100
# Gaps are compared after rounding (like the composites), so float noise cannot decide
# between two equal gaps; rounding keeps every order it does not turn into a tie.
GAP_DECIMALS = 12


@dataclass(frozen=True)
class Cut:
    """A candidate boundary of the point estimate, between ``lower_value`` < ``upper_value``."""

    upper: tuple[int, ...]  # provider indices holding the upper value
    lower: tuple[int, ...]
    upper_value: float
    lower_value: float
    confidence: float  # min over pairs across the cut of P(upper > lower)
    confirmed: bool
    chosen: bool

    @property
    def gap(self) -> float:
        return self.upper_value - self.lower_value


# ----------------------------------------------------------------------- pair probabilities
def marginal_grid(replicates: np.ndarray, size: int = GRID_SIZE) -> np.ndarray:
    """(providers, B) replicates -> (providers, K) sorted quantiles, K = min(size, B).

    The k-th of K quantiles is the order statistic at the middle of the k-th of K equal
    slices of the sorted replicates; with K = B it is the sorted sample itself.
    """
    b = replicates.shape[1]
    k = min(size, b)
    ordered = np.sort(replicates, axis=1)
    if k == b:
        return ordered
    index = ((np.arange(k) + 0.5) * b / k).astype(np.int64)
    return ordered[:, index]


def pair_probabilities(grid: np.ndarray) -> np.ndarray:
    """``P[u, l]`` = P(X_u > X_l) + P(X_u = X_l)/2 for independent draws from the two grids.

    Exact for the grids; ``P[u, l] + P[l, u] == 1`` and ``P[i, i] == 0.5``.
    """
    n, k = grid.shape
    values = grid.ravel()
    out = np.empty((n, n), dtype=np.float64)
    for low in range(n):
        below = np.searchsorted(grid[low], values, side="left")
        at_or_below = np.searchsorted(grid[low], values, side="right")
        out[:, low] = (below + at_or_below).reshape(n, k).sum(axis=1) / (2.0 * k * k)
    return out


# --------------------------------------------------------------------------- the point rule
def _runs(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (inclusive) positions of the runs of equal values in a sorted array."""
    if len(ordered) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    ends = np.append(starts[1:], len(ordered)) - 1
    return starts, ends


def _cut_confidences(sorted_p: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each cut after run r (r < runs-1): min of P[u, l] over u above and l at/below.

    ``sorted_p`` is P with rows and columns in ascending composite order.
    """
    if len(ends) < 2:
        return np.zeros(0)
    prefix = np.minimum.accumulate(sorted_p, axis=1)  # [u, j] = min over l <= j
    block = np.minimum.accumulate(prefix[::-1], axis=0)[::-1]  # [u, j] = min over u' >= u, l <= j
    positions = ends[:-1]
    return block[positions + 1, positions]


def choose(gaps: np.ndarray, confirmed: np.ndarray) -> np.ndarray:
    """The chosen cuts: the (at most four) confirmed ones with the largest gaps, ties to the higher."""
    chosen = np.zeros(len(gaps), dtype=bool)
    candidates = np.flatnonzero(confirmed)
    if len(candidates):
        # lexsort: last key is primary; larger gap first, then higher cut first
        order = np.lexsort((-candidates, -gaps[candidates]))
        chosen[candidates[order[:MAX_BOUNDARIES]]] = True
    return chosen


def point_tiers(
    composites: np.ndarray, pairs: np.ndarray, confidence: float, min_gap: float = 0.0
) -> tuple[np.ndarray, list[Cut]]:
    """Peer tier index (0 = top group) of every provider, and every candidate cut, best first."""
    n = len(composites)
    order = np.argsort(composites, kind="stable")
    ordered = composites[order]
    starts, ends = _runs(ordered)
    if len(starts) < 2:
        return np.zeros(n, dtype=np.int64), []
    conf = _cut_confidences(pairs[np.ix_(order, order)], ends)
    gaps = np.round(ordered[starts[1:]] - ordered[ends[:-1]], GAP_DECIMALS)
    confirmed = (conf >= confidence) & (gaps >= min_gap)
    chosen = choose(gaps, confirmed)
    # run r has the cuts r, r+1, ... above it
    above = np.append(np.cumsum(chosen[::-1])[::-1], 0)
    tiers = np.empty(n, dtype=np.int64)
    tiers[order] = np.repeat(above, ends - starts + 1)
    cuts = [
        Cut(
            upper=tuple(sorted(int(i) for i in order[starts[r + 1] : ends[r + 1] + 1])),
            lower=tuple(sorted(int(i) for i in order[starts[r] : ends[r] + 1])),
            upper_value=float(ordered[starts[r + 1]]),
            lower_value=float(ordered[starts[r]]),
            confidence=float(conf[r]),
            confirmed=bool(confirmed[r]),
            chosen=bool(chosen[r]),
        )
        for r in range(len(starts) - 1)
    ]
    return tiers, cuts[::-1]


# --------------------------------------------------------------- one provider, replicated
def conditional_tiers(
    composites: np.ndarray, pairs: np.ndarray, confidence: float, i: int, values: np.ndarray,
    min_gap: float = 0.0, *, bisect: bool = True,
) -> np.ndarray:
    """Peer tier of provider ``i`` if its composite were each of ``values``, the others at theirs.

    The cut sets and their confirmations follow from where ``i`` sits; ``P`` is fixed (it is
    the providers' whole bootstrap distributions). Equal to ``point_tiers(...)[i]`` at
    ``values = composites[i]``. Non-increasing in each value (the own-monotonicity proof with
    ``P`` held fixed), so a replicate further up never gets a worse tier.
    """
    values = np.asarray(values, dtype=np.float64)
    evaluate = _conditional_rule(composites, pairs, confidence, i, min_gap)
    if not bisect or len(values) <= 4 * MAX_BOUNDARIES:
        return evaluate(values)
    return _monotone_eval(evaluate, values)


def _monotone_eval(evaluate: Callable[[np.ndarray], np.ndarray], values: np.ndarray) -> np.ndarray:
    """A non-increasing step function at many points, from two vectorised evaluations.

    The rule is evaluated on a coarse grid of the sorted values; between two grid points with
    the same tier every value has that tier (the rule is non-increasing in the value: own
    monotonicity with P fixed), so only the stretches where the tier steps are evaluated
    point by point. Exact; tests compare it with evaluating every value.
    """
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    size = len(values)
    step = max(1, int(np.sqrt(size)))
    grid = np.unique(np.append(np.arange(0, size, step), size - 1))
    at_grid = evaluate(ordered[grid])
    out = np.empty(size, dtype=np.int64)
    out[grid] = at_grid
    changes = np.flatnonzero(at_grid[1:] != at_grid[:-1])
    same = np.ones(size, dtype=bool)
    for j in changes:
        same[grid[j] + 1 : grid[j + 1]] = False
    # constant stretches take the grid value on their left
    left = np.searchsorted(grid, np.arange(size), side="right") - 1
    fill = same & ~np.isin(np.arange(size), grid)
    out[fill] = at_grid[left[fill]]
    todo = np.flatnonzero(~same)
    if len(todo):
        out[todo] = evaluate(ordered[todo])
    result = np.empty(size, dtype=np.int64)
    result[order] = out
    return result


def _conditional_rule(
    composites: np.ndarray, pairs: np.ndarray, confidence: float, i: int, min_gap: float = 0.0
) -> Callable[[np.ndarray], np.ndarray]:
    """The peer tier of provider ``i`` as a function of its composite, the others fixed."""
    n = len(composites)
    others = np.array([j for j in range(n) if j != i], dtype=np.int64)
    if len(others) == 0:
        return lambda values: np.zeros(len(values), dtype=np.int64)
    order = others[np.argsort(composites[others], kind="stable")]
    ordered = composites[order]
    starts, ends = _runs(ordered)
    m = len(starts)
    y = ordered[starts]
    inf = np.inf
    block = _cut_confidences(pairs[np.ix_(order, order)], ends)  # (m-1,)
    m_ext = np.concatenate((block, [inf]))  # others' confidence of cut r; no cut above the top run
    up_row = np.minimum.accumulate(pairs[i, order])  # min over l at/below a position of P(i > l)
    i_above = up_row[ends]  # i above the cut after run r: min over runs <= r
    down_col = np.minimum.accumulate(pairs[order, i][::-1])[::-1]  # min over u at/above a position
    i_below = np.append(down_col[starts], inf)  # index k: min over runs >= k of P(u > i)
    gaps = np.round(y[1:] - y[:-1], GAP_DECIMALS)
    wide = gaps >= min_gap
    eligible_above = (wide & (np.minimum(block, i_above[: m - 1]) >= confidence)).tolist()  # i above cut r
    eligible_below = (wide & (np.minimum(block, i_below[1:m]) >= confidence)).tolist()  # i below cut r
    heights = list(range(0, 2 * (m - 1), 2))
    # prefix[j]: top four of {cut r < j, i above it}; suffix[j]: top four of {cut r >= j, i below it}
    pre_s, pre_h = _prefix_top4(list(gaps), heights, eligible_above)
    suf_s, suf_h = _suffix_top4(list(gaps), heights, eligible_below)
    # the two cuts next to i in gap k (between runs k-1 and k): the others split as by cut k-1
    lo_conf = np.concatenate(([-inf], np.minimum(m_ext, i_above)))  # i above cut k-1 (k >= 1)
    up_conf = np.concatenate((np.minimum(np.concatenate(([inf], block)), i_below[:m]), [-inf]))  # i below (k < m)
    is_above = np.concatenate(
        (np.zeros(MAX_BOUNDARIES, dtype=bool), np.ones(MAX_BOUNDARIES, dtype=bool), [False, True])
    )

    def evaluate(values: np.ndarray) -> np.ndarray:
        # Where each value sits: at run g (equal), or in the gap below run g (g == m: above all).
        g = np.searchsorted(y, values, side="left")
        at_run = (g < m) & (y[np.minimum(g, m - 1)] == values)
        below_row = np.where(at_run, g, np.maximum(g - 1, 0))
        above_row = g  # run g: cuts >= g; gap g: cuts >= g
        size_below, h_below = pre_s[below_row], pre_h[below_row]
        size_above, h_above = suf_s[above_row], suf_h[above_row]
        y_low = y[np.maximum(g - 1, 0)]
        y_high = y[np.minimum(g, m - 1)]
        lo_ok = ~at_run & (g >= 1) & (lo_conf[g] >= confidence)
        up_ok = ~at_run & (g <= m - 1) & (up_conf[g] >= confidence)
        size_lo = np.round(values - y_low, GAP_DECIMALS)
        size_up = np.round(y_high - values, GAP_DECIMALS)
        size_lo = np.where(lo_ok & (size_lo >= min_gap), size_lo, -inf)
        size_up = np.where(up_ok & (size_up >= min_gap), size_up, -inf)
        sizes = np.column_stack((size_below, size_above, size_lo, size_up))
        heights_all = np.column_stack((h_below, h_above, 2 * g - 2, 2 * g - 1))
        valid = sizes > -inf
        # a candidate is chosen when fewer than four valid candidates beat it
        beats = (sizes[:, None, :] > sizes[:, :, None]) | (
            (sizes[:, None, :] == sizes[:, :, None]) & (heights_all[:, None, :] > heights_all[:, :, None])
        )
        beaten = (beats & valid[:, None, :]).sum(axis=2)
        chosen = valid & (beaten < MAX_BOUNDARIES)
        return (chosen & is_above).sum(axis=1).astype(np.int64)

    return evaluate


def _prefix_top4(sizes: list[float], heights: list[int], eligible: list[bool]) -> tuple[np.ndarray, np.ndarray]:
    """Row j: the top four (size, height) among cuts r < j that are eligible; rows 0..len."""
    count = len(sizes)
    out_s = np.full((count + 1, MAX_BOUNDARIES), -np.inf)
    out_h = np.full((count + 1, MAX_BOUNDARIES), -1, dtype=np.int64)
    best: list[tuple[float, int]] = []
    for r in range(count):
        if eligible[r]:
            best = sorted([*best, (sizes[r], heights[r])], reverse=True)[:MAX_BOUNDARIES]
        out_s[r + 1, : len(best)] = [s for s, _ in best]
        out_h[r + 1, : len(best)] = [h for _, h in best]
    return out_s, out_h


def _suffix_top4(sizes: list[float], heights: list[int], eligible: list[bool]) -> tuple[np.ndarray, np.ndarray]:
    """Row j: the top four among eligible cuts r >= j; rows 0..len+1 (the last two empty)."""
    count = len(sizes)
    out_s = np.full((count + 2, MAX_BOUNDARIES), -np.inf)
    out_h = np.full((count + 2, MAX_BOUNDARIES), -1, dtype=np.int64)
    best: list[tuple[float, int]] = []
    for r in range(count - 1, -1, -1):
        if eligible[r]:
            best = sorted([*best, (sizes[r], heights[r])], reverse=True)[:MAX_BOUNDARIES]
        out_s[r, : len(best)] = [s for s, _ in best]
        out_h[r, : len(best)] = [h for _, h in best]
    return out_s, out_h


# ------------------------------------------------------------------------------ caps, output
def floor_tier_index(composites: np.ndarray, floors: TierFloors) -> np.ndarray:
    """The best tier each composite may hold under the absolute floors (any shape)."""
    thresholds = np.asarray(floors.as_tuple(), dtype=np.float64)  # best first, descending
    return (np.asarray(composites, dtype=np.float64)[..., None] < thresholds).sum(axis=-1)


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

    Hysteresis: the last published tier ``p`` is kept while the bootstrap still gives at least
    ``hysteresis_threshold`` to ``p`` *or beyond it on the old side*: a provider whose point
    tier fell below ``p`` keeps ``p`` while P(tier at least as good as p) >= threshold, and one
    whose point tier rose above ``p`` keeps ``p`` while P(tier at least as bad as p) >=
    threshold. Cumulative probabilities move one way when the provider's evidence improves,
    so hysteresis never turns an improvement into a lower published tier (nor a peer's
    improvement into a higher one). Floors and failed gates of the point estimate
    (``hard_cap``) still apply afterwards.
    Borderline: the published tier's probability is under ``borderline_threshold``. The
    outlook points to the side that holds more of the remaining probability.
    """
    tier = point_tier
    held = False
    if previous is not None and previous != point_tier:
        if point_tier > previous:  # fell: P(tier <= previous)
            support = float(probabilities[: previous + 1].sum())
        else:  # rose: P(tier >= previous)
            support = float(probabilities[previous:].sum())
        if support >= hysteresis_threshold:
            tier = max(previous, hard_cap)
            held = tier != point_tier
    borderline = bool(probabilities[tier] < borderline_threshold)
    above = float(probabilities[:tier].sum())
    below = float(probabilities[tier + 1 :].sum())
    outlook = "stable"
    if borderline:
        outlook = "positive" if above > below else "negative" if below > above else "stable"
    return tier, held, borderline, outlook
