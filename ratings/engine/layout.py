"""Layout: the rubric's slots, each provider's streams, statuses, weights and coverage.

Coverage is exact: every weight is read as the decimal it is written as (its shortest repr,
so 0.1 is 1/10) and the shares are ``fractions.Fraction``; a floor is met when the exact share
is at least the floor's decimal. Area B with criteria weighted 0.1, 0.2 and 0.3 and only the
0.3 one measured has coverage exactly 1/2 (float arithmetic says 0.4999999999999999).

Statuses: ``measured``; ``declined`` (every usable finding was declined: counted at the worst
anchor in the composite, in the coverage denominator but not its numerator); ``missing`` (in
the denominator only); ``not_applicable`` (in neither). An area takes part in the composite
when its scored share (measured + declined) reaches the area floor; a provider is rated when
its scored share (measured + declined, over the areas that take part) reaches the coverage
floor, so declining is never better than being measured at the worst anchor: a provider that
declines every probe is rated, on the worst anchor, not Not rated. The published ``coverage``
stays the measured share only.

Gates: a gate criterion fails, whatever its score, when any of its findings is critical, or
when any replicate of a pass/fail gate fails (fail, provider_error, timeout, declined): a
breach seen once is a breach. The first such replicate, in the canonical order of the
findings' refs, is reported.

Overrides: an approved override replaces a criterion's evidence (and so a failed replicate),
but a gate failed by a critical finding stays failed unless the override lifts it
(``CriterionOverride.lifts_critical``: "measurement was wrong", two approvers, every critical
finding named). Whether it was kept or lifted is recorded on the provider for the flags.

Pure: standard library and numpy.
"""

from __future__ import annotations

import dataclasses
import operator
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from ratings.engine.streams import (
    FAILING_OUTCOMES,
    Stream,
    doc_stream,
    feedback_stream,
    measured_streams,
    pass_rate_stream,
    probe_outcomes,
)
from ratings.engine_types import (
    EVIDENCE_KIND_ORDER,
    AreaSpec,
    CriterionSpec,
    EvidenceKind,
    ProbeObservation,
    RubricSpec,
    ScoringInput,
)


@lru_cache(maxsize=4096)
def _exact(value: float) -> Fraction:
    return Fraction(repr(value))


def exact(value: float) -> Fraction:
    """The decimal a rubric number is written as: Fraction('0.1') == 1/10, not the binary float."""
    return _exact(float(value))


@dataclass(frozen=True)
class GateFailure:
    reason: str  # "critical" | "failed_replicate"
    replicate: int  # 1-based, in canonical order
    replicates: int
    finding: str


@dataclass
class Provider:
    key: str
    streams: list[Stream]
    status: dict[str, str]  # criterion -> measured | declined | missing | not_applicable
    n_missing: dict[str, int]
    gate_failures: dict[str, GateFailure] = dataclasses.field(default_factory=dict)
    critical_overridden: set[str] = dataclasses.field(default_factory=set)  # critical gate lifted by an override
    critical_kept: set[str] = dataclasses.field(default_factory=set)  # an override that could not lift it
    rated: bool = False
    coverage: float = 0.0
    coverage_exact: Fraction = Fraction(0)
    area_weight: dict[str, float] = dataclasses.field(default_factory=dict)  # normalised, applicable areas
    area_coverage: dict[str, float] = dataclasses.field(default_factory=dict)
    area_measured: dict[str, bool] = dataclasses.field(default_factory=dict)  # takes part in the composite
    stream_weight: dict[int, float] = dataclasses.field(default_factory=dict)  # slot -> weight in its area
    applicable_weight: dict[str, float] = dataclasses.field(default_factory=dict)  # area -> criterion weight


class Layout:
    """The rubric's slots: one per (criterion, kind), ordered by area key, criterion key, kind."""

    def __init__(self, rubric: RubricSpec) -> None:
        self.areas: list[AreaSpec] = sorted(rubric.areas, key=lambda a: a.key)
        self.area_index = {a.key: i for i, a in enumerate(self.areas)}
        self.criteria: list[CriterionSpec] = sorted(
            rubric.criteria, key=lambda c: (self.area_index[c.area], c.key)
        )
        self.by_key = {c.key: c for c in self.criteria}
        self.slots: list[tuple[CriterionSpec, EvidenceKind]] = [
            (c, k) for c in self.criteria for k in EVIDENCE_KIND_ORDER if k in c.evidence_kinds
        ]
        self.slot_of = {(c.key, k): i for i, (c, k) in enumerate(self.slots)}
        self.planned: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # plan_weights, by statuses and slots


_CELL = operator.attrgetter("provider", "criterion")


def _group(rows: Iterable[Any]) -> dict[tuple[str, str], list[Any]]:
    grouped: dict[tuple[str, str], list[Any]] = {}
    rows = list(rows)
    for cell, row in zip(map(_CELL, rows), rows, strict=True):
        found = grouped.get(cell)
        if found is None:
            grouped[cell] = [row]
        else:
            found.append(row)
    return grouped


def _gate_failure(c: CriterionSpec, rows: list[ProbeObservation]) -> GateFailure | None:
    if not rows:
        return None
    ordered = sorted(
        rows, key=lambda r: (r.ref, str(r.outcome), -np.inf if r.value is None else float(r.value), r.critical)
    )
    for i, r in enumerate(ordered):
        if r.critical:
            return GateFailure("critical", i + 1, len(ordered), r.ref)
    if c.is_pass_rate:
        for i, r in enumerate(ordered):
            if r.outcome in FAILING_OUTCOMES:
                return GateFailure("failed_replicate", i + 1, len(ordered), r.ref)
    return None


def build_providers(inp: ScoringInput, layout: Layout) -> list[Provider]:
    params = inp.rubric.params
    probes, docs, feedback = _group(inp.probe_observations), _group(inp.doc_scores), _group(inp.feedback)
    probe_streams: dict[tuple[str, str], Stream] = {}
    probe_meta: dict[tuple[str, str], tuple[int, bool]] = {}
    for c in layout.criteria:
        if EvidenceKind.PROBE not in c.evidence_kinds:
            continue
        slot = layout.slot_of[(c.key, EvidenceKind.PROBE)]
        measured_cells: dict[str, list[ProbeObservation]] = {}
        for key in inp.providers:
            rows = probes.get((key, c.key))
            if rows is None:
                continue  # no findings: (0 errors, not all not-applicable), the default below
            usable, errors, all_na = probe_outcomes(rows)
            probe_meta[(key, c.key)] = (errors, all_na)
            if usable and c.is_pass_rate:
                probe_streams[(key, c.key)] = pass_rate_stream(slot, c, usable)
            elif usable:
                measured_cells[key] = usable
        for key, stream in measured_streams(slot, c, measured_cells).items():
            probe_streams[(key, c.key)] = stream
    overrides = {(o.provider, o.criterion): o for o in inp.overrides}
    # Per criterion, once: whether it is a probe gate, and the slots of its doc and feedback kinds.
    plan = [
        (
            c,
            c.key,
            c.is_gate and EvidenceKind.PROBE in c.evidence_kinds,
            layout.slot_of[(c.key, EvidenceKind.DOC_REVIEW)] if EvidenceKind.DOC_REVIEW in c.evidence_kinds else None,
            layout.slot_of[(c.key, EvidenceKind.CUSTOMER_FEEDBACK)]
            if EvidenceKind.CUSTOMER_FEEDBACK in c.evidence_kinds else None,
        )
        for c in layout.criteria
    ]
    no_meta = (0, False)
    out = []
    for key in sorted(inp.providers):
        streams: list[Stream] = []
        status: dict[str, str] = {}
        n_missing: dict[str, int] = {}
        failures: dict[str, GateFailure] = {}
        lifted: set[str] = set()
        kept: set[str] = set()
        for c, ckey, probe_gate, doc_slot, feedback_slot in plan:
            cell = (key, ckey)
            errors, all_na = probe_meta.get(cell, no_meta)
            n_missing[ckey] = errors
            if overrides and cell in overrides:  # the approved value replaces the evidence, noise-free
                override = overrides[(key, c.key)]
                value = float(override.score)
                slot = layout.slot_of[(c.key, c.evidence_kinds[0])]
                streams.append(Stream(slot, EvidenceKind.OVERRIDE, value, value, 0, np.array([value]), np.array([1.0])))
                status[c.key] = "measured"
                if c.is_gate and EvidenceKind.PROBE in c.evidence_kinds:
                    rows = probes.get((key, c.key), [])
                    critical = frozenset(r.ref for r in rows if r.critical)
                    if critical and override.lifts_critical(critical):
                        lifted.add(c.key)
                    elif critical:  # the cap of a critical finding survives any other override
                        failures[c.key] = _gate_failure(c, rows)  # type: ignore[assignment]
                        kept.add(c.key)
                continue
            if probe_gate:
                failure = _gate_failure(c, probes.get(cell, []))
                if failure is not None:
                    failures[ckey] = failure
            probe_stream = probe_streams.get(cell)
            if doc_slot is None and feedback_slot is None:  # probe evidence only (the bulk of a rubric)
                if probe_stream is not None:
                    streams.append(probe_stream)
                    status[ckey] = "declined" if probe_stream.declined else "measured"
                else:
                    status[ckey] = "not_applicable" if all_na else "missing"
                continue
            found: list[Stream | None] = [probe_stream]
            if doc_slot is not None:
                found.append(doc_stream(doc_slot, docs.get(cell, [])))
            if feedback_slot is not None:
                found.append(
                    feedback_stream(feedback_slot, feedback.get(cell, []),
                                    params.feedback_prior_mean, params.feedback_prior_strength)
                )
            present = [s for s in found if s is not None]
            streams += present
            if present and all(s.declined for s in present):
                status[ckey] = "declined"
            else:
                status[ckey] = "measured" if present else "not_applicable" if all_na else "missing"
        out.append(Provider(key, streams, status, n_missing, failures, critical_overridden=lifted, critical_kept=kept))
    return out


_PLANNED = ("applicable_weight", "area_weight", "area_coverage", "area_measured", "stream_weight")


def plan_weights(p: Provider, layout: Layout, rubric: RubricSpec) -> None:
    """Coverage, area weights and per-stream weights for one provider (values play no part).

    They depend only on the statuses and on which slots have a stream, so providers that share
    both (most of a field) share one exact computation: the layout keeps it, per rubric.
    """
    cache = layout.planned
    key = (rubric.params, tuple(p.status[c.key] for c in layout.criteria), tuple(s.slot for s in p.streams))
    done = cache.get(key)
    if done is None:
        _plan_weights(p, layout, rubric)
        cache[key] = (p.coverage_exact, p.coverage, p.rated, *(dict(getattr(p, name)) for name in _PLANNED))
        return
    p.coverage_exact, p.coverage, p.rated = done[:3]
    for name, value in zip(_PLANNED, done[3:], strict=True):
        setattr(p, name, dict(value))


def _plan_weights(p: Provider, layout: Layout, rubric: RubricSpec) -> None:
    params = rubric.params
    applicable_w: dict[str, Fraction] = defaultdict(Fraction)
    scored_w: dict[str, Fraction] = defaultdict(Fraction)
    measured_w: dict[str, Fraction] = defaultdict(Fraction)
    for c in layout.criteria:
        status, weight = p.status[c.key], exact(c.weight)
        if status != "not_applicable":
            applicable_w[c.area] += weight
        if status in ("measured", "declined"):
            scored_w[c.area] += weight
        if status == "measured":
            measured_w[c.area] += weight
    applicable_areas = [a for a in layout.areas if applicable_w[a.key] > 0]
    p.applicable_weight = {k: float(v) for k, v in applicable_w.items()}
    total = sum((exact(a.weight) for a in applicable_areas), Fraction(0))
    area_share = {a.key: exact(a.weight) / total for a in applicable_areas}
    p.area_weight = {k: float(v) for k, v in area_share.items()}
    area_floor = exact(params.area_coverage_floor)
    coverage = scored = Fraction(0)
    for a in applicable_areas:
        cov = measured_w[a.key] / applicable_w[a.key]
        p.area_coverage[a.key] = float(cov)
        included = scored_w[a.key] > 0 and scored_w[a.key] / applicable_w[a.key] >= area_floor
        p.area_measured[a.key] = included
        if included:
            coverage += area_share[a.key] * cov
            scored += area_share[a.key] * scored_w[a.key] / applicable_w[a.key]
    p.coverage_exact = coverage
    p.coverage = float(coverage)
    # A declined criterion is scored (at the worst anchor), so it counts toward being rated:
    # declining a probe must never buy a "Not rated" that the worst result would not (issue 27).
    p.rated = any(p.area_measured.values()) and scored >= exact(params.coverage_floor)
    kinds_per_criterion: dict[str, int] = defaultdict(int)
    for s in p.streams:
        kinds_per_criterion[layout.slots[s.slot][0].key] += 1
    for s in p.streams:
        c = layout.slots[s.slot][0]
        p.stream_weight[s.slot] = float(exact(c.weight) / scored_w[c.area]) / kinds_per_criterion[c.key]
