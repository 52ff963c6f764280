"""Reads of the grades app: definitions, the evidence a grade reads, grade sheets, price indexes.

The evidence a grade checks is gathered here, per cluster and cycle, into the pure inputs of
``grades.eligibility``: the provider's tier and criterion results from the cycle's score
snapshot (``ratings``), the cluster's probe metrics (through ``probes.selectors``, restated on
the real-world scale the rubric's anchors use, as the engine reads them), its declared facts
(``providers.Cluster``) and its cost figures (``costs``, see :func:`cluster_costs`).

:func:`grade_report_section` is the one entry point the reports app calls: the grade sheet, the
index history and the tracking figures of a cycle, as plain JSON-able data frozen into the
published report.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import QuerySet

from costs.selectors import cycle_costs
from grades import tracking as trk
from grades.eligibility import (
    NEAR_MISS_MAX,
    Check,
    ClusterEvidence,
    CostEvidence,
    CriterionEvidence,
    Eligibility,
    Grade,
    MetricEvidence,
    all_requirements,
    evaluate,
)
from grades.models import GradeDefinition, PriceObservation
from grades.spec import GradeDiff, GradeFormatError, Vocabulary, diff_grades, parse_grade
from probes.selectors import findings_for_provider
from probes.thresholds import definitions as probe_definitions
from probes.thresholds import real_scale_value
from providers.models import Cluster, Cycle
from ratings.models import ScoreSnapshot, TierAssignment
from rubric.models import Criterion, RubricVersion
from rubric.versioned import DocumentNotFound, document_get
from rubric.yaml_kit import Problem

SCHEMA = "opgrade.grades/1"
MEASURED = ("pass", "warn", "fail", "provider_error")
DECIMALS = 6


class GradeNotFound(DocumentNotFound):
    """No grade definition answers to the given reference."""


# --------------------------------------------------------------------------- definitions
def grade_definition_list() -> QuerySet[GradeDefinition]:
    return GradeDefinition.objects.order_by("name", "version")


def grade_definition_get(*, ref: str | int) -> GradeDefinition:
    """By ``NAME@VERSION`` or numeric id."""
    return document_get(GradeDefinition, ref=ref, not_found=GradeNotFound)


def grade_definition_spec(*, grade: GradeDefinition) -> Grade:
    return parse_grade(grade.canonical, filename=grade.label)


def grade_definition_export(*, grade: GradeDefinition) -> str:
    """The canonical YAML, byte for byte as stored (and as fingerprinted at freeze)."""
    return grade.canonical


def grade_definition_diff(*, a: GradeDefinition, b: GradeDefinition) -> GradeDiff:
    return diff_grades(grade_definition_spec(grade=a), grade_definition_spec(grade=b))


def grades_current() -> list[GradeDefinition]:
    """The newest frozen version of each grade name (the grades a cycle's sheet lists)."""
    latest: dict[str, GradeDefinition] = {}
    for row in GradeDefinition.objects.filter(status=GradeDefinition.Status.FROZEN).order_by("name", "frozen_at", "pk"):
        latest[row.name] = row
    return [latest[name] for name in sorted(latest)]


def grade_vocabulary(*, rubric_label: str, filename: str = "<grade>") -> Vocabulary:
    """What a grade reading ``rubric_label`` may name: its criteria and gates, the probe catalog's metrics."""
    name, _, version = rubric_label.partition("@")
    rubric = RubricVersion.objects.filter(name=name, version=version).first()
    if rubric is None:
        raise GradeFormatError([Problem(filename, None, "rubric", f"no rubric version {rubric_label} is loaded")])
    rows = Criterion.objects.filter(rubric_version=rubric).values_list("key", "is_gate")
    metrics = {
        f"{probe}:{metric}": str((spec or {}).get("unit", ""))
        for probe, definition in probe_definitions().items()
        for metric, spec in ((definition or {}).get("metrics") or {}).items() if metric
    }
    return Vocabulary(rubric=rubric_label, criteria=frozenset(k for k, _ in rows),
                      gates=frozenset(k for k, gate in rows if gate), metrics=metrics)


# --------------------------------------------------------------------------- evidence
def cycle_snapshot_latest(*, cycle: Cycle) -> ScoreSnapshot | None:
    return ScoreSnapshot.objects.filter(cycle=cycle).order_by("-created_at", "-pk").first()


def cluster_costs(*, cycle: Cycle) -> dict[int, dict[str, CostEvidence]]:
    """Cost figures per cluster id from ``costs.selectors.cycle_costs``: the cost per useful Mtok
    (point and interval, or why it is unknown) and the measured availability."""
    return dict(_cost_items(cycle_costs(cycle)))


def _cost_items(result: Iterable[Any]) -> Iterable[tuple[int, dict[str, CostEvidence]]]:
    """``costs.selectors.ClusterCost`` rows as the figures a grade reads (an unbounded upper end is inf)."""
    for row in result:
        estimate = getattr(row, "estimate", None)
        if estimate is not None:
            high = _float(getattr(estimate, "high", None))
            cost = CostEvidence(point=_float(estimate.point), low=_float(getattr(estimate, "low", None)),
                                high=math.inf if high is None else high)
        else:
            cost = CostEvidence(point=None, reason=str(getattr(row, "reason", "") or "unknown"))
        figures = {"cost_per_useful_mtok": cost}
        avail = getattr(row, "availability", None)
        value = _float(getattr(avail, "value", None)) if avail is not None else None
        figures["availability"] = CostEvidence(point=value, reason=str(getattr(avail, "reason", "") or "not measured"))
        yield int(row.cluster_id), figures


def _float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _criteria(assignment: TierAssignment | None) -> dict[str, CriterionEvidence]:
    out: dict[str, CriterionEvidence] = {}
    for row in (assignment.criteria if assignment is not None else None) or ():
        status = str(row.get("status") or "missing")
        kinds = list(row.get("kinds") or [])
        probe = next((k for k in kinds if k.get("kind") == "probe"), kinds[0] if kinds else None)
        value = _float(probe.get("value")) if probe is not None and status == "measured" else None
        gate = None
        if row.get("is_gate") and status in ("measured", "declined"):
            gate = not row.get("gate_failed")
        out[str(row["key"])] = CriterionEvidence(value=value, gate_passed=gate, status=status)
    return out


def _metrics(cycle: Cycle, provider: Any) -> dict[int, dict[str, MetricEvidence]]:
    """Per cluster: each probe metric's median over findings with a value, on the real-world scale."""
    values: dict[tuple[int, str], list[float]] = defaultdict(list)
    notes: dict[tuple[int, str], set[str]] = defaultdict(set)
    units: dict[tuple[int, str], str] = {}
    rows = findings_for_provider(provider=provider, cycle=cycle).values_list(
        "run__cluster_id", "probe_id", "metric", "outcome", "value", "unit", "threshold_ref")
    for cluster_id, probe, metric, outcome, value, unit, ref in rows:
        if not metric:
            continue
        key = (cluster_id, f"{probe}:{metric}")
        units[key] = unit or ""
        if outcome in MEASURED and value is not None:
            values[key].append(float(real_scale_value(probe, metric, value, ref or "")))  # type: ignore[arg-type]
            if (ref or "").startswith("scale="):
                notes[key].add(f"restated from {ref.removeprefix('scale=')} scale")
        else:
            notes[key].add(str(outcome))
    out: dict[int, dict[str, MetricEvidence]] = defaultdict(dict)
    for key in units:
        cluster_id, name = key
        vals = values.get(key) or []
        note = ", ".join(sorted(notes.get(key) or ()))
        censored = next((o for o in ("timeout", "declined") if o in (notes.get(key) or ())), "")
        out[cluster_id][name] = MetricEvidence(
            value=statistics.median(vals) if vals else None, n=len(vals), unit=units[key],
            note=note if vals else f"no value ({note or 'no finding'})", censored="" if vals else censored)
    return out


def cluster_label(cluster: Cluster) -> str:
    return f"{cluster.provider.slug}/{cluster.name}"


def cycle_evidence(*, cycle: Cycle, snapshot: ScoreSnapshot | None) -> list[tuple[Cluster, ClusterEvidence]]:
    """The evidence of every cluster of the cycle's providers, in provider and cluster order."""
    assignments = {}
    if snapshot is not None:
        assignments = {a.provider_id: a for a in TierAssignment.objects.filter(snapshot=snapshot)}
    costs = cluster_costs(cycle=cycle)
    rubric = f"{cycle.rubric_version.name}@{cycle.rubric_version.version}"
    out = []
    providers = cycle.providers.order_by("slug")
    for provider in providers:
        assignment = assignments.get(provider.pk)
        tier = assignment.tier if assignment is not None and assignment.tier != "not_rated" else None
        criteria = _criteria(assignment)
        metrics = _metrics(cycle, provider)
        for cluster in Cluster.objects.filter(provider=provider).select_related("provider").order_by("name"):
            facts: dict[str, str | float | bool] = {
                "gpu_model": (cluster.gpu_model or "").strip() or "none", "orchestrator": cluster.orchestrator,
            }
            out.append((cluster, ClusterEvidence(
                cluster=cluster_label(cluster), provider=provider.slug, rubric=rubric, tier=tier, facts=facts,
                criteria=criteria, metrics=metrics.get(cluster.pk, {}), costs=costs.get(cluster.pk, {}),
            )))
    return out


def grade_eligibility(*, cycle: Cycle, snapshot: ScoreSnapshot | None = None,
                      grades: list[GradeDefinition] | None = None) -> list[tuple[GradeDefinition, Grade, list[Eligibility]]]:
    """Every current grade checked against every cluster of the cycle."""
    snapshot = snapshot if snapshot is not None else cycle_snapshot_latest(cycle=cycle)
    evidence = cycle_evidence(cycle=cycle, snapshot=snapshot)
    out = []
    for row in grades if grades is not None else grades_current():
        grade = grade_definition_spec(grade=row)
        out.append((row, grade, [evaluate(grade, ev) for _cluster, ev in evidence]))
    return out


# --------------------------------------------------------------------------- prices
def price_observation_list() -> QuerySet[PriceObservation]:
    return PriceObservation.objects.select_related("grade", "cluster__provider", "recorded_by")


def _period(day: dt.date) -> str:
    return trk.period_of(day.year, day.month)


def grade_observations(*, grade: GradeDefinition, until: dt.date | None = None) -> dict[str, list[trk.Observation]]:
    """The grade's observations per term (pure tracking inputs), up to ``until`` if given."""
    rows = PriceObservation.objects.filter(grade=grade)
    if until is not None:
        rows = rows.filter(observed_on__lte=until)
    out: dict[str, list[trk.Observation]] = defaultdict(list)
    for term, day, price, provider, cluster in rows.order_by("observed_on", "pk").values_list(
            "term", "observed_on", "price_per_gpu_hour", "cluster__provider__slug", "cluster__name"):
        out[term].append(trk.Observation(provider=provider, period=_period(day), price=float(price),
                                         cluster=f"{provider}/{cluster}"))
    return dict(sorted(out.items()))


def grade_index_period(*, grade: GradeDefinition, term: str, period: str) -> trk.IndexPoint:
    """The index of one grade, term and period (``YYYY-MM``); NoObservations when there are none."""
    prices = [o.price for o in grade_observations(grade=grade).get(term, []) if o.period == period]
    return trk.index_point(period, prices)


# --------------------------------------------------------------------------- report section
def _n(value: float | None) -> float | None:
    return None if value is None else round(float(value), DECIMALS)


def _value(value: Any) -> Any:
    return _n(value) if isinstance(value, float) else value


def _check_doc(check: Check) -> dict[str, Any]:
    r = check.requirement
    return {
        "requirement": r.key, "title": r.title, "kind": r.kind, "reads": r.reads, "ref": r.ref,
        "threshold": _value(r.threshold), "unit": r.unit, "verdict": check.verdict.value,
        "evidence": check.evidence, "value": _value(check.value), "gap": _n(check.gap), "gap_text": check.gap_text,
    }


def _grade_doc(row: GradeDefinition, grade: Grade) -> dict[str, Any]:
    hw, sc = grade.hardware, grade.scope
    return {
        "name": grade.name, "version": grade.version, "label": grade.label, "title": grade.title,
        "description": grade.description, "fingerprint": row.fingerprint, "rubric": grade.rubric,
        "hardware": {"gpu_model": hw.gpu_model, "gpus_per_node": hw.gpus_per_node, "interconnect": hw.interconnect,
                     "min_gpu_memory_gb": _n(hw.min_gpu_memory_gb)},
        "scope": {"orchestrator": sc.orchestrator, "storage_included": sc.storage_included},
        "contract": {"term": grade.contract.term, "support": grade.contract.support},
        "requirements": [
            {"key": r.key, "title": r.title, "kind": r.kind, "reads": r.reads, "ref": r.ref,
             "comparison": r.comparison, "threshold": _value(r.threshold), "unit": r.unit}
            for r in all_requirements(grade)
        ],
    }


def _sheet_doc(grade: Grade, results: list[Eligibility], names: Mapping[str, str]) -> dict[str, Any]:
    clusters = []
    for e in results:
        status = "qualifies" if e.qualifies else "near_miss" if e.near_miss else "does_not_qualify"
        clusters.append({
            "cluster": e.cluster, "provider": e.provider, "provider_name": names.get(e.provider, e.provider),
            "status": status, "checks": [_check_doc(c) for c in e.checks],
            "shortfalls": [_check_doc(c) for c in e.shortfalls],
        })
    return {
        "grade": grade.label, "title": grade.title,
        "qualifying": [c["cluster"] for c in clusters if c["status"] == "qualifies"],
        "near_misses": [c["cluster"] for c in clusters if c["status"] == "near_miss"],
        "clusters": clusters,
    }


def _index_doc(row: GradeDefinition, until: dt.date) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    series, tracked = [], []
    for term, observations in grade_observations(grade=row, until=until).items():
        points, trackings = trk.tracking_all(observations)
        series.append({
            "grade": row.label, "term": term,
            "points": [{"period": p.period, "median": _n(p.median), "count": p.count, "min": _n(p.low),
                        "max": _n(p.high), "p25": _n(p.p25), "p75": _n(p.p75), "thin": p.thin} for p in points],
        })
        tracked += [{
            "grade": row.label, "term": term, "provider": t.provider, "periods": t.n_periods,
            "correlation": {"value": _n(t.correlation), "n": t.n_pairs},
            "beta": {"value": _n(t.beta), "n": t.n_pairs},
            "tracking_error": {"value": _n(t.tracking_error), "n": t.n_pairs},
            "poor_hedge": t.poor_hedge, "reason": t.reason,
        } for t in trackings]
    return series, tracked


def grade_report_section(*, snapshot: ScoreSnapshot) -> dict[str, Any]:
    """The grades part of a cycle's report document (frozen with it when published)."""
    cycle = snapshot.cycle
    names = dict(cycle.providers.values_list("slug", "name"))
    definitions, sheets, index, tracking_rows = [], [], [], []
    for row, grade, results in grade_eligibility(cycle=cycle, snapshot=snapshot):
        definitions.append(_grade_doc(row, grade))
        sheets.append(_sheet_doc(grade, results, names))
        series, tracked = _index_doc(row, cycle.period_end)
        index += series
        tracking_rows += [{**t, "provider_name": names.get(t["provider"], t["provider"])} for t in tracked]
    return {
        "schema": SCHEMA,
        "parameters": {
            "near_miss_max": NEAR_MISS_MAX, "index_min_count": trk.MIN_COUNT, "tracking_min_pairs": trk.MIN_PAIRS,
            "poor_correlation": trk.POOR_CORRELATION, "poor_tracking_error": trk.POOR_TRACKING_ERROR,
            "period": "calendar month", "prices_until": cycle.period_end.isoformat(),
        },
        "definitions": definitions, "sheets": sheets, "index": index, "tracking": tracking_rows,
    }
