"""Validation: refuse an input that cannot be scored, naming the first offending row or field.

Pure: standard library only. Raises ``ScoringInputError`` or one of its subclasses.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from ratings.engine_types import (
    EVIDENCE_KIND_ORDER,
    TIERS,
    CriterionSpec,
    EmptyPeerSetError,
    EvidenceKind,
    MixedRubricVersionError,
    Outcome,
    RubricFingerprintError,
    RubricSpec,
    Scale,
    ScoringInput,
    ScoringInputError,
    is_finite_number,
)
from rubric.spec import is_fingerprint

MAX_SEED = 2**63 - 1


def _check_fraction(name: str, value: object, *, low: float = 0.0, high: float = 1.0) -> None:
    if not is_finite_number(value) or not (low <= float(value) <= high):  # type: ignore[arg-type]
        raise ScoringInputError(f"rubric parameter {name}={value!r} must be a number in [{low}, {high}]")


def validate_rubric(rubric: RubricSpec) -> None:
    p = rubric.params
    for name in ("coverage_floor", "area_coverage_floor", "hysteresis_threshold", "boundary_min_gap"):
        _check_fraction(name, getattr(p, name))
    for name in ("boundary_confidence", "borderline_threshold", "ci_level"):
        _check_fraction(name, getattr(p, name))
        if getattr(p, name) <= 0:
            raise ScoringInputError(f"rubric parameter {name} must be above 0")
    if not isinstance(p.bootstrap_size, int) or isinstance(p.bootstrap_size, bool) or p.bootstrap_size < 1:
        raise ScoringInputError(
            f"bootstrap_size={p.bootstrap_size!r} ({type(p.bootstrap_size).__name__}) must be a positive Python int"
        )
    if not is_finite_number(p.feedback_prior_strength) or p.feedback_prior_strength < 0:
        raise ScoringInputError("feedback_prior_strength must be a finite number >= 0")
    prior_mean = p.feedback_prior_mean
    if not is_finite_number(prior_mean) or not (1 <= prior_mean <= 5):
        raise ScoringInputError(f"feedback_prior_mean={prior_mean!r} must be a rating in [1, 5]")
    floors = p.tier_floors.as_tuple()
    for name, value in zip(("platinum", "gold", "silver", "bronze"), floors, strict=True):
        _check_fraction(f"tier_floors.{name}", value)
    if any(a < b for a, b in itertools.pairwise(floors)):
        raise ScoringInputError(f"tier floors must not increase from platinum to bronze: {floors}")
    if not rubric.areas:
        raise ScoringInputError("the rubric has no areas")
    area_keys = [a.key for a in rubric.areas]
    if len(set(area_keys)) != len(area_keys):
        raise ScoringInputError("duplicate area keys in the rubric")
    for area in rubric.areas:
        if not is_finite_number(area.weight) or area.weight <= 0:
            raise ScoringInputError(f"area {area.key!r}: weight must be a finite number > 0")
    keys = [c.key for c in rubric.criteria]
    if len(set(keys)) != len(keys):
        raise ScoringInputError("duplicate criterion keys in the rubric")
    for c in rubric.criteria:
        _validate_criterion(c, set(area_keys))
    if not is_fingerprint(rubric.fingerprint):
        # The rubric app checks the stored content against this before it builds a spec
        # (rubric.selectors.rubric_version_verify_fingerprint); the engine only scores frozen ones.
        raise RubricFingerprintError(
            f"rubric {rubric.name} {rubric.version} carries no fingerprint recorded at freeze; "
            "only frozen versions are scored"
        )


def _validate_criterion(c: CriterionSpec, areas: set[str]) -> None:
    where = f"criterion {c.key!r}"
    if c.area not in areas:
        raise ScoringInputError(f"{where}: unknown area {c.area!r}")
    if not is_finite_number(c.weight) or c.weight <= 0:
        raise ScoringInputError(f"{where}: weight must be a finite number > 0")
    kinds = tuple(c.evidence_kinds)
    if not kinds or any(k not in EVIDENCE_KIND_ORDER for k in kinds) or len(set(kinds)) != len(kinds):
        raise ScoringInputError(f"{where}: evidence_kinds must be distinct values of {list(map(str, EVIDENCE_KIND_ORDER))}")
    if not (is_finite_number(c.anchor_best) and is_finite_number(c.anchor_worst)):
        raise ScoringInputError(f"{where}: anchors must be finite numbers")
    if c.anchor_best == c.anchor_worst:
        raise ScoringInputError(f"{where}: anchor_best and anchor_worst must differ")
    higher = c.anchor_best > c.anchor_worst
    if (c.direction == "higher") != higher:
        raise ScoringInputError(f"{where}: direction {c.direction} contradicts the anchors")
    if c.scale == Scale.LOG and min(c.anchor_best, c.anchor_worst) <= 0:
        raise ScoringInputError(f"{where}: a log scale needs positive anchors")
    if EvidenceKind.PROBE in kinds and c.is_pass_rate and not higher:
        raise ScoringInputError(f"{where}: a pass rate is higher-is-better")
    if c.is_gate and c.gate_cap_tier not in TIERS:
        raise ScoringInputError(f"{where}: gate_cap_tier {c.gate_cap_tier!r} is not a tier")
    if not is_finite_number(c.gate_threshold) or not (0 <= c.gate_threshold <= 1):
        raise ScoringInputError(f"{where}: gate_threshold must be in [0, 1]")


def validate_input(inp: ScoringInput) -> None:
    """Raise a ``ScoringInputError`` subclass naming the first problem; return None if fine."""
    validate_rubric(inp.rubric)
    if not inp.providers:
        raise EmptyPeerSetError("no providers to score: the peer set is empty")
    if any(not isinstance(p, str) or not p for p in inp.providers):
        raise ScoringInputError("provider keys must be non-empty strings")
    if len(set(inp.providers)) != len(inp.providers):
        raise ScoringInputError("duplicate providers in the peer set")
    if not isinstance(inp.seed, int) or isinstance(inp.seed, bool) or not (0 <= inp.seed <= MAX_SEED):
        raise ScoringInputError(f"seed={inp.seed!r} ({type(inp.seed).__name__}) must be a Python int in [0, 2**63-1]")
    providers = set(inp.providers)
    criteria = {c.key: c for c in inp.rubric.criteria}

    def common(row: Any, kind: EvidenceKind) -> CriterionSpec:
        if row.rubric_version != inp.rubric.id:
            raise MixedRubricVersionError(
                f"{type(row).__name__} for {row.provider}/{row.criterion} is bound to rubric version "
                f"{row.rubric_version!r}, not {inp.rubric.id!r}; versions never mix in one computation"
            )
        if row.provider not in providers:
            raise ScoringInputError(f"evidence for unknown provider {row.provider!r}")
        criterion = criteria.get(row.criterion)
        if criterion is None:
            raise ScoringInputError(f"evidence for unknown criterion {row.criterion!r}")
        if kind not in criterion.evidence_kinds:
            raise ScoringInputError(f"criterion {row.criterion!r} takes no {kind} evidence")
        return criterion

    outcomes = set(Outcome)
    valued = {Outcome.PASS, Outcome.WARN}
    # A cell's checks that do not depend on the row (its version, provider, criterion) run once
    # per cell: the bulk of a cycle is replicates of the same cell. Same checks, same order.
    cells: dict[tuple[Any, Any, Any], tuple[CriterionSpec, bool, bool]] = {}
    for row in inp.probe_observations:
        cell = (row.rubric_version, row.provider, row.criterion)
        try:
            known = cells.get(cell)
        except TypeError:  # an unhashable field: checked row by row, which names it
            known = None
        if known is None:
            criterion = common(row, EvidenceKind.PROBE)
            known = (criterion, not criterion.is_pass_rate, criterion.scale == Scale.LOG)
            cells[cell] = known
        criterion, measured, log_scale = known
        outcome = row.outcome
        # A member of Outcome is a known outcome (Enum.__hash__ is Python code: the set is asked
        # only about other values, such as a plain string).
        if type(outcome) is not Outcome and outcome not in outcomes:
            raise ScoringInputError(f"unknown outcome {row.outcome!r}")
        if not (type(row.critical) is bool or isinstance(row.critical, bool)) or not isinstance(row.ref, str):
            raise ScoringInputError(f"probe observation for {row.provider}/{row.criterion}: critical must be a bool, ref a str")
        value = row.value
        if value is not None and not (type(value) is float and math.isfinite(value)) and not is_finite_number(value):
            raise ScoringInputError(f"probe value {row.value!r} for {row.provider}/{row.criterion} is not finite")
        # A pass or warn must say what was measured; a valueless fail is censored at the worst anchor.
        if measured and (outcome is Outcome.PASS or outcome is Outcome.WARN
                         or (type(outcome) is not Outcome and outcome in valued)):
            if value is None:
                raise ScoringInputError(f"measured criterion {row.criterion!r} got a {row.outcome} finding without a value")
            if log_scale and value < 0:
                raise ScoringInputError(f"log-scale criterion {row.criterion!r} got a negative value {row.value}")
    seen: set[tuple[str, str, str]] = set()
    reconciled: set[tuple[str, str]] = set()
    for row in inp.doc_scores:
        common(row, EvidenceKind.DOC_REVIEW)
        if not is_finite_number(row.score) or not (0 <= row.score <= 4):
            raise ScoringInputError(f"doc review score {row.score!r} for {row.provider}/{row.criterion} is not in 0-4")
        key = (row.provider, row.criterion, row.reviewer)
        if row.reconciled:
            if key[:2] in reconciled:
                raise ScoringInputError(f"two reconciled doc scores for {row.provider}/{row.criterion}")
            reconciled.add(key[:2])
        elif key in seen:
            raise ScoringInputError(f"reviewer {row.reviewer!r} scored {row.provider}/{row.criterion} twice")
        else:
            seen.add(key)
    seen.clear()
    for row in inp.feedback:
        common(row, EvidenceKind.CUSTOMER_FEEDBACK)
        if isinstance(row.rating, bool) or not isinstance(row.rating, int) or not (1 <= row.rating <= 5):
            raise ScoringInputError(
                f"customer rating {row.rating!r} ({type(row.rating).__name__}) for {row.provider}/{row.criterion} "
                "must be a Python int from 1 to 5"
            )
        key = (row.provider, row.criterion, row.respondent)
        if key in seen:
            raise ScoringInputError(f"respondent {row.respondent!r} rated {row.provider}/{row.criterion} twice")
        seen.add(key)
    overridden: set[tuple[str, str]] = set()
    for row in inp.overrides:
        if row.rubric_version != inp.rubric.id:
            raise MixedRubricVersionError(
                f"override for {row.provider}/{row.criterion} is bound to rubric version {row.rubric_version!r}, "
                f"not {inp.rubric.id!r}"
            )
        if row.provider not in providers or row.criterion not in criteria:
            raise ScoringInputError(f"override for unknown provider/criterion {row.provider}/{row.criterion}")
        if not is_finite_number(row.score) or not (0 <= row.score <= 1):
            raise ScoringInputError(f"override score {row.score!r} for {row.provider}/{row.criterion} is not in 0-1")
        if (not isinstance(row.reason, str) or type(row.approvals) is not int
                or not isinstance(row.disputes, tuple) or not all(isinstance(r, str) for r in row.disputes)):
            raise ScoringInputError(
                f"override for {row.provider}/{row.criterion}: reason must be a str, approvals an int, "
                "disputes a tuple of finding refs"
            )
        if (row.provider, row.criterion) in overridden:
            raise ScoringInputError(f"two overrides for {row.provider}/{row.criterion}")
        overridden.add((row.provider, row.criterion))
    previous_seen: set[str] = set()
    for prev in inp.previous_tiers:
        if prev.provider not in providers:
            raise ScoringInputError(f"previous tier for unknown provider {prev.provider!r}")
        if prev.tier not in TIERS:
            raise ScoringInputError(f"previous tier {prev.tier!r} of {prev.provider} is not a tier")
        if prev.provider in previous_seen:
            raise ScoringInputError(f"two previous tiers for {prev.provider}")
        previous_seen.add(prev.provider)

