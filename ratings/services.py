"""Writes for ratings' scores and evidence: compute a cycle's snapshot, record reviews, feedback, overrides.

``cycle_scores_compute`` runs the pure engine (ratings.engine) over one cycle's evidence and
stores the result as an immutable ``ScoreSnapshot`` with one ``TierAssignment`` per provider.
Scoring happens before the transaction opens; the writes are one atomic block, so bad input
(``ScoringInputError``: another rubric version, an out-of-range score, NaN/inf, no providers,
a tampered rubric) writes nothing. The same evidence and seed give the same content hash, and
computing it again returns the snapshot already stored rather than a duplicate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from probes.selectors import findings_for_provider
from providers.models import Cycle, Provider
from ratings.engine import content_hash, result_to_dict, score_cycle
from ratings.engine_types import PreviousTier, ProviderResult, ScoringInputError
from ratings.models import (
    CustomerFeedback,
    DocReview,
    ScoreOverride,
    ScoreSnapshot,
    TierAssignment,
    respondent_org_hash,
    validate_citations,
)
from ratings.selectors import cycle_default_seed, cycle_evidence_get, gate_critical_finding_ids
from rubric.models import Area, Criterion


def _assignment(snapshot: ScoreSnapshot, provider: Provider, r: ProviderResult, data: dict[str, Any]) -> TierAssignment:
    return TierAssignment(
        snapshot=snapshot,
        provider=provider,
        tier=r.tier,
        tier_point=r.tier_point or "",
        previous_tier=r.previous_tier or "",
        hysteresis_held=r.hysteresis_held,
        probabilities=dict(data["probabilities"]),
        ci_low=data["ci_low"],
        ci_high=data["ci_high"],
        composite=data["composite"],
        # the engine gives a Not rated provider no composite at all; the column is not nullable
        composite_pessimistic=data["composite_pessimistic"] if data["composite_pessimistic"] is not None else 0.0,
        coverage=data["coverage"],
        borderline=r.borderline,
        outlook=r.outlook,
        floor_capped=r.floor_capped,
        gate_caps=data["gate_caps"],
        areas=data["areas"],
        criteria=data["criteria"],
        flags=data["flags"],
    )


def cycle_scores_compute(
    *, cycle: Cycle, seed: int | None = None, previous_tiers: list[PreviousTier] | None = None
) -> ScoreSnapshot:
    """Score ``cycle`` and store the snapshot (or return the identical one already stored).

    ``seed`` defaults to one derived from the cycle slug; ``previous_tiers`` defaults to the
    latest snapshot of the previous cycle under the same rubric line (see
    ``ratings.selectors.previous_tiers_get``). Raises ``ScoringInputError`` on bad input.
    """
    seed = cycle_default_seed(cycle=cycle) if seed is None else seed
    inp = cycle_evidence_get(cycle=cycle, seed=seed, previous_tiers=previous_tiers)
    result = score_cycle(inp)
    data = result_to_dict(result)
    digest = content_hash(result)
    with transaction.atomic():
        existing = ScoreSnapshot.objects.filter(cycle=cycle, content_hash=digest).first()
        if existing is not None:
            return existing
        snapshot = ScoreSnapshot.objects.create(
            cycle=cycle,
            rubric_version=cycle.rubric_version,
            engine_version=result.engine_version,
            seed=seed,
            bootstrap_size=result.bootstrap_size,
            inputs_hash=result.inputs_hash,
            content_hash=digest,
            result=data,
        )
        providers = {p.slug: p for p in cycle.providers.all()}
        TierAssignment.objects.bulk_create(
            [
                _assignment(snapshot, providers[r.provider], r, d)
                for r, d in zip(result.providers, data["providers"], strict=True)
            ]
        )
    return snapshot


def _check_unit(cycle: Cycle, provider: Provider, criterion_version_id: int) -> None:
    if criterion_version_id != cycle.rubric_version_id:
        raise ScoringInputError(
            f"criterion belongs to rubric version {criterion_version_id}, cycle {cycle.slug} uses "
            f"{cycle.rubric_version_id}; evidence never crosses rubric versions"
        )
    if not cycle.providers.filter(pk=provider.pk).exists():
        raise ScoringInputError(f"{provider.slug} is not in the peer set of cycle {cycle.slug}")


@transaction.atomic
def doc_review_record(
    *, cycle: Cycle, provider: Provider, criterion: Criterion, reviewer: Any, score: float,
    citations: list[dict[str, str]], notes: str = "", is_reconciled: bool = False,
) -> DocReview:
    """Store one reviewer's 0-4 score with at least one {url, quote} citation."""
    _check_unit(cycle, provider, criterion.rubric_version_id)
    if "doc_review" not in criterion.evidence_kinds:
        raise ScoringInputError(f"criterion {criterion.key} takes no documentation review")
    review = DocReview(
        cycle=cycle, provider=provider, criterion=criterion, reviewer=reviewer, score=score,
        citations=citations, notes=notes, is_reconciled=is_reconciled,
    )
    try:
        validate_citations(citations)
        review.full_clean()
    except ValidationError as exc:
        raise ScoringInputError(f"doc review refused: {exc}") from exc
    review.save()
    return review


@transaction.atomic
def doc_review_change(
    *, review: DocReview, changed_by: Any, reason: str, score: float | None = None,
    citations: list[dict[str, str]] | None = None, notes: str | None = None, reviewer: Any | None = None,
) -> DocReview:
    """Change a stored documentation review; the one way to do it.

    The audit history records who (``changed_by``), when and why (``reason``, required). A
    change of a reviewer's score after the criterion was reconciled marks that reconciliation
    ``superseded``: the engine stops using it (it scores the reviewers' median again) until a
    new reconciliation is recorded with ``doc_review_record(..., is_reconciled=True)``.
    A superseded reconciliation itself is history and cannot be changed.
    """
    if not reason or not reason.strip():
        raise ScoringInputError("a change of a documentation review needs a reason")
    review = DocReview.objects.select_for_update().get(pk=review.pk)
    if review.superseded:
        raise ScoringInputError("a superseded reconciliation is history: record a new reconciliation instead")
    old_score = review.score
    if score is not None:
        review.score = score
    if citations is not None:
        review.citations = citations
    if notes is not None:
        review.notes = notes
    if reviewer is not None:  # a reconciliation redone by another analyst
        if not review.is_reconciled:
            raise ScoringInputError("a reviewer's own score keeps its reviewer")
        review.reviewer = reviewer
    try:
        validate_citations(review.citations)
        review.full_clean()
    except ValidationError as exc:
        raise ScoringInputError(f"doc review change refused: {exc}") from exc
    _audited_save(review, changed_by, reason.strip())
    if not review.is_reconciled and review.score != old_score:
        stale = DocReview.objects.select_for_update().filter(
            cycle=review.cycle, provider=review.provider, criterion=review.criterion, is_reconciled=True,
            superseded=False,
        )
        for reconciled in stale:
            reconciled.superseded = True
            _audited_save(reconciled, changed_by, f"superseded: {review.reviewer} changed their score ({reason.strip()})")
    return review


def _audited_save(review: DocReview, user: Any, reason: str) -> None:
    review._change_via_service = True  # type: ignore[attr-defined]
    review._history_user = user  # type: ignore[attr-defined]  # simple-history: who
    review._change_reason = reason  # type: ignore[attr-defined]  # simple-history: why
    review.save()


@transaction.atomic
def customer_feedback_record(
    *, cycle: Cycle, provider: Provider, rating: int, source: str, respondent_org: str,
    area: Area | None = None, criterion: Criterion | None = None, comment: str = "",
) -> CustomerFeedback:
    """Store one respondent's 1-5 rating; the organisation is kept only as its keyed hash."""
    if (area is None) == (criterion is None):
        raise ScoringInputError("feedback rates exactly one area or one criterion")
    target = criterion if criterion is not None else area
    _check_unit(cycle, provider, target.rubric_version_id)  # type: ignore[union-attr]
    try:
        org_hash = respondent_org_hash(respondent_org)
    except ValueError as exc:
        raise ScoringInputError(str(exc)) from exc
    feedback = CustomerFeedback(
        cycle=cycle, provider=provider, area=area, criterion=criterion, rating=rating, source=source,
        respondent_org_hash=org_hash, comment=comment,
    )
    try:
        feedback.full_clean()
    except ValidationError as exc:
        raise ScoringInputError(f"customer feedback refused: {exc}") from exc
    feedback.save()
    return feedback



def _history_user(user: Any) -> Any:
    """The user a history record names: a saved user, else nobody (a command, the system)."""
    return user if getattr(user, "pk", None) else None


def customer_feedback_bulk_create(
    rows: Sequence[dict[str, Any]], *, by: Any | None, batch_size: int,
) -> tuple[list[CustomerFeedback], list[Any]]:
    """Store many checked feedback rows (their fields) at once, a survey import: each with the
    history record a row saved alone would have, attributed to ``by``. Returns the rows and their
    history records, so the caller can add its own audit events; the caller holds the transaction."""
    created = CustomerFeedback.objects.bulk_create([CustomerFeedback(**row) for row in rows], batch_size=batch_size)
    records = CustomerFeedback.history.bulk_history_create(  # type: ignore[attr-defined]
        created, batch_size=batch_size, default_user=_history_user(by))
    return created, records


def customer_feedback_interview_create(
    *, cycle: Cycle, provider: Provider, area: Area | None, criterion: Criterion | None, rating: int,
    respondent_org_hash: str, by: Any,
) -> CustomerFeedback:
    """Store the rating given in a customer interview (its organisation already a keyed hash),
    its history record attributed to ``by``; the interview note's checks come first."""
    feedback = CustomerFeedback(
        cycle=cycle, provider=provider, area=area, criterion=criterion,
        rating=rating, source=CustomerFeedback.Source.INTERVIEW, respondent_org_hash=respondent_org_hash,
    )
    feedback._history_user = _history_user(by)  # type: ignore[attr-defined]  # simple-history: who
    feedback.save()
    return feedback


def customer_feedback_delete(rows: Iterable[CustomerFeedback], *, by: Any | None) -> None:
    """Delete feedback rows one by one (an import rolled back), each deletion in the history
    attributed to ``by``."""
    for row in rows:
        row._history_user = _history_user(by)  # type: ignore[attr-defined]  # simple-history: who
        row.delete()


# --- score overrides ----------------------------------------------------------------------
class ScoreOverrideRefused(ValueError):
    """A refused override proposal or decision; the message is safe to show. Nothing was written."""


class ScoreOverrideFourEyes(ScoreOverrideRefused, PermissionError):
    """The same person may not propose and approve, nor approve twice."""


Reason = ScoreOverride.Reason
Status = ScoreOverride.Status


def score_override_check(
    *, cycle: Cycle, provider: Provider, criterion: Criterion, reason: str, evidence_finding: Any | None,
) -> list[int]:
    """The critical-finding rule for a proposal; returns the critical finding ids it disputes.

    A gate criterion failed by a critical finding (``gate_critical_finding_ids``) is overridden
    only as "measurement was wrong". That reason needs a probe-measured criterion and a later
    finding that shows it: the same provider's, cycle's, probe's and metric's, ``pass`` and not
    critical, newer than every critical finding it disputes. Raises ``ScoreOverrideRefused``.
    """
    if reason not in Reason.values:
        raise ScoreOverrideRefused(f"unknown override reason {reason!r}; one of {', '.join(Reason.values)}")
    critical = gate_critical_finding_ids(cycle=cycle, provider=provider, criterion=criterion)
    if critical and reason != Reason.MEASUREMENT_WRONG:
        refs = ", ".join(f"finding {pk}" for pk in critical)
        raise ScoreOverrideRefused(
            f"{criterion.key} is a gate failed by a critical finding ({refs}): it can be overridden only as "
            "'measurement was wrong', with a later finding that shows it, and two approvers"
        )
    if reason != Reason.MEASUREMENT_WRONG:
        if evidence_finding is not None:
            raise ScoreOverrideRefused("an evidence finding goes with the reason 'measurement was wrong' only")
        return []
    if not criterion.probe_id:
        raise ScoreOverrideRefused(f"'measurement was wrong' needs a criterion measured by a probe; {criterion.key} is not")
    if evidence_finding is None:
        raise ScoreOverrideRefused(
            "'measurement was wrong' needs the evidence that shows it: the id of a later finding of the same probe"
        )
    pk = getattr(evidence_finding, "pk", evidence_finding)  # a Finding, or its id as the API sends it
    finding = findings_for_provider(provider=provider, cycle=cycle).filter(pk=pk).first() if isinstance(pk, int) else None
    if finding is None or (finding.probe_id, finding.metric) != (criterion.probe_id, criterion.probe_metric):
        raise ScoreOverrideRefused(
            f"the evidence finding must be one of {provider.slug}'s findings of probe {criterion.probe_id} "
            f"in cycle {cycle.slug}"
        )
    if finding.critical or finding.outcome != "pass":
        raise ScoreOverrideRefused(f"the evidence finding {finding.pk} is not a passing, non-critical finding")
    if critical and finding.pk < max(critical):
        raise ScoreOverrideRefused(
            f"the evidence finding {finding.pk} is older than the critical finding {max(critical)} it disputes"
        )
    return critical


@transaction.atomic
def score_override_propose(
    *, cycle: Cycle, provider: Provider, criterion: Criterion, value: float, justification: str,
    evidence: list[dict[str, str]], by: Any, reason: str = Reason.JUDGEMENT, evidence_finding: Any | None = None,
) -> ScoreOverride:
    """Store a proposed override after the critical-finding rule (``score_override_check``).

    The caller (reviews.services) has checked the role, the unit and the citations.
    """
    disputed = score_override_check(
        cycle=cycle, provider=provider, criterion=criterion, reason=reason, evidence_finding=evidence_finding
    )
    override = ScoreOverride(
        cycle=cycle, provider=provider, criterion=criterion, value=float(value), justification=justification,
        evidence=evidence, proposed_by=by, reason=reason,
        evidence_finding_id=getattr(evidence_finding, "pk", evidence_finding), disputed_findings=disputed,
    )
    override._history_user = by if getattr(by, "pk", None) else None  # type: ignore[attr-defined]
    override.save()
    return override


@transaction.atomic
def score_override_decide(*, override: ScoreOverride, by: Any, approve: bool, note: str = "") -> ScoreOverride:
    """Approve or reject a proposed override; "measurement was wrong" takes two approvers.

    Never the proposer (four eyes); for "measurement was wrong" a first approval moves the
    row to ``confirming`` and a second, different publisher makes it ``approved``. Approving
    re-checks the critical-finding rule against the findings of now: a critical finding that
    arrived after the proposal, and that the override does not dispute, refuses the approval.
    """
    locked = ScoreOverride.objects.select_for_update().get(pk=override.pk)
    if locked.proposed_by_id == by.pk:
        raise ScoreOverrideFourEyes("four eyes: a publisher may not approve or reject their own override")
    if locked.status not in (Status.PROPOSED, Status.CONFIRMING):
        raise ScoreOverrideRefused(f"this override is already {locked.status}")
    second = locked.status == Status.CONFIRMING
    if second and locked.decided_by_id == by.pk:
        raise ScoreOverrideFourEyes(
            "two approvers: you approved this override already; a different publisher must confirm it"
        )
    now = timezone.now()
    if approve:
        critical = gate_critical_finding_ids(cycle=locked.cycle, provider=locked.provider, criterion=locked.criterion)
        if critical and locked.reason != Reason.MEASUREMENT_WRONG:
            raise ScoreOverrideRefused(
                f"{locked.criterion.key} is a gate failed by a critical finding: only a 'measurement was wrong' "
                "override with its evidence can be approved; reject this one"
            )
        undisputed = sorted(set(critical) - set(locked.disputed_findings or ()))
        if undisputed:
            raise ScoreOverrideRefused(
                f"critical findings recorded after the proposal ({', '.join(map(str, undisputed))}) are not disputed "
                "by it: reject it and propose again"
            )
        if (not (locked.reason == Reason.MEASUREMENT_WRONG and not second)
                and ScoreOverride.objects.filter(
                    cycle_id=locked.cycle_id, provider_id=locked.provider_id, criterion_id=locked.criterion_id,
                    status=Status.APPROVED,
                ).exists()):
            raise ScoreOverrideRefused("another override of this criterion is already approved; reject this one instead")
    if second:
        locked.second_decided_by, locked.second_decided_at = by, now
        locked.status = Status.APPROVED if approve else Status.REJECTED
        if note:
            locked.decision_note = f"{locked.decision_note}\n{note}".strip()
    else:
        locked.decided_by, locked.decided_at, locked.decision_note = by, now, note
        if not approve:
            locked.status = Status.REJECTED
        else:
            locked.status = Status.CONFIRMING if locked.reason == Reason.MEASUREMENT_WRONG else Status.APPROVED
    locked._history_user = by if getattr(by, "pk", None) else None  # type: ignore[attr-defined]
    locked.save()
    override.refresh_from_db()
    return override
