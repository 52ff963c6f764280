"""Grade eligibility: which requirements of a grade one cluster meets in one cycle (pure).

A *grade* is a standard description of a compute service (hardware, service scope, operating
requirements, contract terms) so that a buyer knows which offerings are truly comparable. A
rating informs a grade; it is not one: a grade reads the cycle's evidence (the provider's tier,
its gate criteria, the cluster's probe metrics, its cost per useful Mtok) and checks each
requirement against it.

Every requirement gets a verdict: ``met``, ``missed`` or ``unknown``. Unknown never counts as
met (fail closed: a requirement whose evidence is missing, unmeasured or straddles the limit
does not qualify a cluster). A cluster *qualifies* when every requirement is met. A *near miss*
is a cluster that does not qualify although its hardware and scope match the grade and at most
``NEAR_MISS_MAX`` operating requirements are missed or unknown; each comes with how much it
missed by.

No Django, no clock, no app (import-linter's pure-cost contract); only the shared vocabulary
``rubric.spec`` (tier names and their order). Frozen dataclasses in, frozen dataclasses out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from rubric.spec import TIER_LABELS, TIERS

NEAR_MISS_MAX = 2  # operating requirements missed or unknown, at most, for a near miss


class Verdict(StrEnum):
    MET = "met"
    MISSED = "missed"
    UNKNOWN = "unknown"


# What a requirement reads: the provider's tier, a rubric criterion (its gate or its value), a
# probe metric measured on the cluster, a cost figure, or a declared fact of the cluster.
READS = ("tier", "criterion", "gate", "probe", "cost", "cluster")
# What a requirement is, in the words; each kind fixes how the threshold compares.
KINDS = (
    "hardware", "scope", "tier", "gate", "availability", "replacement_time", "provisioning_time",
    "cost_per_useful_mtok", "other_min", "other_max",
)
COMPARISONS = {  # kind -> how the evidence must relate to the threshold
    "hardware": "equals", "scope": "equals", "tier": "min_tier", "gate": "passes", "availability": "min",
    "replacement_time": "max", "provisioning_time": "max", "cost_per_useful_mtok": "max",
    "other_min": "min", "other_max": "max",
}
COST_FIGURES = ("cost_per_useful_mtok", "availability")  # figures of the costs app, per cluster
CLUSTER_FACTS = ("gpu_model", "gpus_per_node", "interconnect", "gpu_memory_gb", "orchestrator", "storage_included")


@dataclass(frozen=True)
class Requirement:
    """One requirement of a grade. ``ref`` names what it reads: a criterion key, a probe metric
    as ``probe_id:metric``, a cost figure or a cluster fact; empty for the tier."""

    key: str
    title: str
    kind: str
    reads: str
    ref: str
    threshold: float | str | bool
    unit: str = ""

    @property
    def comparison(self) -> str:
        if self.kind == "hardware" and self.ref in ("gpus_per_node", "gpu_memory_gb"):
            return "min"
        return COMPARISONS[self.kind]


@dataclass(frozen=True)
class Hardware:
    gpu_model: str  # "none" for a cluster without GPUs (the testbed)
    gpus_per_node: int | None = None
    interconnect: str = ""
    min_gpu_memory_gb: float | None = None


@dataclass(frozen=True)
class Scope:
    orchestrator: str  # slurm | kubernetes
    storage_included: bool | None = None


@dataclass(frozen=True)
class Contract:
    term: str
    support: str


@dataclass(frozen=True)
class Grade:
    name: str
    version: str
    title: str
    rubric: str  # NAME@VERSION of the rubric whose criteria it reads
    hardware: Hardware
    scope: Scope
    contract: Contract
    requirements: tuple[Requirement, ...]  # operating requirements, in file order
    description: str = ""

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"


def all_requirements(grade: Grade) -> tuple[Requirement, ...]:
    """Hardware and scope as requirements on the cluster's declared facts, then the operating ones."""
    hw, sc = grade.hardware, grade.scope
    out = [Requirement("gpu_model", "GPU model", "hardware", "cluster", "gpu_model", hw.gpu_model)]
    if hw.gpus_per_node is not None:
        out.append(Requirement("gpus_per_node", "GPUs per node", "hardware", "cluster", "gpus_per_node",
                               float(hw.gpus_per_node)))
    if hw.interconnect:
        out.append(Requirement("interconnect", "Interconnect class", "hardware", "cluster", "interconnect",
                               hw.interconnect))
    if hw.min_gpu_memory_gb is not None:
        out.append(Requirement("gpu_memory_gb", "GPU memory", "hardware", "cluster", "gpu_memory_gb",
                               float(hw.min_gpu_memory_gb), "GB"))
    out.append(Requirement("orchestrator", "Managed orchestrator", "scope", "cluster", "orchestrator", sc.orchestrator))
    if sc.storage_included is not None:
        out.append(Requirement("storage_included", "Storage included", "scope", "cluster", "storage_included",
                               sc.storage_included))
    return (*out, *grade.requirements)


# --------------------------------------------------------------------------- evidence
@dataclass(frozen=True)
class CriterionEvidence:
    value: float | None = None  # the criterion's headline value (real scale), None if unmeasured
    gate_passed: bool | None = None  # None: not a gate, or unmeasured
    status: str = "missing"  # the engine's status: measured, missing, declined, ...


@dataclass(frozen=True)
class MetricEvidence:
    value: float | None  # median over the cluster's findings with a value
    n: int  # findings with a value
    unit: str = ""
    note: str = ""  # why there is no value (declined, error, no finding), or how it was restated
    censored: str = ""  # no value, but the probe ran out of time or was declined: the worst value


@dataclass(frozen=True)
class CostEvidence:
    point: float | None
    low: float | None = None
    high: float | None = None
    reason: str = ""  # why it is unknown


@dataclass(frozen=True)
class ClusterEvidence:
    cluster: str  # a stable label: "provider-slug/cluster-name"
    provider: str  # provider slug
    rubric: str  # NAME@VERSION the cycle was rated on
    tier: str | None  # None: not rated in this cycle (or no snapshot)
    facts: Mapping[str, str | float | bool] = field(default_factory=dict)  # declared: gpu_model, orchestrator, ...
    criteria: Mapping[str, CriterionEvidence] = field(default_factory=dict)
    metrics: Mapping[str, MetricEvidence] = field(default_factory=dict)  # "probe_id:metric" -> evidence
    costs: Mapping[str, CostEvidence] = field(default_factory=dict)


# --------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class Check:
    requirement: Requirement
    verdict: Verdict
    evidence: str  # what was read, in words ("p95 1500 s over 3 findings")
    value: float | str | bool | None = None
    gap: float | None = None  # signed distance past the threshold (missed only), in the unit
    gap_text: str = ""  # "300 s over the 1200 s limit (+25%)", "2 tiers below Silver"


@dataclass(frozen=True)
class Eligibility:
    grade: str
    cluster: str
    provider: str
    checks: tuple[Check, ...]

    @property
    def qualifies(self) -> bool:
        return bool(self.checks) and all(c.verdict is Verdict.MET for c in self.checks)

    @property
    def shortfalls(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.verdict is not Verdict.MET)

    @property
    def near_miss(self) -> bool:
        """Hardware and scope match, and at most NEAR_MISS_MAX operating requirements fall short."""
        if self.qualifies:
            return False
        if any(c.requirement.kind in ("hardware", "scope") and c.verdict is not Verdict.MET for c in self.checks):
            return False
        return len(self.shortfalls) <= NEAR_MISS_MAX


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _with_unit(value: float, unit: str) -> str:
    return f"{_fmt(value)} {unit}".strip()


def _compare(req: Requirement, value: float, evidence: str) -> Check:
    limit = float(req.threshold)  # type: ignore[arg-type]
    if req.comparison == "min":
        ok, gap, word, bound = value >= limit, value - limit, "under", "minimum"
    else:
        ok, gap, word, bound = value <= limit, value - limit, "over", "limit"
    if ok:
        return Check(req, Verdict.MET, evidence, value)
    rel = f" ({gap / limit:+.0%})" if limit else ""
    text = f"{_with_unit(abs(gap), req.unit)} {word} the {_with_unit(limit, req.unit)} {bound}{rel}"
    return Check(req, Verdict.MISSED, evidence, value, gap, text)


def _tier(req: Requirement, ev: ClusterEvidence) -> Check:
    wanted = str(req.threshold)
    if ev.tier is None or ev.tier not in TIERS:
        return Check(req, Verdict.UNKNOWN, "not rated in this cycle")
    evidence = f"rated {TIER_LABELS[ev.tier]}"
    short = TIERS.index(ev.tier) - TIERS.index(wanted)
    if short <= 0:
        return Check(req, Verdict.MET, evidence, ev.tier)
    plural = "s" if short > 1 else ""
    return Check(req, Verdict.MISSED, evidence, ev.tier, float(short),
                 f"{short} tier{plural} below {TIER_LABELS[wanted]}")


def _gate(req: Requirement, ev: ClusterEvidence) -> Check:
    crit = ev.criteria.get(req.ref)
    if crit is None:
        return Check(req, Verdict.UNKNOWN, f"criterion {req.ref} has no result in this cycle")
    if crit.gate_passed is None:
        return Check(req, Verdict.UNKNOWN, f"gate {req.ref} not measured ({crit.status})")
    if crit.gate_passed:
        return Check(req, Verdict.MET, f"gate {req.ref} passed", True)
    return Check(req, Verdict.MISSED, f"gate {req.ref} failed", False, None, "gate failed")


def _criterion_value(req: Requirement, ev: ClusterEvidence) -> Check:
    crit = ev.criteria.get(req.ref)
    if crit is None or crit.value is None or not math.isfinite(crit.value):
        status = crit.status if crit is not None else "no result"
        return Check(req, Verdict.UNKNOWN, f"criterion {req.ref} not measured ({status})")
    return _compare(req, crit.value, f"criterion {req.ref} = {_with_unit(crit.value, req.unit)}")


def _metric(req: Requirement, ev: ClusterEvidence) -> Check:
    metric = ev.metrics.get(req.ref)
    if metric is not None and metric.value is None and metric.censored:
        # As in scoring, a timeout or a refusal is the worst value, never a gap in the evidence.
        why = {"timeout": "did not finish within the probe's deadline", "declined": "declined by the provider"}
        return Check(req, Verdict.MISSED, f"{req.ref}: {metric.censored} ({metric.note})", None, None,
                     why.get(metric.censored, metric.censored))
    if metric is None or metric.value is None or not math.isfinite(metric.value):
        note = metric.note if metric is not None and metric.note else "no finding on this cluster"
        return Check(req, Verdict.UNKNOWN, f"{req.ref}: {note}")
    unit = req.unit or metric.unit
    evidence = f"{req.ref} median {_with_unit(metric.value, unit)} over {metric.n} finding{'s' if metric.n != 1 else ''}"
    if metric.note:
        evidence += f" ({metric.note})"
    return _compare(req, metric.value, evidence)


def _cost(req: Requirement, ev: ClusterEvidence) -> Check:
    cost = ev.costs.get(req.ref)
    if cost is None or cost.point is None or not math.isfinite(cost.point):
        reason = cost.reason if cost is not None and cost.reason else "not measured in this cycle"
        return Check(req, Verdict.UNKNOWN, f"{req.ref}: {reason}")
    interval = ""
    if cost.low is not None and cost.high is not None:
        interval = f" [{_fmt(cost.low)}, {_fmt(cost.high)}]"
    evidence = f"{req.ref} {_with_unit(cost.point, req.unit)}{interval}"
    check = _compare(req, cost.point, evidence)
    # The point meets the limit but the interval reaches past it: not shown to be met.
    limit = float(req.threshold)  # type: ignore[arg-type]
    beyond = (cost.high is not None and cost.high > limit) if req.comparison == "max" else (
        cost.low is not None and cost.low < limit)
    if check.verdict is Verdict.MET and beyond:
        return Check(req, Verdict.UNKNOWN, evidence + "; the interval reaches past the limit", cost.point)
    return check


def _fact(req: Requirement, ev: ClusterEvidence) -> Check:
    if req.ref not in ev.facts:
        return Check(req, Verdict.UNKNOWN, f"{req.ref} not declared for this cluster")
    have = ev.facts[req.ref]
    if req.comparison == "min":
        if isinstance(have, bool) or not isinstance(have, int | float):
            return Check(req, Verdict.UNKNOWN, f"{req.ref} is not a number ({have!r})")
        return _compare(req, float(have), f"{req.ref} = {_with_unit(float(have), req.unit)}")
    want = req.threshold
    same = str(have).strip().lower() == want.strip().lower() if isinstance(want, str) else have == want
    evidence = f"{req.ref} is {have!r}"
    if same:
        return Check(req, Verdict.MET, evidence, have)
    return Check(req, Verdict.MISSED, evidence, have, None, f"is {have!r}, the grade needs {want!r}")


_READERS = {"tier": _tier, "gate": _gate, "criterion": _criterion_value, "probe": _metric, "cost": _cost,
            "cluster": _fact}


def check_requirement(req: Requirement, ev: ClusterEvidence, *, grade_rubric: str = "") -> Check:
    """The verdict on one requirement from one cluster's evidence."""
    # Criteria are read by key within one rubric family (a later version of the same rubric keeps
    # its keys; the diff says what changed). Another family's criteria are never taken for these.
    family = grade_rubric.partition("@")[0]
    if req.reads in ("gate", "criterion") and family and ev.rubric and ev.rubric.partition("@")[0] != family:
        return Check(req, Verdict.UNKNOWN,
                     f"the cycle is rated on {ev.rubric}; the grade reads criterion {req.ref} of {grade_rubric}")
    check = _READERS[req.reads](req, ev)
    if req.reads in ("gate", "criterion") and ev.rubric and ev.rubric != grade_rubric:
        return replace(check, evidence=f"{check.evidence} (read from {ev.rubric}; the grade names {grade_rubric})")
    return check


def evaluate(grade: Grade, evidence: ClusterEvidence) -> Eligibility:
    """Every requirement of ``grade`` (hardware, scope, operating) checked against one cluster."""
    checks = tuple(check_requirement(r, evidence, grade_rubric=grade.rubric) for r in all_requirements(grade))
    return Eligibility(grade=grade.label, cluster=evidence.cluster, provider=evidence.provider, checks=checks)
