"""Reads for ratings: one cycle's evidence gathered into the scoring engine's input, and snapshots.

``cycle_evidence_get`` is the only place that turns database rows into
``ratings.engine_types.ScoringInput``:

* the rubric: the cycle's frozen version, checked against its freeze fingerprint
  (``rubric.selectors.rubric_version_verify_fingerprint``) and converted to a
  ``RubricSpec`` that carries that stored fingerprint;
* probe evidence: the cycle's findings (``probes.selectors.findings_for_cycle``), bound to criteria by the
  rubric's probe bindings (criterion.probe_id == finding.probe_id and criterion.probe_metric
  == finding.metric, the empty metric meaning the pass/fail outcome); every finding of
  every cluster of the provider is one replicate;
* documentation reviews and customer feedback of the cycle; feedback given for an area
  goes to that area's customer-feedback criterion;
* approved (four-eyes) score overrides (``ScoreOverride``, decided in the reviews workflow)
  replace criterion scores; the reviews workflow's submitted blind reviews and
  reconciliations arrive as DocReview rows (written through ``doc_review_record``), so
  nothing is read twice;
* the critical-finding rule: a gate criterion failed by a critical finding keeps its cap
  under an override unless the override says the measurement was wrong, two publishers
  besides the proposer approved it, and it names every critical finding of the cell. Each
  override therefore reaches the engine with its ``reason``, its number of ``approvals``
  and the refs of the findings it ``disputes`` (``_approved_overrides``), and the engine
  (``CriterionOverride.lifts_critical``) decides: the rows alone never lift a cap;
* the previous tiers for hysteresis.

Every row carries the rubric version of the criterion it names, so evidence bound to another
version is refused by the engine (never silently mixed).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import QuerySet

from probes.selectors import findings_for_cycle, findings_for_provider
from providers.models import Cycle, Provider
from ratings.engine_types import (
    TIERS,
    AreaSpec,
    CriterionOverride,
    CriterionSpec,
    DocReviewScore,
    EvidenceKind,
    FeedbackResponse,
    Outcome,
    PreviousTier,
    ProbeObservation,
    RubricFingerprintError,
    RubricSpec,
    ScoringInput,
    ScoringInputError,
    ScoringParams,
    TierFloors,
)
from ratings.models import CustomerFeedback, DocReview, ScoreOverride, ScoreSnapshot, TierAssignment
from rubric.models import Area, Criterion, RubricVersion
from rubric.selectors import RubricFingerprintMismatch, rubric_version_verify_fingerprint


def cycle_default_seed(*, cycle: Cycle) -> int:
    """The seed used when none is given: derived from the cycle's slug, so reruns agree."""
    return int.from_bytes(hashlib.sha256(f"opgrade-cycle:{cycle.slug}".encode()).digest()[:7], "big")


def rubric_spec_get(*, rubric_version: RubricVersion) -> RubricSpec:
    """The engine's view of a frozen rubric version (refuses drafts and tampered versions)."""
    try:
        rubric_version_verify_fingerprint(rubric_version=rubric_version)
    except RubricFingerprintMismatch as exc:
        raise RubricFingerprintError(str(exc)) from exc
    v = rubric_version
    areas = Area.objects.filter(rubric_version=v).order_by("position", "key")
    criteria = Criterion.objects.filter(rubric_version=v).select_related("area").order_by("position", "key")
    return RubricSpec(
        id=str(v.pk),
        name=v.name,
        version=v.version,
        params=ScoringParams(
            coverage_floor=v.coverage_floor,
            area_coverage_floor=v.area_coverage_floor,
            bootstrap_size=v.bootstrap_size,
            boundary_confidence=v.boundary_confidence,
            borderline_threshold=v.borderline_threshold,
            hysteresis_threshold=v.hysteresis_threshold,
            feedback_prior_strength=v.feedback_prior_strength,
            feedback_prior_mean=v.feedback_prior_mean,
            boundary_min_gap=v.boundary_min_gap,
            tier_floors=TierFloors(
                platinum=v.tier_floor_platinum, gold=v.tier_floor_gold,
                silver=v.tier_floor_silver, bronze=v.tier_floor_bronze,
            ),
        ),
        areas=tuple(AreaSpec(key=a.key, weight=a.weight) for a in areas),
        criteria=tuple(
            CriterionSpec(
                key=c.key, area=c.area.key, weight=c.weight,
                evidence_kinds=tuple(EvidenceKind(k) for k in c.evidence_kinds),
                anchor_best=c.anchor_best, anchor_worst=c.anchor_worst, direction=c.direction,
                scale=c.scale, probe_id=c.probe_id, probe_metric=c.probe_metric, is_gate=c.is_gate,
                gate_cap_tier=c.gate_cap_tier, gate_threshold=c.gate_threshold,
            )
            for c in criteria
        ),
        fingerprint=v.fingerprint,  # as recorded at freeze, verified just above
    )


def _probe_observations(cycle: Cycle, rubric: RubricSpec) -> list[ProbeObservation]:
    bindings: dict[tuple[str, str], list[str]] = defaultdict(list)
    for c in rubric.criteria:
        if EvidenceKind.PROBE in c.evidence_kinds and c.probe_id:
            bindings[(c.probe_id, c.probe_metric)].append(c.key)
    out = []
    for f in findings_for_cycle(cycle=cycle):
        for key in bindings.get((f.probe_id, f.metric), ()):
            out.append(
                ProbeObservation(rubric.id, f.provider_slug, key, Outcome(f.outcome), f.value, f.critical, f.ref)
            )
    return out


def _doc_scores(cycle: Cycle) -> list[DocReviewScore]:
    rows = DocReview.objects.filter(cycle=cycle, superseded=False).values_list(
        "provider__slug", "criterion__key", "criterion__rubric_version_id", "reviewer_id", "score", "is_reconciled"
    )
    return [
        DocReviewScore(str(version), provider, key, f"user:{reviewer}", score, reconciled)
        for provider, key, version, reviewer, score, reconciled in rows.order_by("id")
    ]


def _feedback(cycle: Cycle) -> list[FeedbackResponse]:
    rows = CustomerFeedback.objects.filter(cycle=cycle).values_list(
        "provider__slug", "criterion__key", "criterion__rubric_version_id", "area_id", "area__key",
        "area__rubric_version_id", "rating", "source", "respondent_org_hash",
    )
    area_targets: dict[int, str] = {}
    out = []
    for provider, key, c_version, area_id, area_key, a_version, rating, source, org in rows.order_by("id"):
        version = c_version
        if key is None:  # rated for an area: the area's customer-feedback criterion takes it
            if area_id not in area_targets:
                candidates = [
                    c.key for c in Criterion.objects.filter(area_id=area_id)
                    if EvidenceKind.CUSTOMER_FEEDBACK in c.evidence_kinds
                ]
                if len(candidates) != 1:
                    raise ScoringInputError(
                        f"feedback for area {area_key!r} needs exactly one customer-feedback criterion "
                        f"in that area; found {len(candidates)}"
                    )
                area_targets[area_id] = candidates[0]
            key, version = area_targets[area_id], a_version
        out.append(FeedbackResponse(str(version), provider, key, f"{source}:{org}", rating))
    return out


def _approved_overrides(cycle: Cycle) -> list[CriterionOverride]:
    """Approved four-eyes overrides (``ScoreOverride``, proposed and decided in reviews).

    Only ``approved`` rows count (``confirming`` waits for its second approver). Each carries
    what the critical-finding rule needs: its reason, how many distinct publishers other than
    the proposer approved it (2 only when ``second_decided_by`` is set and differs from both;
    the database refuses anything else) and the refs of the critical findings it disputes, in
    the engine's "finding <id>" form. A plain override on a critical gate thus reaches the
    engine as what it is, and the engine keeps the cap.

    Reviews themselves arrive as DocReview rows: the reviews app writes one per submitted
    assignment and one per reconciliation (ratings.services.doc_review_record), so DocReview
    is the single source of doc-review evidence and nothing is read twice.
    """
    fields = ("provider__slug", "criterion__key", "criterion__rubric_version_id", "value", "reason",
              "proposed_by_id", "decided_by_id", "second_decided_by_id", "disputed_findings")
    out = []
    for provider, key, version, value, reason, proposer, first, second, disputed in ScoreOverride.objects.filter(
        cycle=cycle, status=ScoreOverride.Status.APPROVED
    ).values_list(*fields).order_by("id"):
        approvers = {u for u in (first, second) if u is not None and u != proposer}
        out.append(CriterionOverride(
            str(version), provider, key, float(value), reason=str(reason), approvals=len(approvers),
            disputes=tuple(f"finding {int(pk)}" for pk in (disputed or ())),
        ))
    return out


def gate_critical_finding_ids(*, cycle: Cycle, provider: Provider, criterion: Criterion) -> list[int]:
    """Ids of the critical findings that fail ``criterion``'s gate for ``provider`` in ``cycle``.

    The engine's binding (probe id and metric; gates with probe evidence only); empty for a
    criterion that is no gate. An override of a cell with any of these is held to the
    critical-finding rule (see the module docstring).
    """
    if not criterion.is_gate or EvidenceKind.PROBE not in criterion.evidence_kinds or not criterion.probe_id:
        return []
    return list(
        findings_for_provider(provider=provider, cycle=cycle)
        .filter(probe_id=criterion.probe_id, metric=criterion.probe_metric, critical=True)
        .order_by("id").values_list("id", flat=True)
    )


@dataclass(frozen=True)
class ApprovedOverride:
    """An approved override as the published report reads it (no model objects)."""

    criterion_key: str
    provider_slug: str
    value: float
    justification: str
    evidence: tuple[tuple[str, str], ...]
    proposed_by: str
    approved_by: str
    approved_at: str
    reason: str = "judgement"
    second_approved_by: str = ""  # measurement was wrong: the second approver
    evidence_finding: int | None = None  # measurement was wrong: the later finding that shows it
    disputed_findings: tuple[int, ...] = ()  # the critical findings it says were wrong


def overrides_approved_for_cycle(*, cycle: Cycle) -> list[ApprovedOverride]:
    """Approved overrides of a cycle, with who proposed and approved them, for the report."""
    rows = (
        ScoreOverride.objects.filter(cycle=cycle, status=ScoreOverride.Status.APPROVED)
        .select_related("provider", "criterion", "proposed_by", "decided_by", "second_decided_by")
        .order_by("provider__slug", "criterion__key")
    )
    return [
        ApprovedOverride(
            criterion_key=o.criterion.key, provider_slug=o.provider.slug, value=o.value,
            justification=o.justification,
            evidence=tuple((str(e.get("url", "")), str(e.get("quote", ""))) for e in o.evidence),
            proposed_by=o.proposed_by.get_username(), approved_by=o.decided_by.get_username(),  # type: ignore[union-attr]
            approved_at=o.decided_at.isoformat() if o.decided_at else "",
            reason=o.reason,
            second_approved_by=o.second_decided_by.get_username() if o.second_decided_by else "",
            evidence_finding=o.evidence_finding_id, disputed_findings=tuple(int(i) for i in o.disputed_findings or ()),
        )
        for o in rows
    ]


def previous_tiers_get(*, cycle: Cycle) -> list[PreviousTier]:
    """Tiers of the latest snapshot of the most recent earlier cycle under the same rubric line.

    "Same line" is the same rubric name and major version (the label before the first dot),
    as research/scoring.md asks: cross-major movement is not compared. The reports app, which
    owns publication, may pass the published tiers to ``cycle_scores_compute`` instead.
    """
    rv = cycle.rubric_version
    major = rv.version.split(".", 1)[0]
    earlier = (
        Cycle.objects.filter(period_end__lt=cycle.period_start, rubric_version__name=rv.name)
        .select_related("rubric_version")
        .order_by("-period_end", "-id")
    )
    for previous in earlier:
        if previous.rubric_version.version.split(".", 1)[0] != major:
            continue
        snapshot = ScoreSnapshot.objects.filter(cycle=previous).order_by("-created_at", "-id").first()
        if snapshot is None:
            continue
        peers = set(cycle.providers.values_list("slug", flat=True))
        return [
            PreviousTier(slug, tier)
            for slug, tier in snapshot.assignments.values_list("provider__slug", "tier")
            if tier in TIERS and slug in peers
        ]
    return []


def cycle_evidence_get(
    *, cycle: Cycle, seed: int, previous_tiers: list[PreviousTier] | None = None
) -> ScoringInput:
    """Everything the engine needs to score ``cycle``. Raises ScoringInputError on bad evidence."""
    rubric = rubric_spec_get(rubric_version=cycle.rubric_version)
    providers = tuple(cycle.providers.order_by("slug").values_list("slug", flat=True))
    return ScoringInput(
        rubric=rubric,
        providers=providers,
        seed=seed,
        probe_observations=tuple(_probe_observations(cycle, rubric)),
        doc_scores=tuple(_doc_scores(cycle)),
        feedback=tuple(_feedback(cycle)),
        previous_tiers=tuple(previous_tiers_get(cycle=cycle) if previous_tiers is None else previous_tiers),
        overrides=tuple(_approved_overrides(cycle)),
    )


def score_snapshot_list() -> QuerySet[ScoreSnapshot]:
    return ScoreSnapshot.objects.select_related("cycle", "rubric_version").order_by("-created_at", "-id")


def tier_assignment_list() -> QuerySet[TierAssignment]:
    return TierAssignment.objects.select_related("snapshot__cycle", "provider").order_by("snapshot_id", "provider__name")


PROVIDER_TIER_FIELDS = ("tier", "ci_low", "ci_high", "composite", "coverage", "borderline", "outlook")


def provider_tier_latest(*, provider: Provider, cycle: Cycle) -> list[dict[str, object]]:
    """The provider's tier in the cycle's latest score snapshot (summary fields only; [] if none)."""
    rows = TierAssignment.objects.filter(provider=provider, snapshot__cycle=cycle).order_by(
        "-snapshot__created_at", "-pk"
    )
    return list(rows.values(*PROVIDER_TIER_FIELDS)[:1])
