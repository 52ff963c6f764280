"""Pure cost arithmetic: effective price, cost per useful Mtok, its interval, and standings.

No Django, no app, no clock (``.importlinter``'s pure-cost contract): frozen inputs in, plain
numbers and frozen dataclasses out; the bootstrap is seeded, so the same inputs always give
the same outputs.

The quantities (see the methodology page, ``reports.methodology``):

* P, the effective price in $/GPU-hour: the list or negotiated price plus the mandatory
  extras (storage, egress, support), each with its source. A producer that owns its GPUs
  has a second basis: capex annualised with the capital recovery factor
  CRF(r, n) = r (1 + r)^n / ((1 + r)^n - 1) (1 / n at r = 0), spread over the hours a year
  the GPU is in service, plus power, space and staff per GPU-hour.
* T, output tokens per second per GPU at the rubric's target interactivity (the serving probe).
* g, goodput: the share of tokens in requests that met the TTFT and TPOT objectives.
* A, availability: the share of the cycle's scheduled samples in which the ordered capacity
  was usable (measured by probes, never assumed).
* cost per useful Mtok = P * 1e6 / (3600 * T * g * A). With g = A = 1 it is InferenceX's
  P / (T * 3600 / 1e6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MTOK = 1e6
HOURS_PER_YEAR = 8760.0
DEFAULT_BOOTSTRAP = 2000
DEFAULT_LEVEL = 0.90
ENGINE_VERSION = "costs/1"


class CostInputError(ValueError):
    """An input cannot make a cost (zero, negative, NaN, infinite, or out of range): says which."""


def _finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CostInputError(f"{name} must be a number, not {type(value).__name__}")
    value = float(value)
    if math.isnan(value):
        raise CostInputError(f"{name} is NaN")
    if math.isinf(value):
        raise CostInputError(f"{name} is infinite")
    return value


def _positive(name: str, value: float) -> float:
    value = _finite(name, value)
    if value <= 0:
        raise CostInputError(f"{name} must be greater than 0, got {value:g}")
    return value


def _not_negative(name: str, value: float) -> float:
    value = _finite(name, value)
    if value < 0:
        raise CostInputError(f"{name} must not be negative, got {value:g}")
    return value


def _share(name: str, value: float) -> float:
    """A share in (0, 1]: zero makes the cost infinite, more than one is not a share."""
    value = _finite(name, value)
    if not 0 < value <= 1:
        raise CostInputError(f"{name} must be in (0, 1], got {value:g}")
    return value


# --- price ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PriceComponent:
    """One part of the effective price, in $/GPU-hour, with where the figure comes from."""

    name: str  # "list", "negotiated", "storage", "egress", "support", "capex", "power", ...
    amount_per_gpu_hour: float
    source: str


BASE_COMPONENTS = ("list", "negotiated")


def effective_price(components: Sequence[PriceComponent]) -> float:
    """P = the base price (exactly one of list or negotiated, > 0) plus the extras (each >= 0)."""
    bases = [c for c in components if c.name in BASE_COMPONENTS]
    if len(bases) != 1:
        raise CostInputError(f"a price needs exactly one base component (list or negotiated), got {len(bases)}")
    total = 0.0
    for c in components:
        amount = (_positive if c.name in BASE_COMPONENTS else _not_negative)(
            f"price component {c.name!r}", c.amount_per_gpu_hour
        )
        if not c.source.strip():
            raise CostInputError(f"price component {c.name!r} has no source")
        total += amount
    return total


def capital_recovery_factor(rate: float, years: float) -> float:
    """CRF(r, n) = r (1 + r)^n / ((1 + r)^n - 1); 1/n when r = 0 (straight-line)."""
    rate = _not_negative("discount rate", rate)
    years = _positive("service life (years)", years)
    if rate == 0:
        return 1.0 / years
    growth = (1.0 + rate) ** years
    return rate * growth / (growth - 1.0)


@dataclass(frozen=True)
class OwnedBasis:
    """What a producer that owns its GPUs pays per GPU: capex annualised plus running costs."""

    capex_per_gpu: float  # $ per GPU, installed (its share of servers and network)
    discount_rate: float  # per year, e.g. 0.08
    life_years: float
    power_per_gpu_hour: float = 0.0
    space_per_gpu_hour: float = 0.0
    staff_per_gpu_hour: float = 0.0
    hours_per_year: float = HOURS_PER_YEAR  # hours a year in service
    source: str = ""


def owned_components(basis: OwnedBasis) -> tuple[PriceComponent, ...]:
    """The owned basis as price components: capex x CRF / hours a year, power, space, staff."""
    hours = _positive("hours in service a year", basis.hours_per_year)
    if hours > HOURS_PER_YEAR + 24:
        raise CostInputError(f"hours in service a year cannot exceed {HOURS_PER_YEAR + 24:g}, got {hours:g}")
    capex = _positive("capex per GPU", basis.capex_per_gpu)
    crf = capital_recovery_factor(basis.discount_rate, basis.life_years)
    source = basis.source.strip()
    if not source:
        raise CostInputError("the owned basis has no source")
    return (
        PriceComponent("capex", capex * crf / hours, source),
        PriceComponent("power", _not_negative("power per GPU-hour", basis.power_per_gpu_hour), source),
        PriceComponent("space", _not_negative("space per GPU-hour", basis.space_per_gpu_hour), source),
        PriceComponent("staff", _not_negative("staff per GPU-hour", basis.staff_per_gpu_hour), source),
    )


def owned_price(basis: OwnedBasis) -> float:
    """The owned basis in $/GPU-hour."""
    return sum(c.amount_per_gpu_hour for c in owned_components(basis))


# --- cost per useful Mtok ---------------------------------------------------------------------
def cost_per_useful_mtok(price: float, throughput: float, goodput: float, availability: float) -> float:
    """P * 1e6 / (3600 * T * g * A): $ per million useful output tokens.

    price in $/GPU-hour, throughput in output tok/s per GPU (per any unit, as long as the price is
    per the same unit), goodput and availability as shares in (0, 1].
    """
    p = _positive("price", price)
    t = _positive("throughput", throughput)
    g = _share("goodput", goodput)
    a = _share("availability", availability)
    return p * TOKENS_PER_MTOK / (SECONDS_PER_HOUR * t * g * a)


def inferencex_cost_per_mtok(price: float, throughput: float) -> float:
    """InferenceX's raw $/Mtok on an ideal day: P / (T * 3600 / 1e6)."""
    return _positive("price", price) / (_positive("throughput", throughput) * SECONDS_PER_HOUR / TOKENS_PER_MTOK)


@dataclass(frozen=True)
class Replicate:
    """One serving measurement (one probe run): throughput at the target and its goodput."""

    throughput: float
    goodput: float


@dataclass(frozen=True)
class CostEstimate:
    point: float
    low: float
    high: float | None  # None: the upper end is unbounded (a resample with no useful output)
    throughput: float
    goodput: float
    availability: float
    replicates: int
    samples: int
    level: float
    bootstrap: int
    seed: int


def _validated(replicates: Sequence[Replicate], availability_samples: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    if not replicates:
        raise CostInputError("no serving replicates: throughput and goodput are unknown")
    if not availability_samples:
        raise CostInputError("no availability samples: availability is unknown (never assumed to be 1)")
    pairs = np.array([
        (_positive(f"throughput of replicate {i + 1}", r.throughput),
         _finite(f"goodput of replicate {i + 1}", r.goodput))
        for i, r in enumerate(replicates)
    ])
    if ((pairs[:, 1] < 0) | (pairs[:, 1] > 1)).any():
        raise CostInputError("goodput of every replicate must be in [0, 1]")
    samples = np.array([_finite(f"availability sample {i + 1}", s) for i, s in enumerate(availability_samples)])
    if ((samples < 0) | (samples > 1)).any():
        raise CostInputError("every availability sample must be in [0, 1]")
    return pairs, samples


def cost_estimate(
    price: float, replicates: Sequence[Replicate], availability_samples: Sequence[float], *,
    seed: int, bootstrap: int = DEFAULT_BOOTSTRAP, level: float = DEFAULT_LEVEL,
) -> CostEstimate:
    """The point cost from the replicates' means, and a seeded percentile bootstrap interval.

    Each draw resamples the serving replicates (throughput and goodput together: they come from
    the same run) and, independently, the availability samples, and recomputes the cost from
    the resampled means. A draw whose useful output is zero has an infinite cost; when more
    than the upper tail is such draws the interval's upper end is None (unbounded).
    """
    p = _positive("price", price)
    if not 0 < level < 1:
        raise CostInputError(f"interval level must be in (0, 1), got {level}")
    if bootstrap < 100:
        raise CostInputError(f"a bootstrap needs at least 100 draws, got {bootstrap}")
    pairs, samples = _validated(replicates, availability_samples)
    t, g, a = float(pairs[:, 0].mean()), float(pairs[:, 1].mean()), float(samples.mean())
    if g <= 0:
        raise CostInputError("goodput is 0 in every replicate: no useful output, the cost is unbounded")
    if a <= 0:
        raise CostInputError("availability is 0 in every sample: the capacity was never usable")
    point = cost_per_useful_mtok(p, t, g, a)
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(pairs), size=(bootstrap, len(pairs)))
    j = rng.integers(0, len(samples), size=(bootstrap, len(samples)))
    useful = pairs[i, 0].mean(axis=1) * pairs[i, 1].mean(axis=1) * samples[j].mean(axis=1)
    with np.errstate(divide="ignore"):
        draws = np.where(useful > 0, p * TOKENS_PER_MTOK / (SECONDS_PER_HOUR * useful), np.inf)
    tail = (1 - level) / 2
    low, high = np.quantile(draws, [tail, 1 - tail], method="inverted_cdf")  # no interpolation across inf
    if not math.isfinite(low):
        raise CostInputError("most resamples have no useful output: too few usable samples for an interval")
    return CostEstimate(
        point=point, low=float(low), high=float(high) if math.isfinite(high) else None,
        throughput=t, goodput=g, availability=a, replicates=len(pairs), samples=len(samples),
        level=level, bootstrap=bootstrap, seed=seed,
    )


# --- standings across cycles ------------------------------------------------------------------
@dataclass(frozen=True)
class CycleCosts:
    """One cycle's cost per useful Mtok per provider (None: unknown), cycles oldest first."""

    cycle: str
    costs: Mapping[str, float | None]


@dataclass(frozen=True)
class Standing:
    cycle: str
    cost: float | None
    rank: int | None  # 1 = cheapest among the peers with a known cost; ties share the better rank
    peers: int  # providers with a known cost in this cycle
    previous_cost: float | None = None
    previous_rank: int | None = None
    improved: bool = False  # cost fell since the provider's previous cycle with a known cost
    fell_behind: bool = False  # improved, yet a peer that was behind it is now ahead of it
    overtaken_by: tuple[str, ...] = ()


def _ranks(costs: Mapping[str, float | None]) -> dict[str, int]:
    known = {k: v for k, v in costs.items() if v is not None}
    for name, value in known.items():
        _positive(f"cost of {name}", value)
    return {k: 1 + sum(1 for other in known.values() if other < v) for k, v in known.items()}


def standings(cycles: Sequence[CycleCosts]) -> dict[str, list[Standing]]:
    """Each provider's cost and rank per cycle, and the flag "improved but fell behind".

    The flag is raised in a cycle when the provider's cost fell since the previous cycle and a
    peer whose cost was higher then is lower now (it improved faster): your 10 -> 8 while a
    rival's 12 -> 6. Comparisons are between consecutive cycles in the order given.
    """
    names = sorted({name for c in cycles for name in c.costs})
    result: dict[str, list[Standing]] = {name: [] for name in names}
    previous: CycleCosts | None = None
    previous_ranks: dict[str, int] = {}
    for current in cycles:
        ranks = _ranks(current.costs)
        for name in names:
            cost = current.costs.get(name)
            before = previous.costs.get(name) if previous is not None else None
            improved = cost is not None and before is not None and cost < before
            overtaken: tuple[str, ...] = ()
            if improved and previous is not None:
                overtaken = tuple(sorted(
                    rival for rival in names if rival != name
                    and previous.costs.get(rival) is not None and current.costs.get(rival) is not None
                    and previous.costs[rival] > before and current.costs[rival] < cost  # type: ignore[operator]
                ))
            result[name].append(Standing(
                cycle=current.cycle, cost=cost, rank=ranks.get(name), peers=len(ranks),
                previous_cost=before, previous_rank=previous_ranks.get(name),
                improved=improved, fell_behind=bool(overtaken), overtaken_by=overtaken,
            ))
        previous, previous_ranks = current, ranks
    return result
