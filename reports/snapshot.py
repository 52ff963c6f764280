"""From a score snapshot to a report document: the one place that reads rows for a report.

``snapshot_report_input`` gathers everything the pure builder (``reports.context``) needs:
the snapshot's tier assignments (tier, probabilities, CI, areas, criteria, gate caps), the
rubric version's definitions, the providers' names, the earlier published reports (for
movement and history) and the approved overrides (``ratings.selectors``). reports sits
above ratings, so it imports ratings' models and selectors directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ratings.models import TierAssignment
from ratings.selectors import overrides_approved_for_cycle
from reports import context as ctx
from reports.methodology import METHODOLOGY_TEXT
from reports.selectors import report_history_before

RUBRIC_PARAMETERS = (
    "coverage_floor", "area_coverage_floor", "bootstrap_size", "boundary_confidence", "borderline_threshold",
    "hysteresis_threshold", "feedback_prior_strength", "tier_floor_platinum", "tier_floor_gold",
    "tier_floor_silver", "tier_floor_bronze", "feedback_prior_mean", "boundary_min_gap",
)


def rubric_input(rubric_version: Any, *, fingerprint: str = "") -> ctx.RubricInput:
    areas = list(rubric_version.areas.order_by("position", "key"))
    criteria = list(rubric_version.criteria.select_related("area").order_by("area__position", "position", "key"))
    return ctx.RubricInput(
        name=rubric_version.name, version=rubric_version.version,
        fingerprint=rubric_version.fingerprint or fingerprint, title=rubric_version.title,
        description=rubric_version.description,
        areas=tuple(ctx.AreaDefinition(key=a.key, title=a.title, weight=a.weight, description=a.description)
                    for a in areas),
        criteria=tuple(
            ctx.CriterionDefinition(
                key=c.key, title=c.title, area_key=c.area.key, weight=c.weight, description=c.description,
                unit=c.unit, direction=c.direction, anchor_best=c.anchor_best, anchor_worst=c.anchor_worst,
                is_gate=c.is_gate, gate_cap_tier=c.gate_cap_tier, evidence_kinds=tuple(c.evidence_kinds or ()),
            )
            for c in criteria
        ),
        parameters={name: float(getattr(rubric_version, name)) for name in RUBRIC_PARAMETERS
                    if getattr(rubric_version, name, None) is not None},
    )


def _criterion(row: Mapping[str, Any]) -> ctx.CriterionResult:
    """One engine criterion row: its score, its headline value (probe first) and evidence counts."""
    kinds = list(row.get("kinds") or [])
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[str(kind["kind"])] = counts.get(str(kind["kind"]), 0) + int(kind.get("n") or 0)
    order = {k: i for i, k in enumerate(ctx.EVIDENCE_KINDS)}
    headline = min(kinds, key=lambda k: order.get(str(k["kind"]), 99)) if kinds else None
    measured = row.get("status") == "measured" and row.get("score") is not None
    return ctx.CriterionResult(
        key=str(row["key"]),
        value=float(headline["value"]) if headline is not None and measured else None,
        normalised=float(row["score"]) if measured else None,
        evidence_counts=counts,
        gate_passed=(not row.get("gate_failed")) if row.get("is_gate") and measured else None,
    )


def _provider(assignment: Any) -> ctx.ProviderResult:
    probabilities = assignment.probabilities
    if isinstance(probabilities, list):  # [(tier, p), ...] as the engine emits it
        probabilities = {str(t): float(p) for t, p in probabilities}
    tier = None if assignment.tier == ctx.NOT_RATED else assignment.tier
    return ctx.ProviderResult(
        slug=assignment.provider.slug, name=assignment.provider.name, tier=tier,
        tier_probabilities=probabilities or {},
        # Not rated: no composite of any kind in the report, so nothing reads as a score
        ci_low=assignment.ci_low, ci_high=assignment.ci_high, composite=assignment.composite if tier else None,
        pessimistic=assignment.composite_pessimistic if tier else None, coverage=assignment.coverage,
        area_scores={str(a["key"]): (a.get("score") if a.get("measured", True) else None) for a in assignment.areas},
        gate_caps=tuple(str(g["criterion"]) for g in assignment.gate_caps or ()),
        borderline=assignment.borderline,
        outlook="" if assignment.outlook in ("", "stable") else assignment.outlook,
        criteria=tuple(_criterion(row) for row in assignment.criteria or ()),
        critical_overrides=tuple(
            sorted(f.split(":", 1)[1] for f in assignment.flags or () if f.startswith("critical_overridden:"))
        ),
    )


def published_history(cycle: Any) -> tuple[ctx.PublishedCycle, ...]:
    return tuple(
        ctx.PublishedCycle(
            cycle_slug=r.content["cycle"]["slug"], cycle_name=r.content["cycle"]["name"],
            period_end=r.content["cycle"]["period_end"], content_hash=r.content_hash,
            tiers={p["slug"]: (None if p["tier"] == ctx.NOT_RATED else p["tier"]) for p in r.content["providers"]},
        )
        for r in report_history_before(cycle=cycle)
    )


def _overrides(cycle: Any, scores: Mapping[tuple[str, str], float | None]) -> tuple[ctx.OverrideEntry, ...]:
    """Approved overrides: criterion, provider, from -> to, justification, publishers."""
    return tuple(
        ctx.OverrideEntry(
            provider_slug=o.provider_slug, criterion_key=o.criterion_key,
            from_value=scores.get((o.provider_slug, o.criterion_key)), to_value=o.value,
            justification=o.justification, proposer=o.proposed_by, approver=o.approved_by,
            reason=o.reason, second_approver=o.second_approved_by, evidence_finding=o.evidence_finding,
        )
        for o in overrides_approved_for_cycle(cycle=cycle)
    )


def snapshot_report_input(snapshot: Any) -> ctx.ReportInput:
    """Everything the document builder needs for ``snapshot`` (a ratings.ScoreSnapshot)."""
    cycle = snapshot.cycle
    assignments: Iterable[Any] = TierAssignment.objects.filter(snapshot=snapshot).select_related("provider")
    providers = tuple(_provider(a) for a in assignments)
    result = snapshot.result if isinstance(snapshot.result, Mapping) else {}
    scores = {(p.slug, c.key): c.normalised for p in providers for c in p.criteria}
    return ctx.ReportInput(
        cycle_slug=cycle.slug, cycle_name=cycle.name,
        period_start=cycle.period_start.isoformat(), period_end=cycle.period_end.isoformat(),
        rubric=rubric_input(snapshot.rubric_version, fingerprint=str(result.get("rubric_fingerprint", ""))),
        engine_version=snapshot.engine_version, seed=snapshot.seed, inputs_hash=snapshot.inputs_hash,
        snapshot_hash=snapshot.content_hash, providers=providers, overrides=_overrides(cycle, scores),
        history=published_history(cycle), methodology_text=METHODOLOGY_TEXT
        + (f"\n{snapshot.rubric_version.description}\n" if snapshot.rubric_version.description else ""),
    )
