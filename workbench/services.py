"""Writes started from the cycle workbench, each through the owning app's services.

* ``cycle_probes_run``: run the probes a cycle still lacks (never run, ended in error, or left
  harness-error findings) for one provider or the whole peer set, as one-off runs
  (``probes.services.probe_runs_start``; no schedule needed). Non-disruptive probes start at
  once; disruptive ones (fault injection) wait until those have finished and then run one
  at a time, last: ``probe_sequence_advance`` moves that queue on, driven by a small Celery
  task that re-checks the rows (state lives on ProbeRun rows, never in the task).
* ``cycle_tiers_preview``: score the cycle with the pure engine without storing anything, and
  say what changed against the latest stored snapshot; ``ratings.services.cycle_scores_compute``
  stores it.
* ``cycle_report_draft``: a draft report from the latest snapshot (``reports.services``).
* ``cycle_reviews_plan``: fill the empty first and second documentation-review slots of the
  cycle with unconflicted, least-loaded reviewers (a preview, or the assignments made through
  ``reviews.services.assignment_create``, which audits each one).

Who may call these is decided by the views (analysts and admins act); the services check
the cycle's state, not the user.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from config.access import Role, user_role
from probes.catalog import UnknownProbe, probe_get
from probes.models import ClusterAccess, ProbeRun
from probes.services import broker_check, probe_runs_start
from providers.models import Cluster, Cycle, Provider
from ratings.engine import score_cycle
from ratings.engine_types import ScoringInputError
from ratings.models import ScoreSnapshot
from ratings.selectors import cycle_default_seed, cycle_evidence_get
from reports.models import Report
from reports.services import report_draft_create_from_snapshot
from reviews.models import ConflictOfInterest, ReviewAssignment
from reviews.services import ReviewsError, assignment_create
from rubric.models import Criterion
from workbench.selectors import probe_runs_with_errors

logger = logging.getLogger(__name__)

RERUN_STATUSES = frozenset({ProbeRun.Status.ERROR, ProbeRun.Status.CANCELLED})
SEQUENCE_POLL_S = 15


class WorkbenchError(Exception):
    """The action cannot be taken as asked; the message says why, in words."""


@dataclass
class ProbePlan:
    started: list[ProbeRun] = field(default_factory=list)
    queued_disruptive: dict[str, list[str]] = field(default_factory=dict)  # cluster -> probe ids, in order
    skipped: list[str] = field(default_factory=list)  # "cluster: why"


def cycle_probe_ids(*, cycle: Cycle) -> list[str]:
    """Catalog probes the cycle's rubric binds to a criterion, in rubric order."""
    ids = (
        Criterion.objects.filter(rubric_version=cycle.rubric_version)
        .exclude(probe_id="")
        .order_by("area__position", "position", "key")
        .values_list("probe_id", "evidence_kinds")
    )
    out = []
    for probe_id, kinds in ids:
        if "probe" not in kinds or probe_id in out:
            continue
        try:
            probe_get(probe_id)
        except UnknownProbe:
            continue
        out.append(probe_id)
    return out


def probes_needing_a_run(*, cycle: Cycle, clusters: list[Cluster], probe_ids: list[str]) -> dict[int, list[str]]:
    """cluster id -> probe ids with no run in this cycle, or whose latest run failed or left
    harness errors. A pending or running probe is left alone."""
    latest = (
        ProbeRun.objects.filter(cycle=cycle, cluster__in=clusters, probe_id__in=probe_ids)
        .values("cluster_id", "probe_id").annotate(last=Max("id")).order_by()
    )
    last_ids = [r["last"] for r in latest]
    state = {
        (r.cluster_id, r.probe_id): r
        for r in probe_runs_with_errors(ProbeRun.objects.filter(pk__in=last_ids)).only("cluster_id", "probe_id", "status")
    }
    out: dict[int, list[str]] = {}
    for cluster in clusters:
        needed = []
        for probe_id in probe_ids:
            run = state.get((cluster.pk, probe_id))
            if run is None or run.status in RERUN_STATUSES or (
                run.status == ProbeRun.Status.DONE and run.has_harness_errors
            ):
                needed.append(probe_id)
        out[cluster.pk] = needed
    return out


def _slot(now: datetime | None = None) -> datetime:
    """The current minute: a double click within it starts nothing twice (idempotency key)."""
    return (now or timezone.now()).replace(second=0, microsecond=0)


@transaction.atomic
def cycle_probes_run(*, cycle: Cycle, provider: Provider | None = None, now: datetime | None = None) -> ProbePlan:
    """Start the missing or failed probes of ``provider`` (or the whole peer set) in ``cycle``.

    All or nothing: the broker is checked before anything is written (``QueueUnavailable``), the
    runs of every cluster are written in this one transaction, and their tasks are sent once it
    commits; a send that fails after the commit leaves its run pending for the sweeper.
    """
    peers = cycle.providers.all()
    if provider is not None:
        if not peers.filter(pk=provider.pk).exists():
            raise WorkbenchError(f"{provider.name} is not in the peer set of {cycle.name}")
        peers = peers.filter(pk=provider.pk)
    probe_ids = cycle_probe_ids(cycle=cycle)
    plan = ProbePlan()
    if not probe_ids:
        plan.skipped.append(f"the rubric {cycle.rubric_version} binds no probe of the catalog")
        return plan
    broker_check()  # before any write: a queue that is down starts nothing
    clusters = list(Cluster.objects.filter(provider__in=peers).select_related("provider").order_by("provider__name", "name"))
    with_access = set(ClusterAccess.objects.filter(cluster__in=clusters).values_list("cluster_id", flat=True))
    needed = probes_needing_a_run(cycle=cycle, clusters=clusters, probe_ids=probe_ids)
    slot = _slot(now)
    for cluster in clusters:
        if cluster.pk not in with_access:
            plan.skipped.append(f"{cluster}: no access configured yet")
            continue
        todo = needed.get(cluster.pk, [])
        if not todo:
            continue
        gentle = [p for p in todo if not probe_get(p).disruptive]
        disruptive = [p for p in todo if probe_get(p).disruptive]
        if gentle:
            plan.started.extend(probe_runs_start(cluster=cluster, probe_ids=gentle, slot=slot, cycle=cycle))
        if disruptive:
            plan.queued_disruptive[str(cluster)] = disruptive
            wait = [r.pk for r in plan.started if r.cluster_id == cluster.pk]
            _sequence_send(cycle_id=cycle.pk, cluster_id=cluster.pk, wait_ids=wait, remaining=disruptive, slot=slot)
    return plan


def _sequence_send(*, cycle_id: int, cluster_id: int, wait_ids: list[int], remaining: list[str],
                   slot: datetime, countdown: int = 0) -> None:
    from workbench.tasks import probe_sequence_advance_task

    args = (cycle_id, cluster_id, wait_ids, remaining, slot.isoformat())

    def send() -> None:
        # after the commit, a broker that just failed must not turn the request into an error: the
        # queue's runs are not written yet, so "Run missing probes" again starts them
        try:
            probe_sequence_advance_task.apply_async(args, countdown=countdown)
        except Exception as exc:
            logger.warning("disruptive queue of cluster %s not sent (%s: %s); run missing probes again",
                           cluster_id, type(exc).__name__, exc)

    transaction.on_commit(send)


def probe_sequence_advance(
    *, cycle_id: int, cluster_id: int, wait_ids: list[int], remaining: list[str], slot: datetime
) -> str:
    """One step of a cluster's disruptive queue: wait while runs are active, else start the next.

    Returns "waiting", "started <probe>" or "done". Idempotent: the run of a probe in a slot has
    one idempotency key, so a redelivered step finds the run it already started.
    """
    active = ProbeRun.objects.filter(pk__in=wait_ids).exclude(status__in=ProbeRun.TERMINAL).exists()
    if active:
        with transaction.atomic():
            _sequence_send(cycle_id=cycle_id, cluster_id=cluster_id, wait_ids=wait_ids, remaining=remaining,
                           slot=slot, countdown=SEQUENCE_POLL_S)
        return "waiting"
    if not remaining:
        return "done"
    cycle = Cycle.objects.get(pk=cycle_id)
    cluster = Cluster.objects.get(pk=cluster_id)
    probe_id, rest = remaining[0], list(remaining[1:])
    with transaction.atomic():
        runs = probe_runs_start(cluster=cluster, probe_ids=[probe_id], slot=slot, cycle=cycle)
        _sequence_send(cycle_id=cycle_id, cluster_id=cluster_id, wait_ids=[r.pk for r in runs], remaining=rest,
                       slot=slot, countdown=SEQUENCE_POLL_S if rest else 0)
    return f"started {probe_id}"


# ------------------------------------------------------------------------------------------ tiers
@dataclass(frozen=True)
class TierChange:
    provider: str
    name: str
    before: str  # "" when the provider had no tier in the latest snapshot
    after: str
    coverage_before: float | None
    coverage_after: float
    composite_before: float | None
    composite_after: float | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class TiersPreview:
    changes: list[TierChange]
    snapshot: ScoreSnapshot | None  # the latest stored one, compared against
    already_stored: bool  # the same result is the latest snapshot


def cycle_tiers_preview(*, cycle: Cycle) -> TiersPreview:
    """Score ``cycle`` without storing, and compare with its latest snapshot.

    Raises WorkbenchError with the engine's own words when the evidence cannot be scored.
    """
    from ratings.engine import content_hash

    try:
        result = score_cycle(cycle_evidence_get(cycle=cycle, seed=cycle_default_seed(cycle=cycle)))
    except ScoringInputError as exc:
        raise WorkbenchError(f"the cycle cannot be scored: {exc}") from exc
    latest = ScoreSnapshot.objects.filter(cycle=cycle).order_by("-created_at", "-id").first()
    before = {}
    if latest is not None:
        before = {t.provider.slug: t for t in latest.assignments.select_related("provider")}
    names = dict(cycle.providers.values_list("slug", "name"))
    changes = []
    for r in result.providers:
        old = before.get(r.provider)
        changes.append(TierChange(
            provider=r.provider, name=names.get(r.provider, r.provider),
            before=old.tier if old else "", after=r.tier,
            coverage_before=old.coverage if old else None, coverage_after=r.coverage,
            composite_before=old.composite if old else None, composite_after=r.composite,
        ))
    stored = latest is not None and latest.content_hash == content_hash(result)
    return TiersPreview(changes=changes, snapshot=latest, already_stored=stored)


# ----------------------------------------------------------------------------------------- report
def cycle_report_draft(*, cycle: Cycle, user: Any) -> Report:
    """A draft report from the cycle's latest snapshot (or the draft already made from it)."""
    snapshot = ScoreSnapshot.objects.filter(cycle=cycle).order_by("-created_at", "-id").first()
    if snapshot is None:
        raise WorkbenchError("compute tiers first: the cycle has no score snapshot")
    existing = Report.objects.filter(
        cycle=cycle, status=Report.Status.DRAFT, source__score_snapshot=snapshot
    ).order_by("-id").first()
    if existing is not None:
        return existing
    return report_draft_create_from_snapshot(snapshot=snapshot, user=user)


# ---------------------------------------------------------------------------------------- reviews
@dataclass
class ReviewPlan:
    """Who would review what (a preview) or was assigned (after ``assign=True``)."""

    assignments: list[tuple[Provider, Criterion, str, Any]] = field(default_factory=list)  # provider, criterion, slot, reviewer
    skipped: list[str] = field(default_factory=list)  # "reviewer: why", one line per reviewer x provider
    unfilled: list[str] = field(default_factory=list)  # "provider · criterion: slot — why no reviewer"
    refused: list[str] = field(default_factory=list)  # the reviews service refused an assignment: why
    units: int = 0  # provider x criterion units looked at
    assigned: bool = False


def cycle_review_criteria(*, cycle: Cycle) -> list[Criterion]:
    """The cycle's rubric criteria that take documentation review, in rubric order."""
    return [
        c for c in Criterion.objects.filter(rubric_version=cycle.rubric_version).select_related("area")
        .order_by("area__position", "position", "key")
        if "doc_review" in (c.evidence_kinds or [])
    ]


def cycle_reviews_plan(
    *, cycle: Cycle, by: Any, criterion: Criterion | None = None, provider: Provider | None = None,
    assign: bool = False,
) -> ReviewPlan:
    """Fill the empty first and second review slots of the cycle's documentation-review criteria.

    For each provider x criterion (or the one chosen), each empty slot gets the least-loaded
    active reviewer (open assignments in any cycle, ties by username) who is not already in the
    unit and has declared no conflict of interest with the provider; reviewers passed over for a
    conflict are listed with the reason. With ``assign`` every pick goes through
    ``reviews.services.assignment_create`` (which checks the role, the conflict and the slot
    again, and writes the audit trail); otherwise nothing is written (a preview).
    """
    if user_role(by) not in {Role.ANALYST, Role.ADMIN, Role.PUBLISHER}:
        raise WorkbenchError("only analysts and admins assign reviews")
    if assign and user_role(by) not in {Role.ANALYST, Role.ADMIN}:
        raise WorkbenchError("only analysts and admins assign reviews")
    criteria = cycle_review_criteria(cycle=cycle)
    if criterion is not None:
        if criterion.pk not in {c.pk for c in criteria}:
            raise WorkbenchError(
                f"criterion {criterion.key} is not a documentation-review criterion of {cycle.rubric_version}"
            )
        criteria = [c for c in criteria if c.pk == criterion.pk]
    providers = list(cycle.providers.order_by("name"))
    if provider is not None:
        if provider.pk not in {p.pk for p in providers}:
            raise WorkbenchError(f"{provider.name} is not in the peer set of {cycle.name}")
        providers = [provider]
    plan = ReviewPlan(units=len(providers) * len(criteria))
    reviewers = list(
        get_user_model().objects.filter(groups__name=Role.REVIEWER.value, is_active=True).distinct()
        .annotate(open_count=Count("review_assignments", filter=Q(review_assignments__status="assigned")))
        .order_by("username")
    )
    if not criteria or not providers:
        return plan
    if not reviewers:
        plan.unfilled.append("no active user has the reviewer role")
        return plan
    load = {r.pk: r.open_count for r in reviewers}
    conflicts: dict[int, dict[int, str]] = defaultdict(dict)  # provider id -> reviewer id -> note
    for reviewer_id, provider_id, note in ConflictOfInterest.objects.filter(
        provider__in=providers, reviewer__in=reviewers
    ).values_list("reviewer_id", "provider_id", "note"):
        conflicts[provider_id][reviewer_id] = note
    taken: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)  # (provider, criterion) -> slot -> reviewer
    for p_id, c_id, slot, r_id in ReviewAssignment.objects.filter(
        cycle=cycle, provider__in=providers, criterion__in=criteria
    ).values_list("provider_id", "criterion_id", "slot", "reviewer_id"):
        taken[(p_id, c_id)][slot] = r_id
    for p in providers:
        empty_slots = False
        for c in criteria:
            unit = taken[(p.pk, c.pk)]
            for slot in (ReviewAssignment.Slot.FIRST, ReviewAssignment.Slot.SECOND):
                if slot in unit:
                    continue
                empty_slots = True
                free = [r for r in reviewers if r.pk not in conflicts[p.pk] and r.pk not in unit.values()]
                if not free:
                    plan.unfilled.append(
                        f"{p.name} · {c.key}: {slot} slot — no reviewer left without a conflict of interest "
                        "or already reviewing it"
                    )
                    continue
                pick = min(free, key=lambda r: (load[r.pk], r.get_username()))
                unit[slot] = pick.pk
                load[pick.pk] += 1
                plan.assignments.append((p, c, slot, pick))
        if empty_slots:  # who was passed over for this provider, and why
            plan.skipped.extend(
                f"{r.get_username()} for {p.name}: declared a conflict of interest"
                + (f" ({conflicts[p.pk][r.pk]})" if conflicts[p.pk][r.pk] else "")
                for r in reviewers if r.pk in conflicts[p.pk]
            )
    if assign:
        made = []
        for p, c, slot, reviewer in plan.assignments:
            try:
                assignment_create(cycle=cycle, provider=p, criterion=c, reviewer=reviewer, slot=slot, by=by)
            except ReviewsError as exc:
                plan.refused.append(f"{p.name} · {c.key} ({slot}, {reviewer.get_username()}): {exc}")
                continue
            made.append((p, c, slot, reviewer))
        plan.assignments = made
        plan.assigned = True
    return plan
