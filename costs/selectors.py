"""Reads for cost of useful output: per cluster in a cycle, P, T, g, A and cost per useful Mtok.

``cycle_costs(cycle)`` is what grades and reports call. For every cluster of the cycle's peer set
it gathers, from stored rows only:

* P: the cluster's ``ClusterPrice`` for the cycle (components with sources; the owned basis too);
* T and g: one replicate per sweep of each ``serving_goodput`` finding (metric
  ``throughput_at_target``) of the cycle: the sweep's throughput at the target (tok/s per
  accelerator; None when the target was outside its measured range) and goodput, from the
  evidence's ``sweeps``; a finding without them (one sweep) is one replicate, its value and
  ``goodput``;
* A: ``availability(cycle=..., cluster=...)``, measured, never assumed (see its docstring);

and hands them to the pure ``costs.engine``. Whatever is missing makes the cost unknown, with the
reason in words: nothing is assumed or filled in.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from costs import engine
from costs.models import ClusterPrice
from probes.models import ClusterAccess, Finding
from providers.models import Cluster, Cycle

SERVING_PROBE = "serving_goodput"
SERVING_METRIC = "throughput_at_target"
AVAILABILITY_PROBES = ("ssh_reachable", "node_inventory")
DOWNTIME_PROBE, DOWNTIME_METRIC = "node_replacement_time", "seconds"
USABLE = frozenset({"pass", "warn"})
UNUSABLE = frozenset({"fail", "provider_error", "timeout", "declined"})
# "could not measure" findings whose cause is the node itself, as a tenant meets it: unusable capacity.
# Other errors (refused credentials, a changed host key, our parser) leave the slot unmeasured, and a
# node the operator replaced meanwhile (departed) is no node of the slot: its successor is probed.
# (A scheduler that refuses a node, "Requested nodes are busy", may be refusing for the tenant's own
# jobs: unmeasured, not unusable.)
UNREACHABLE = frozenset({"host_unreachable", "handshake_failed", "connection_lost"})
DEPARTED = "node_departed"
# serving runs that measured nothing (our harness, declined, no endpoint, cut short): not replicates
NOT_A_MEASUREMENT = ("error", "not_applicable", "declined", "timeout", "provider_error")
HISTORY_CYCLES = 4  # earlier cycles shown in the standings


# --- availability -----------------------------------------------------------------------------
@dataclass(frozen=True)
class AvailabilitySlot:
    slot: str  # ISO time of the scheduled slot
    usable: bool | None  # None: not measurable (our harness failed, or no node answered at all)
    nodes: int
    unusable_nodes: tuple[str, ...] = ()
    gpus_seen: int | None = None
    compute_nodes: int = 0  # nodes other than the login node that answered both probes
    short: bool = False  # every node answered, but fewer than the ordered capacity


@dataclass(frozen=True)
class Availability:
    """A = (usable slots / measured slots) x (1 - downtime / period); None when no slot was measured."""

    value: float | None
    samples: tuple[float, ...]  # one per measured slot: 1 or 0, times the downtime factor
    usable: int
    measured: int
    unmeasured: int
    downtime_s: float
    period_s: float
    slots: tuple[AvailabilitySlot, ...] = ()
    reason: str = ""


def _period(cycle: Cycle) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(cycle.period_start, dt.time.min, tzinfo=dt.UTC)
    return start, dt.datetime.combine(cycle.period_end, dt.time.min, tzinfo=dt.UTC) + dt.timedelta(days=1)


def _slot(findings: Sequence[tuple[str, str, str, str, float | None, Any]], *, login: str,
          when: dt.datetime) -> AvailabilitySlot:
    """One scheduled slot: every node answered both probes; its compute nodes' GPUs (or, where no GPU
    is counted, the compute nodes themselves) are judged against the ordered capacity by the caller."""
    nodes: dict[str, set[str]] = defaultdict(set)
    gpus: dict[str, float] = {}
    for _probe, target, metric, outcome, value, evidence in findings:
        code = evidence.get("error_code") if isinstance(evidence, dict) and outcome == "error" else None
        if code == DEPARTED:
            continue
        if code in UNREACHABLE:
            outcome = "provider_error"  # the node could not be used: unusable, not unmeasured
        if metric == "gpu_count":
            if outcome in USABLE and value is not None:
                gpus[target] = value
            continue
        if metric == "":
            nodes[target].add(outcome)
    unusable = tuple(sorted(t for t, outcomes in nodes.items() if outcomes & UNUSABLE))
    unmeasured = any("error" in outcomes for outcomes in nodes.values())
    compute = sum(1 for t, outcomes in nodes.items() if t != login and outcomes and outcomes <= USABLE)
    usable: bool | None = False if unusable else None if (unmeasured or not nodes) else True
    return AvailabilitySlot(slot=when.isoformat(), usable=usable, nodes=len(nodes), unusable_nodes=unusable,
                            gpus_seen=int(sum(gpus.values())) if gpus else None, compute_nodes=compute)


def _capacity_judged(slots: Sequence[AvailabilitySlot], ordered_gpus: int) -> tuple[AvailabilitySlot, ...]:
    """A slot whose nodes all answered is usable only when the ordered capacity was there: the GPUs
    node_inventory counted reach the cluster's ordered GPU count; where no GPU is counted (a CPU-only
    node, the testbed), the compute nodes that answered reach the ordered count as accelerators (one a
    node, as serving_goodput counts them), or, with no count ordered, the most compute nodes any
    slot of the cycle showed."""
    most = max((s.compute_nodes for s in slots), default=0)
    out = []
    for s in slots:
        if s.usable:
            if s.gpus_seen is not None and ordered_gpus > 0:
                enough = s.gpus_seen >= ordered_gpus
            else:
                enough = s.compute_nodes >= (ordered_gpus if ordered_gpus > 0 else most)
            s = dataclasses.replace(s, usable=enough, short=not enough)
        out.append(s)
    return tuple(out)


def availability(*, cycle: Cycle, cluster: Cluster) -> Availability:
    """The share of the cycle's scheduled availability samples in which the ordered capacity was usable.

    A sample is one slot of the cluster's ``ProbeSchedule`` runs of ``ssh_reachable`` and
    ``node_inventory`` for this cycle, scheduled within the cycle's period. The slot is usable when
    every node answered both (pass) and the ordered capacity was there (``_capacity_judged``); unusable
    when any node failed, timed out, was refused, declined or could not be reached (unreachable,
    handshake failed, connection lost), or fewer than the ordered capacity answered; unmeasured (left out, and counted) when only our own side failed (refused
    credentials, a changed host key, output we could not read). The downtime the
    reliability probe ``node_replacement_time`` measured in the cycle (seconds until the pool was
    whole again; a censored run counts at its deadline) is time the ordered capacity was not
    whole: A = usable/measured x (1 - downtime/period).
    """
    start, end = _period(cycle)
    period_s = (end - start).total_seconds()
    rows = (
        Finding.objects.filter(
            run__cycle=cycle, run__cluster=cluster, run__schedule__isnull=False,
            run__probe_id__in=AVAILABILITY_PROBES, run__scheduled_for__gte=start, run__scheduled_for__lt=end,
        )
        .values_list("run__scheduled_for", "probe_id", "target", "metric", "outcome", "value", "evidence")
        .order_by("run__scheduled_for", "id")
    )
    by_slot: dict[dt.datetime, list[tuple[str, str, str, str, float | None, Any]]] = defaultdict(list)
    for when, probe_id, target, metric, outcome, value, evidence in rows:
        by_slot[when].append((probe_id, target, metric, outcome, value, evidence))
    access = ClusterAccess.objects.filter(cluster=cluster).first()
    login = access.login_host if access is not None else ""
    slots = _capacity_judged(
        [_slot(found, login=login, when=when) for when, found in sorted(by_slot.items())],
        cluster.gpu_count,
    )
    downtime = 0.0
    for value in Finding.objects.filter(
        run__cycle=cycle, run__cluster=cluster, probe_id=DOWNTIME_PROBE, metric=DOWNTIME_METRIC,
        run__scheduled_for__gte=start, run__scheduled_for__lt=end, value__isnull=False,
    ).exclude(outcome__in=("error", "not_applicable")).values_list("value", flat=True):
        downtime += max(0.0, float(value))
    measured = [s for s in slots if s.usable is not None]
    factor = max(0.0, 1.0 - downtime / period_s)
    samples = tuple((1.0 if s.usable else 0.0) * factor for s in measured)
    usable = sum(1 for s in measured if s.usable)
    if not measured:
        reason = (
            "no scheduled availability samples (ssh_reachable and node_inventory from a probe schedule) "
            "in the cycle's period" if not slots else "no scheduled availability sample could be measured"
        )
        value = None
    else:
        reason, value = "", usable / len(measured) * factor
    return Availability(value=value, samples=samples, usable=usable, measured=len(measured),
                        unmeasured=len(slots) - len(measured), downtime_s=downtime, period_s=period_s,
                        slots=slots, reason=reason)


# --- serving ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ServingReplicate:
    finding_id: int
    run_id: int
    throughput: float | None  # tok/s per accelerator at the target; None when out of range
    goodput: float | None
    in_range: bool
    error_rate: float | None = None
    accelerators: float | None = None
    target_interactivity: float | None = None
    sweep: int | None = None  # which sweep of the run (the probe's ``repeats``); None: the run's one value


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def serving_replicates(*, cycle: Cycle, cluster: Cluster) -> list[ServingReplicate]:
    """One replicate per sweep of each serving_goodput finding (run) of the cluster in the cycle."""
    out = []
    findings = Finding.objects.filter(
        run__cycle=cycle, run__cluster=cluster, probe_id=SERVING_PROBE, metric=SERVING_METRIC,
    ).order_by("id")
    for f in findings:
        ev = f.evidence if isinstance(f.evidence, dict) else {}
        if f.outcome in NOT_A_MEASUREMENT and not (ev.get("in_range") is False and ev.get("frontier")):
            continue  # measured nothing; a sweep that measured points but missed the target is out of range
        if ev.get("prompt_dependent") is False:
            continue  # canned or cached completions: tokens, but no inference to price
        common = {
            "finding_id": f.pk, "run_id": f.run_id, "error_rate": _num(ev.get("error_rate")),
            "accelerators": _num(ev.get("accelerators")),
            "target_interactivity": _num(ev.get("target_interactivity_tok_s_per_user")),
        }
        sweeps = [s for s in ev.get("sweeps") or [] if isinstance(s, dict)]
        if sweeps:
            for i, s in enumerate(sweeps):
                value, goodput = _num(s.get("throughput_at_target")), _num(s.get("goodput"))
                sweep = s.get("sweep")
                out.append(ServingReplicate(
                    **common, throughput=value, goodput=goodput, in_range=value is not None and goodput is not None,
                    sweep=sweep if isinstance(sweep, int) and not isinstance(sweep, bool) else i,
                ))
            continue
        out.append(ServingReplicate(
            **common, throughput=f.value, goodput=_num(ev.get("goodput")),
            in_range=bool(ev.get("in_range", f.value is not None)) and f.value is not None,
        ))
    return out


# --- price --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Price:
    effective: float | None
    components: tuple[engine.PriceComponent, ...] = ()
    owned: float | None = None
    owned_components: tuple[engine.PriceComponent, ...] = ()
    reason: str = ""


def price_for(*, cycle: Cycle, cluster: Cluster, row: ClusterPrice | None = None) -> Price:
    """The cluster's effective price in the cycle (and the owned basis), or why it is unknown."""
    if row is None:
        row = ClusterPrice.objects.filter(cycle=cycle, cluster=cluster).select_related("cluster").first()
    if row is None:
        return Price(effective=None, reason="no price recorded for this cluster in this cycle")
    listed = row.components()
    if listed[0]["amount"] is None:
        return Price(effective=None, reason="no base price: the row names none and the cluster has no list price")
    parts = tuple(engine.PriceComponent(p["name"], float(p["amount"]), p["source"]) for p in listed)
    try:
        effective = engine.effective_price(parts)
    except engine.CostInputError as exc:
        return Price(effective=None, components=parts, reason=f"the price cannot be used: {exc}")
    owned, owned_parts = None, ()
    if row.has_owned_basis:
        basis = engine.OwnedBasis(
            capex_per_gpu=float(row.capex_per_gpu), discount_rate=float(row.discount_rate or 0),
            life_years=float(row.life_years or 0), power_per_gpu_hour=float(row.power_per_gpu_hour),
            space_per_gpu_hour=float(row.space_per_gpu_hour), staff_per_gpu_hour=float(row.staff_per_gpu_hour),
            hours_per_year=float(row.hours_per_year), source=row.owned_source,
        )
        try:
            owned_parts = engine.owned_components(basis)
            owned = sum(c.amount_per_gpu_hour for c in owned_parts)
        except engine.CostInputError:
            owned, owned_parts = None, ()
    return Price(effective=effective, components=parts, owned=owned, owned_components=owned_parts)


# --- the cycle ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClusterCost:
    provider_slug: str
    provider_name: str
    cluster_id: int
    cluster_name: str
    gpu_count: int
    price: Price
    replicates: tuple[ServingReplicate, ...]
    availability: Availability
    throughput: float | None = None  # mean over in-range replicates
    goodput: float | None = None
    estimate: engine.CostEstimate | None = None  # on the effective price
    owned_estimate: engine.CostEstimate | None = None  # on the owned basis
    inferencex: float | None = None  # P / (T * 3600 / 1e6): the ideal-day figure, for comparison
    reason: str = ""  # why the cost is unknown ("" when known)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def known(self) -> bool:
        return self.estimate is not None


def cycle_seed(cycle: Cycle) -> int:
    """A seed fixed by the cycle alone (its slug), so re-reading a cycle gives the same intervals."""
    return int.from_bytes(hashlib.sha256(f"costs:{cycle.slug}".encode()).digest()[:4], "big")


def _cluster_cost(cycle: Cycle, cluster: Cluster, row: ClusterPrice | None, seed: int, bootstrap: int) -> ClusterCost:
    price = price_for(cycle=cycle, cluster=cluster, row=row)
    reps = tuple(serving_replicates(cycle=cycle, cluster=cluster))
    avail = availability(cycle=cycle, cluster=cluster)
    usable = [r for r in reps if r.in_range and r.throughput is not None and r.goodput is not None]
    base = {
        "provider_slug": cluster.provider.slug, "provider_name": cluster.provider.name, "cluster_id": cluster.pk,
        "cluster_name": cluster.name, "gpu_count": cluster.gpu_count, "price": price, "replicates": reps,
        "availability": avail,
    }
    if usable:
        base["throughput"] = sum(r.throughput for r in usable) / len(usable)  # type: ignore[misc]
        base["goodput"] = sum(r.goodput for r in usable) / len(usable)  # type: ignore[misc]
    notes = []
    if len(usable) < len(reps):
        notes.append(f"{len(reps) - len(usable)} of {len(reps)} serving replicates had the target outside the "
                     "measured range (never extrapolated) or no goodput")
    reason = ""
    if not reps:
        reason = "no serving_goodput measurement in this cycle"
    elif not usable:
        reason = "the target interactivity was outside the measured range in every serving replicate"
    elif avail.value is None:
        reason = f"availability unknown: {avail.reason}"
    elif price.effective is None and price.owned is None:
        reason = price.reason
    if reason:
        return ClusterCost(**base, reason=reason, notes=tuple(notes))
    pairs = [engine.Replicate(r.throughput, r.goodput) for r in usable]  # type: ignore[arg-type]
    own_seed = seed ^ cluster.pk
    estimate = owned = None
    try:
        if price.effective is not None:
            estimate = engine.cost_estimate(price.effective, pairs, avail.samples, seed=own_seed, bootstrap=bootstrap)
        if price.owned is not None:
            owned = engine.cost_estimate(price.owned, pairs, avail.samples, seed=own_seed, bootstrap=bootstrap)
    except engine.CostInputError as exc:
        return ClusterCost(**base, reason=str(exc), notes=tuple(notes))
    if estimate is None:  # an owner with no rental price: the owned basis is the headline
        estimate, owned = owned, None
        notes.append("no rental price: the cost is on the owned basis")
    inferencex = None
    if price.effective is not None:
        inferencex = engine.inferencex_cost_per_mtok(price.effective, base["throughput"])
    return ClusterCost(**base, estimate=estimate, owned_estimate=owned, inferencex=inferencex, notes=tuple(notes))


def cycle_costs(cycle: Cycle, *, seed: int | None = None,
                bootstrap: int = engine.DEFAULT_BOOTSTRAP) -> list[ClusterCost]:
    """Every cluster of the cycle's peer set: P, T/g/A replicates, cost per useful Mtok or why unknown.

    Ordered by cost (known first, cheapest first), then provider and cluster name.
    """
    seed = cycle_seed(cycle) if seed is None else seed
    clusters = list(Cluster.objects.filter(provider__in=cycle.providers.all()).select_related("provider"))
    rows = {p.cluster_id: p for p in ClusterPrice.objects.filter(cycle=cycle).select_related("cluster")}
    out = [_cluster_cost(cycle, c, rows.get(c.pk), seed, bootstrap) for c in clusters]
    return sorted(out, key=lambda c: (c.estimate is None, c.estimate.point if c.estimate else 0.0,
                                      c.provider_name, c.cluster_name))


def provider_costs(costs: Sequence[ClusterCost]) -> dict[str, float | None]:
    """Per provider, its cheapest known cluster's cost (None when none is known)."""
    best: dict[str, float | None] = {}
    for c in costs:
        value = c.estimate.point if c.estimate else None
        current = best.get(c.provider_slug)
        if value is not None and (current is None or value < current):
            best[c.provider_slug] = value
        else:
            best.setdefault(c.provider_slug, None)
    return best


def cost_standings(cycle: Cycle, *, history: int = HISTORY_CYCLES,
                   current: Sequence[ClusterCost] | None = None) -> dict[str, list[engine.Standing]]:
    """Each provider's cost and rank among peers over this cycle and up to ``history`` earlier ones.

    Earlier cycles are those ending before this one starts that share a provider with it, oldest
    first; each is read with ``cycle_costs`` (its own seed), so a rank there is among its own peers.
    """
    providers = list(cycle.providers.all())
    earlier = list(
        Cycle.objects.filter(period_end__lt=cycle.period_start, providers__in=providers)
        .distinct().order_by("-period_end", "slug")[:history]
    )[::-1]
    series = [engine.CycleCosts(c.slug, provider_costs(cycle_costs(c, bootstrap=200))) for c in earlier]
    series.append(engine.CycleCosts(cycle.slug, provider_costs(current if current is not None else cycle_costs(cycle))))
    mine = {p.slug for p in providers}
    return {slug: rows for slug, rows in engine.standings(series).items() if slug in mine}


__all__ = [
    "Availability", "AvailabilitySlot", "ClusterCost", "Price", "ServingReplicate", "availability",
    "cost_standings", "cycle_costs", "cycle_seed", "price_for", "provider_costs", "serving_replicates",
]
