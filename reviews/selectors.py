"""Reads of the human-evidence workflow, each already narrowed to what the caller may see.

The blind-review rule lives here: a reviewer sees another reviewer's score for the same
cycle x provider x criterion only once their own review is submitted AND both the first
and second reviews are in. The provider portal's reads are here too; they return only
the provider's own rows and only aggregates of customer feedback.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Avg, Count, Q, QuerySet
from django.db.models.functions import Coalesce

from config.access import ALL_STAFF_READ, Role, queryset_for_user, user_role
from probes.selectors import findings_for_provider
from providers.models import Cycle, Provider
from ratings.models import CustomerFeedback
from ratings.selectors import provider_tier_latest
from reports.selectors import report_in_fact_check
from reviews.agreement import AlphaResult, criterion_alphas
from reviews.models import ReviewAssignment


def assignment_list(*, user: Any) -> QuerySet[ReviewAssignment]:
    """Reviewers: their own assignments. Analysts, publishers, admins: all. Others: none."""
    qs = ReviewAssignment.objects.select_related("cycle", "provider", "criterion", "reviewer")
    role = user_role(user)
    if role in ALL_STAFF_READ:
        return qs
    if role == Role.REVIEWER:
        return qs.filter(reviewer=user)
    return qs.none()


def peer_scores_visible(*, assignment: ReviewAssignment, user: Any) -> bool:
    """May `user` see the other reviewers' scores of this assignment's unit?"""
    role = user_role(user)
    if role in ALL_STAFF_READ:
        return True
    if assignment.reviewer_id != getattr(user, "pk", None) or not assignment.is_submitted:
        return False
    submitted_slots = set(
        ReviewAssignment.objects.filter(
            cycle_id=assignment.cycle_id, provider_id=assignment.provider_id, criterion_id=assignment.criterion_id,
            status=ReviewAssignment.Status.SUBMITTED,
        ).values_list("slot", flat=True)
    )
    return {"first", "second"} <= submitted_slots


@dataclass(frozen=True)
class PeerScore:
    slot: str
    score: int | None
    status: str


def peer_scores(*, assignment: ReviewAssignment, user: Any) -> list[PeerScore] | None:
    """Other reviewers' scores of the same unit, or None while blind. Never their identity."""
    if not peer_scores_visible(assignment=assignment, user=user):
        return None
    others = ReviewAssignment.objects.filter(
        cycle_id=assignment.cycle_id, provider_id=assignment.provider_id, criterion_id=assignment.criterion_id,
    ).exclude(pk=assignment.pk).order_by("slot")
    return [PeerScore(slot=o.slot, score=o.score, status=o.status) for o in others]


def peer_scores_for_page(*, assignments: list[ReviewAssignment], user: Any) -> dict[int, list[PeerScore] | None]:
    """``peer_scores`` for a page of assignments in one query: {assignment id: scores or None}.

    The same rules as ``peer_scores_visible``: staff see every unit's scores; a reviewer sees
    them for their own submitted assignment once the first and second reviews are both in.
    """
    if not assignments:
        return {}
    staff = user_role(user) in ALL_STAFF_READ
    units = {(a.cycle_id, a.provider_id, a.criterion_id) for a in assignments}
    unit_filter = Q()
    for cycle_id, provider_id, criterion_id in units:
        unit_filter |= Q(cycle_id=cycle_id, provider_id=provider_id, criterion_id=criterion_id)
    by_unit: dict[tuple[int, int, int], list[ReviewAssignment]] = defaultdict(list)
    for row in ReviewAssignment.objects.filter(unit_filter).only(
        "pk", "cycle_id", "provider_id", "criterion_id", "slot", "score", "status"
    ).order_by("slot"):
        by_unit[(row.cycle_id, row.provider_id, row.criterion_id)].append(row)
    out: dict[int, list[PeerScore] | None] = {}
    for a in assignments:
        rows = by_unit[(a.cycle_id, a.provider_id, a.criterion_id)]
        submitted = {r.slot for r in rows if r.status == ReviewAssignment.Status.SUBMITTED}
        visible = staff or (
            a.reviewer_id == getattr(user, "pk", None) and a.is_submitted and {"first", "second"} <= submitted
        )
        out[a.pk] = [PeerScore(slot=r.slot, score=r.score, status=r.status) for r in rows if r.pk != a.pk] if (
            visible) else None
    return out


def cycle_alpha(*, cycle: Cycle) -> list[AlphaResult]:
    """Krippendorff's alpha (ordinal) per criterion over the cycle's double-reviewed units.

    Uses the first and second reviewers only: the third is chosen *because* of a
    disagreement, so counting them would flatter agreement.
    """
    units: dict[tuple[str, int], list[int]] = defaultdict(list)
    rows = ReviewAssignment.objects.filter(
        cycle=cycle, status=ReviewAssignment.Status.SUBMITTED, slot__in=["first", "second"]
    ).values_list("criterion__key", "provider_id", "score")
    for key, provider_id, score in rows:
        units[(key, provider_id)].append(score)
    by_criterion: dict[str, list[list[int]]] = defaultdict(list)
    for (key, _provider), scores in units.items():
        by_criterion[key].append(scores)
    for key, kinds in cycle.rubric_version.criteria.values_list("key", "evidence_kinds"):
        if "doc_review" in (kinds or []):
            by_criterion.setdefault(key, [])
    return criterion_alphas(by_criterion)


# --- provider portal -----------------------------------------------------------------------


def portal_cycles(*, provider: Provider) -> QuerySet[Cycle]:
    return Cycle.objects.filter(providers=provider).order_by("-period_start")


def portal_findings(*, provider: Provider, cycle: Cycle) -> QuerySet[Any]:
    """The provider's own draft findings in a cycle (from its own clusters only)."""
    return findings_for_provider(provider=provider, cycle=cycle)


def portal_feedback_summary(*, provider: Provider, cycle: Cycle) -> list[dict[str, Any]]:
    """Customer feedback about the provider as counts and means only: no identity, no comments."""
    return list(
        CustomerFeedback.objects.filter(provider=provider, cycle=cycle)
        .annotate(item=Coalesce("area__key", "criterion__key"))
        .values("item").annotate(count=Count("id"), mean=Avg("rating")).order_by("item")
    )


def portal_tiers(*, provider: Provider, cycle: Cycle) -> list[dict[str, Any]]:
    """The provider's tier in the cycle's latest score snapshot (summary fields only)."""
    return provider_tier_latest(provider=provider, cycle=cycle)


def portal_report_section(*, provider: Provider, cycle: Cycle) -> dict[str, Any] | None:
    """The provider's own section of the draft report in fact-check.

    Only the section whose provider slug matches is returned; nothing else of the
    document (other providers, peer tables) ever reaches the portal.
    """
    report = report_in_fact_check(cycle=cycle)
    if report is None:
        return None
    section = _provider_section(report.content, provider.slug)
    if section is None:
        return None
    return {"report_id": report.pk, "section": section}


def _provider_section(content: Any, slug: str) -> Mapping[str, Any] | None:
    if not isinstance(content, Mapping):
        return None
    candidates: Any = content.get("providers") or content.get("sections") or []
    if isinstance(candidates, Mapping):
        section = candidates.get(slug)
        return section if isinstance(section, Mapping) else None
    if isinstance(candidates, list):
        for item in candidates:
            if isinstance(item, Mapping) and (item.get("slug") == slug or item.get("provider") == slug):
                return item
    return None


def replies_for_user(*, user: Any) -> QuerySet[Any]:
    from reviews.models import RightOfReply

    qs = RightOfReply.objects.select_related("provider", "cycle", "user")
    return queryset_for_user(qs, user, provider_field="provider")
