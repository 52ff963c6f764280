"""Rental price references per grade, and how well each provider's rent tracks them (pure).

A price index only hedges a renter if its *changes* track the rent actually paid. From recorded
observations ($/GPU-hour per cluster, grade, term and date) this module computes, per grade and
term:

* the reference index per period: the median of the period's observations, with their count and
  spread (min, max, quartiles), marked *thin* below ``MIN_COUNT`` observations;
* per provider against the index, over consecutive periods: the period-over-period change of the
  provider's rent (the median of its own observations in the period) and of the index, then the
  correlation of those changes, the beta (cov / var of the index changes), and the tracking error
  (sample standard deviation of provider change minus index change), each with its sample size
  (the number of paired changes). A provider with at least ``MIN_PAIRS`` pairs whose correlation
  is below ``POOR_CORRELATION`` (or undefined) or whose tracking error exceeds
  ``POOR_TRACKING_ERROR`` is flagged a poor hedge match; with fewer pairs the flag is None
  (not enough data to say either way).

The index includes every provider's observations (the provider's own too): it is the market
reference a contract would settle against. Changes are simple returns ``p_t / p_(t-1) - 1`` and
are taken only between adjacent periods (a gap breaks the chain: a change over two months is not
comparable with monthly ones).

No Django, no clock, no app. Periods are calendar months spelled ``YYYY-MM``.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

MIN_COUNT = 3  # observations below which an index point is thin
MIN_PAIRS = 3  # paired period-over-period changes needed before judging a hedge
POOR_CORRELATION = 0.5
POOR_TRACKING_ERROR = 0.10  # per period, as a fraction (10 percentage points)


class NoObservations(ValueError):
    """A period (or grade) was asked for that has no observations."""


@dataclass(frozen=True)
class Observation:
    provider: str
    period: str  # YYYY-MM
    price: float  # $/GPU-hour
    cluster: str = ""


@dataclass(frozen=True)
class IndexPoint:
    period: str
    median: float
    count: int
    low: float
    high: float
    p25: float
    p75: float
    thin: bool


@dataclass(frozen=True)
class Tracking:
    provider: str
    n_periods: int  # periods with a provider price
    n_pairs: int  # paired period-over-period changes (the sample size of each figure below)
    correlation: float | None
    beta: float | None
    tracking_error: float | None
    poor_hedge: bool | None  # None: fewer than MIN_PAIRS pairs
    reason: str


def period_of(year: int, month: int) -> str:
    if not 1 <= month <= 12:
        raise ValueError(f"month {month} is not 1-12")
    return f"{year:04d}-{month:02d}"


def _next_period(period: str) -> str:
    year, month = int(period[:4]), int(period[5:7])
    return period_of(year + month // 12, month % 12 + 1)


def index_point(period: str, prices: Sequence[float], *, min_count: int = MIN_COUNT) -> IndexPoint:
    """The reference for one period; NoObservations when there are none."""
    if not prices:
        raise NoObservations(f"no price observations in period {period}")
    ordered = sorted(float(p) for p in prices)
    if len(ordered) >= 2:
        p25, _, p75 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        p25 = p75 = ordered[0]
    return IndexPoint(period, statistics.median(ordered), len(ordered), ordered[0], ordered[-1], p25, p75,
                      len(ordered) < min_count)


def reference_index(observations: Iterable[Observation], *, min_count: int = MIN_COUNT) -> tuple[IndexPoint, ...]:
    """One index point per period that has observations, oldest first."""
    by_period: dict[str, list[float]] = defaultdict(list)
    for obs in observations:
        by_period[obs.period].append(obs.price)
    return tuple(index_point(p, by_period[p], min_count=min_count) for p in sorted(by_period))


def provider_series(observations: Iterable[Observation], provider: str) -> dict[str, float]:
    """The provider's rent per period: the median of its own observations there."""
    by_period: dict[str, list[float]] = defaultdict(list)
    for obs in observations:
        if obs.provider == provider:
            by_period[obs.period].append(obs.price)
    return {p: statistics.median(v) for p, v in sorted(by_period.items())}


def changes(series: Mapping[str, float]) -> dict[str, float]:
    """Period-over-period simple returns, keyed by the later period; adjacent periods only."""
    out: dict[str, float] = {}
    for period, price in series.items():
        nxt = _next_period(period)
        if nxt in series and price > 0:
            out[nxt] = series[nxt] / price - 1.0
    return dict(sorted(out.items()))


def _clean(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def tracking(provider: str, provider_prices: Mapping[str, float], index_prices: Mapping[str, float], *,
             min_pairs: int = MIN_PAIRS, poor_correlation: float = POOR_CORRELATION,
             poor_tracking_error: float = POOR_TRACKING_ERROR) -> Tracking:
    """How the provider's period-over-period rent changes track the index's."""
    dp, di = changes(provider_prices), changes(index_prices)
    paired = [p for p in dp if p in di]
    xs, ys = [di[p] for p in paired], [dp[p] for p in paired]
    n = len(paired)
    corr = beta = te = None
    if n >= 2:
        te = statistics.stdev([y - x for x, y in zip(xs, ys, strict=True)])
        var_i = statistics.variance(xs)
        if var_i > 0:
            beta = statistics.covariance(xs, ys) / var_i
            if statistics.variance(ys) > 0:
                corr = statistics.correlation(xs, ys)
    corr, beta, te = _clean(corr), _clean(beta), _clean(te)
    if n < min_pairs:
        poor, reason = None, f"{n} paired change{'s' if n != 1 else ''}; at least {min_pairs} needed to judge"
    elif corr is None:
        poor, reason = True, "correlation undefined (no variation in one of the series)"
    elif corr < poor_correlation:
        poor, reason = True, f"correlation {corr:.2f} below {poor_correlation:g}"
    elif te is not None and te > poor_tracking_error:
        poor, reason = True, f"tracking error {te:.1%} above {poor_tracking_error:.0%} per period"
    else:
        poor, reason = False, "tracks the index"
    return Tracking(provider, len(provider_prices), n, corr, beta, te, poor, reason)


def tracking_all(observations: Sequence[Observation], *, min_count: int = MIN_COUNT,
                 min_pairs: int = MIN_PAIRS) -> tuple[tuple[IndexPoint, ...], tuple[Tracking, ...]]:
    """The index of ``observations`` (one grade and term) and every provider's tracking against it."""
    points = reference_index(observations, min_count=min_count)
    index_prices = {p.period: p.median for p in points}
    providers = sorted({o.provider for o in observations})
    return points, tuple(
        tracking(name, provider_series(observations, name), index_prices, min_pairs=min_pairs) for name in providers
    )
