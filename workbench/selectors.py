"""Reads for the cycle workbench: one cycle's state, gathered in a fixed number of queries.

The workbench is the analyst's page for one rating cycle. ``cycle_workbench_get`` reads:

* the evidence matrix, providers x criteria. Each cell has one label, chosen in this order:
  ``critical`` (a critical finding), ``failed`` (a probe replicate failed, ran out of time or
  hit the provider's error), ``declined`` (the provider did not allow what the probe needs),
  ``measured`` (passing findings, a documentation review, customer feedback or an approved
  override), ``under review`` (a review is assigned and not yet reconciled or submitted),
  ``not applicable`` (every finding said so), ``missing`` (nothing yet, or only harness
  errors). The latest snapshot's criterion score is shown beside the label when there is one;
* per provider: coverage against the rubric's floor (the snapshot's, and the share of the
  weight that has evidence now), gate status, the latest snapshot's tier and probabilities;
* probe activity (pending, running with progress, failed with the error), review progress,
  feedback counts, and the readiness checklist that gates "compute tiers" and "draft report".

Every read is an aggregate or a bounded list, so the number of queries does not grow with the
number of providers, criteria, findings or runs (tests/workbench checks it). The workbench app
sits on top of the others: it imports their models and selectors, and none imports it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, OuterRef, Q

from probes.models import Finding, ProbeRun
from probes.selectors import NextScheduledRun, next_scheduled_runs_by_cluster
from providers.models import Cluster, Cycle, Provider
from ratings.models import CustomerFeedback, DocReview, ScoreOverride, ScoreSnapshot, TierAssignment
from reports.models import Report
from reviews.models import FeedbackImport, Reconciliation, ReviewAssignment
from rubric.models import Area, Criterion, RubricVersion

# Cell labels, strongest first (a cell shows the first that applies).
CRITICAL, FAILED, DECLINED, MEASURED, UNDER_REVIEW, NOT_APPLICABLE, MISSING = (
    "critical", "failed", "declined", "measured", "under review", "not applicable", "missing",
)
COVERED_LABELS = frozenset({CRITICAL, FAILED, DECLINED, MEASURED})
FAILING_OUTCOMES = frozenset({"fail", "provider_error", "timeout"})
MEASURED_OUTCOMES = frozenset({"pass", "warn"})
FAILED_RUNS_SHOWN = 50


@dataclass
class Cell:
    label: str = MISSING
    score: float | None = None  # the latest snapshot's criterion score (0-1), when there is one
    findings: int = 0
    failing: int = 0
    harness_errors: int = 0
    doc_reviews: int = 0
    feedback: int = 0
    overridden: bool = False
    reviews_open: int = 0
    url: str = ""  # where its evidence is (filled by the view, which knows the admin's URLs)

    @property
    def css(self) -> str:
        return self.label.replace(" ", "-")

    @property
    def text(self) -> str:
        return self.label if self.score is None else f"{self.label} {self.score:.2f}"


@dataclass
class ProviderRow:
    provider: Provider
    cells: list[Cell]
    coverage_now: float  # share of the rubric's weight with any evidence (measured, failed...)
    snapshot_coverage: float | None = None
    tier: str = ""
    probabilities: list[tuple[str, float]] = field(default_factory=list)
    gates: list[dict[str, str]] = field(default_factory=list)  # {criterion, status, cap}
    counts: dict[str, int] = field(default_factory=dict)
    below_floor: bool = False
    areas_below_floor: list[str] = field(default_factory=list)  # areas whose evidence is under the area floor
    clusters: list[Cluster] = field(default_factory=list)
    matrix_html: str = ""  # the row's cells as HTML (filled by the view)
    provider_html: str = ""  # the row of the providers table as HTML (filled by the view)


@dataclass(frozen=True)
class ReadinessItem:
    text: str
    ok: bool
    blocking: bool = True


@dataclass
class Workbench:
    cycle: Cycle
    rubric: RubricVersion
    criteria: list[Criterion]
    areas: list[Area]
    rows: list[ProviderRow]
    clusters: dict[int, list[Cluster]]
    runs: dict[str, int]  # status -> count
    running: list[dict[str, Any]]
    failed_runs: list[ProbeRun]
    review: dict[str, int]
    feedback: dict[str, int]
    snapshot: ScoreSnapshot | None
    reports: list[Report]
    readiness: list[ReadinessItem]
    # (cluster, its probe schedules' next fire times, soonest first) for the peer set's clusters
    next_runs: list[tuple[Cluster, list[NextScheduledRun]]] = field(default_factory=list)

    @property
    def can_compute(self) -> bool:
        return all(item.ok for item in self.readiness if item.blocking)

    @property
    def can_draft(self) -> bool:
        return self.snapshot is not None and self.can_compute


def _criterion_weights(criteria: list[Criterion], areas: list[Area]) -> dict[int, float]:
    """Each criterion's share of the whole rubric: area weight share x weight share in its area."""
    area_total = sum(a.weight for a in areas) or 1.0
    in_area: dict[int, float] = defaultdict(float)
    for c in criteria:
        in_area[c.area_id] += c.weight
    area_weight = {a.pk: a.weight / area_total for a in areas}
    return {c.pk: area_weight.get(c.area_id, 0.0) * c.weight / (in_area[c.area_id] or 1.0) for c in criteria}


# A (provider, probe, metric)'s findings, summed once: total (not counting the critical flag),
# failing, harness errors, critical, declined, measured (pass or warn), not applicable.
FindingSummary = tuple[int, int, int, int, int, int, int]
NO_FINDINGS: FindingSummary = (0, 0, 0, 0, 0, 0, 0)


def _finding_counts(cycle: Cycle) -> dict[tuple[int, str, str], FindingSummary]:
    """(provider id, probe id, metric) -> its findings summed by outcome (``FindingSummary``)."""
    out: dict[tuple[int, str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rows = (
        Finding.objects.filter(run__cycle=cycle)
        .values_list("run__cluster__provider_id", "probe_id", "metric", "outcome", "critical")
        .annotate(n=Count("id"))
        .order_by()
    )
    for provider_id, probe_id, metric, outcome, critical, n in rows:
        counts = out[(provider_id, probe_id, metric)]
        counts[outcome] += n
        if critical:
            counts["critical"] += n
    return {
        key: (
            sum(v for k, v in c.items() if k != "critical"),
            sum(c.get(o, 0) for o in FAILING_OUTCOMES),
            c.get("error", 0), c.get("critical", 0), c.get("declined", 0),
            sum(c.get(o, 0) for o in MEASURED_OUTCOMES), c.get("not_applicable", 0),
        )
        for key, c in out.items()
    }


def _pair_counts(queryset: Any, *fields: str) -> dict[tuple[Any, ...], int]:
    return {
        tuple(r[f] for f in fields): r["n"]
        for r in queryset.values(*fields).annotate(n=Count("id")).order_by()
    }


def _cell(findings: FindingSummary, docs: int, feedback: int, open_reviews: int, overridden: bool,
          snap: dict[str, Any] | None) -> Cell:
    total, failing, errors, critical, declined, measured, not_applicable = findings
    cell = Cell(
        findings=total, failing=failing, harness_errors=errors, doc_reviews=docs, feedback=feedback,
        overridden=overridden, reviews_open=open_reviews, score=snap.get("score") if snap else None,
    )
    if critical:
        cell.label = CRITICAL
    elif failing:
        cell.label = FAILED
    elif declined:
        cell.label = DECLINED
    elif overridden or docs or feedback or measured:
        cell.label = MEASURED
    elif open_reviews:
        cell.label = UNDER_REVIEW
    elif not_applicable:
        cell.label = NOT_APPLICABLE
    elif snap is not None and snap.get("status") == "measured":
        cell.label = MEASURED
    return cell


def _gate_status(criterion: Criterion, cell: Cell, snap_caps: dict[str, dict[str, Any]]) -> dict[str, str]:
    cap = criterion.gate_cap_tier or ""
    if criterion.key in snap_caps:
        status = f"fails ({snap_caps[criterion.key].get('reason', 'score')})"
    elif cell.label in (CRITICAL, FAILED, DECLINED):
        status = "fails" if cell.label != DECLINED else "declined"
    elif cell.label == MEASURED:
        status = "passes"
    elif cell.label == NOT_APPLICABLE:
        status = "not applicable"
    else:
        status = "not measured"
    return {"criterion": criterion.key, "status": status, "cap": cap}


def cycle_workbench_get(*, cycle: Cycle) -> Workbench:
    """Everything the workbench page shows for ``cycle`` (queries bounded; see the module doc)."""
    rubric = cycle.rubric_version
    areas = list(Area.objects.filter(rubric_version=rubric).order_by("position", "key"))
    area_pos = {a.pk: i for i, a in enumerate(areas)}
    criteria = sorted(
        Criterion.objects.filter(rubric_version=rubric),
        key=lambda c: (area_pos.get(c.area_id, 0), c.position, c.key),
    )
    providers = list(cycle.providers.order_by("name"))
    weights = _criterion_weights(criteria, areas)
    area_total = sum(a.weight for a in areas) or 1.0
    area_share = {a.pk: a.weight / area_total for a in areas}

    findings = _finding_counts(cycle)
    docs = _pair_counts(DocReview.objects.filter(cycle=cycle), "provider_id", "criterion_id")
    fb_criterion = _pair_counts(
        CustomerFeedback.objects.filter(cycle=cycle, criterion__isnull=False), "provider_id", "criterion_id"
    )
    fb_area = _pair_counts(CustomerFeedback.objects.filter(cycle=cycle, area__isnull=False), "provider_id", "area_id")
    assignments = _pair_counts(
        ReviewAssignment.objects.filter(cycle=cycle), "provider_id", "criterion_id", "status"
    )
    reconciled = set(
        Reconciliation.objects.filter(cycle=cycle).values_list("provider_id", "criterion_id")
    )
    overrides = set(
        ScoreOverride.objects.filter(cycle=cycle, status="approved").values_list("provider_id", "criterion_id")
    )

    # The snapshot's full result is the largest JSON of the cycle; the page needs only its rows.
    snapshot = ScoreSnapshot.objects.filter(cycle=cycle).defer("result").order_by("-created_at", "-id").first()
    tiers: dict[int, TierAssignment] = {}
    if snapshot is not None:
        tiers = {t.provider_id: t for t in TierAssignment.objects.filter(snapshot=snapshot).only(
            "provider_id", "tier", "coverage", "probabilities", "criteria", "gate_caps",
        )}

    # Area-level feedback goes to the area's one customer-feedback criterion (as the engine reads it).
    feedback_target: dict[int, int] = {}
    per_area: dict[int, int] = defaultdict(int)
    takes_feedback = set()
    for c in criteria:
        if "customer_feedback" in c.evidence_kinds:
            feedback_target.setdefault(c.area_id, c.pk)
            per_area[c.area_id] += 1
            takes_feedback.add(c.pk)
    # Feedback the engine would refuse (stored before imports checked it): it stops compute_tiers.
    misplaced_feedback = sum(n for (_, cid), n in fb_criterion.items() if cid not in takes_feedback) + sum(
        n for (_, area_id), n in fb_area.items() if per_area.get(area_id, 0) != 1
    )

    clusters: dict[int, list[Cluster]] = defaultdict(list)
    for cl in Cluster.objects.filter(provider__in=[p.pk for p in providers]).order_by("name"):
        clusters[cl.provider_id].append(cl)

    # Plain values, read once: this loop runs providers x criteria times (4,000 on a large cycle).
    plain = [(c, c.pk, c.key, c.area_id, c.probe_id, c.probe_metric, weights.get(c.pk, 0.0),
              feedback_target.get(c.area_id) == c.pk) for c in criteria]
    rows = []
    for p in providers:
        pid = p.pk
        assignment = tiers.get(pid)
        snap_criteria = {c["key"]: c for c in (assignment.criteria if assignment else [])}
        snap_caps = {g["criterion"]: g for g in (assignment.gate_caps if assignment else [])}
        cells, covered, gates = [], 0.0, []
        area_covered: dict[int, float] = defaultdict(float)
        for c, cid, key, area_id, probe_id, metric, weight, takes_area_feedback in plain:
            subs = assignments.get((pid, cid, "submitted"), 0)
            assigned = assignments.get((pid, cid, "assigned"), 0)
            open_reviews = assigned + (subs if subs and (pid, cid) not in reconciled else 0)
            fb = fb_criterion.get((pid, cid), 0)
            if takes_area_feedback:
                fb += fb_area.get((pid, area_id), 0)
            cell = _cell(
                findings.get((pid, probe_id, metric), NO_FINDINGS) if probe_id else NO_FINDINGS,
                docs.get((pid, cid), 0), fb, open_reviews, (pid, cid) in overrides, snap_criteria.get(key),
            )
            if cell.label in COVERED_LABELS:
                covered += weight
                area_covered[area_id] += weight
            if c.is_gate:
                gates.append(_gate_status(c, cell, snap_caps))
            cells.append(cell)
        row = ProviderRow(provider=p, cells=cells, coverage_now=round(covered, 4), gates=gates,
                          clusters=clusters.get(p.pk, []))
        row.below_floor = covered < rubric.coverage_floor
        row.areas_below_floor = [
            a.key for a in areas if area_share.get(a.pk) and area_covered[a.pk] / area_share[a.pk] < rubric.area_coverage_floor
        ]
        if assignment is not None:
            row.snapshot_coverage = assignment.coverage
            row.tier = assignment.tier
            row.probabilities = sorted(
                ((k, float(v)) for k, v in (assignment.probabilities or {}).items()), key=lambda kv: -kv[1]
            )
        counts: dict[str, int] = defaultdict(int)
        for cell in cells:
            counts[cell.label] += 1
        row.counts = dict(counts)
        rows.append(row)

    runs = dict(
        ProbeRun.objects.filter(cycle=cycle).values_list("status").annotate(n=Count("id")).order_by()
    )
    running = list(
        ProbeRun.objects.filter(cycle=cycle, status=ProbeRun.Status.RUNNING)
        .values("id", "probe_id", "cluster__name", "progress_done", "progress_total")
        .order_by("id")[:FAILED_RUNS_SHOWN]
    )
    failed_runs = list(
        probe_runs_with_errors(ProbeRun.objects.filter(cycle=cycle))
        .filter(Q(status=ProbeRun.Status.ERROR) | Q(has_harness_errors=True))
        .select_related("cluster__provider")
        .order_by("-id")[:FAILED_RUNS_SHOWN]
    )

    review = {
        "assigned": sum(n for (_, _, s), n in assignments.items() if s == "assigned"),
        "submitted": sum(n for (_, _, s), n in assignments.items() if s == "submitted"),
        "reconciled": len(reconciled),
    }
    submitted_units = {(p, c) for (p, c, s) in assignments if s == "submitted"}
    review["awaiting_reconciliation"] = len(
        {u for u in submitted_units if u not in reconciled and assignments.get((*u, "assigned"), 0) == 0}
        - reconciled
    )
    feedback_totals = {
        "responses": sum(fb_criterion.values()) + sum(fb_area.values()),
        "misplaced": misplaced_feedback,
        "imports": FeedbackImport.objects.filter(cycle=cycle).count(),
    }
    reports = list(Report.objects.filter(cycle=cycle).order_by("-id")[:5])
    upcoming = next_scheduled_runs_by_cluster(cluster_ids=[c.pk for cs in clusters.values() for c in cs])
    next_runs = [(c, upcoming[c.pk]) for cs in clusters.values() for c in cs if c.pk in upcoming]
    workbench = Workbench(
        cycle=cycle, rubric=rubric, criteria=criteria, areas=areas, rows=rows, clusters=dict(clusters),
        runs=runs, running=running, failed_runs=failed_runs, review=review, feedback=feedback_totals,
        snapshot=snapshot, reports=reports, readiness=[], next_runs=next_runs,
    )
    workbench.readiness = readiness_check(workbench)
    return workbench


def readiness_check(wb: Workbench) -> list[ReadinessItem]:
    """What must hold before tiers are computed (blocking) and what the analyst should know."""
    active = wb.runs.get(ProbeRun.Status.PENDING, 0) + wb.runs.get(ProbeRun.Status.RUNNING, 0)
    below = [r.provider.name for r in wb.rows if r.coverage_now < wb.rubric.coverage_floor]
    gates_open = sorted({
        f"{r.provider.name}: {g['criterion']}" for r in wb.rows for g in r.gates if g["status"] == "not measured"
    })
    return [
        ReadinessItem(
            f"The rubric version {wb.rubric.name} {wb.rubric.version} is frozen",
            wb.rubric.status == RubricVersion.Status.FROZEN,
        ),
        ReadinessItem(f"The peer set has providers ({len(wb.rows)})", bool(wb.rows)),
        ReadinessItem(
            "No probe run is pending or running" if not active else f"{active} probe runs are pending or running",
            not active,
        ),
        ReadinessItem(
            "All customer feedback rates criteria that take it" if not wb.feedback["misplaced"]
            else f"{wb.feedback['misplaced']} customer-feedback rows rate something that takes no customer feedback "
            "(roll back their import)",
            not wb.feedback["misplaced"],
        ),
        ReadinessItem(
            "No review waits for reconciliation" if not wb.review["awaiting_reconciliation"]
            else f"{wb.review['awaiting_reconciliation']} reviewed criteria wait for reconciliation",
            not wb.review["awaiting_reconciliation"], blocking=False,
        ),
        ReadinessItem(
            "Every provider has evidence above the coverage floor" if not below
            else f"Below the coverage floor ({wb.rubric.coverage_floor:.0%}), so Not rated: {', '.join(below)}",
            not below, blocking=False,
        ),
        ReadinessItem(
            "Every gate is measured" if not gates_open else f"Gates not measured: {'; '.join(gates_open[:10])}"
            + (f" and {len(gates_open) - 10} more" if len(gates_open) > 10 else ""),
            not gates_open, blocking=False,
        ),
    ]


def probe_runs_with_errors(queryset: Any) -> Any:
    """Annotate ``has_harness_errors``: the run holds findings where our harness broke."""
    return queryset.annotate(
        has_harness_errors=Exists(Finding.objects.filter(run=OuterRef("pk"), outcome="error"))
    )


def cycle_workbench_list() -> list[Cycle]:
    return list(Cycle.objects.select_related("rubric_version").annotate(n_providers=Count("providers")))


def reviewer_assignments_get(*, cycle: Cycle, reviewer: Any) -> list[ReviewAssignment]:
    """A reviewer's own assignments in ``cycle`` (all a reviewer sees on the workbench)."""
    return list(
        ReviewAssignment.objects.filter(cycle=cycle, reviewer=reviewer)
        .select_related("provider", "criterion")
        .order_by("provider__name", "criterion__position", "criterion__key")
    )
