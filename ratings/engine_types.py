"""Value types of the pure scoring engine: what goes in, what comes out, what goes wrong.

The engine (``ratings.engine``) takes one frozen ``ScoringInput`` and
returns one frozen ``ScoringResult``. Neither side knows about Django: the selector in
``ratings.selectors`` turns database rows into these types and the service turns the result
back into rows. The input types mirror ``rubric.models`` (RubricVersion, Area, Criterion) and
the three evidence streams of docs/domain.md; every evidence row names its rubric version so
that mixing versions is caught here, not trusted to the caller. The vocabulary (tiers,
outcomes, evidence kinds, the rubric spec) is ``rubric.spec``'s, re-exported here.

This module imports no Django and reads no clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rubric.spec import (  # noqa: F401 - the shared vocabulary, re-exported as the engine's own
    EVIDENCE_KIND_ORDER,
    NOT_RATED,
    TIERS,
    AreaSpec,
    CriterionSpec,
    Direction,
    EvidenceKind,
    Outcome,
    RubricSpec,
    Scale,
    ScoringParams,
    TierFloors,
)


# ----------------------------------------------------------------------------------------- errors
class ScoringInputError(ValueError):
    """The input cannot be scored as given. The message names the offending row or field."""


class MixedRubricVersionError(ScoringInputError):
    """An evidence row names a rubric version other than the one being scored."""


class RubricFingerprintError(ScoringInputError):
    """The rubric has no fingerprint recorded at freeze, or its stored content no longer matches it."""


class EmptyPeerSetError(ScoringInputError):
    """There are no providers to score."""


# --------------------------------------------------------------------------------------- evidence
@dataclass(frozen=True)
class ProbeObservation:
    """One probe replicate (one Finding) bound to one criterion."""

    rubric_version: str
    provider: str
    criterion: str
    outcome: Outcome
    value: float | None = None
    critical: bool = False  # the finding was flagged critical (an isolation breach): fails a gate
    ref: str = ""  # which finding this is (e.g. "finding 812"), named when it fails a gate


@dataclass(frozen=True)
class DocReviewScore:
    """One reviewer's 0-4 score, or the reconciled value (``reconciled=True``, at most one)."""

    rubric_version: str
    provider: str
    criterion: str
    reviewer: str
    score: float
    reconciled: bool = False


@dataclass(frozen=True)
class FeedbackResponse:
    """One respondent's 1-5 rating of a provider on one criterion."""

    rubric_version: str
    provider: str
    criterion: str
    respondent: str
    rating: int


# The one override reason that may lift a gate failed by a critical finding.
MEASUREMENT_WRONG = "measurement_wrong"


@dataclass(frozen=True)
class CriterionOverride:
    """An approved override of one criterion's normalised score (0-1) for one provider.

    It replaces whatever the evidence says for that criterion (counted as measured, without
    resampling noise); proposing and approving it is the reviews workflow's job.

    A critical finding is different: it fails its gate whatever the score, and an override
    does not lift that cap unless it says the measurement itself was wrong
    (``reason == MEASUREMENT_WRONG``), was approved by two people besides its proposer
    (``approvals >= 2``) and names every critical finding of the cell in ``disputes`` (the
    findings' refs, e.g. "finding 812"): a critical finding that arrives later caps again.
    """

    rubric_version: str
    provider: str
    criterion: str
    score: float
    reason: str = "judgement"
    approvals: int = 1
    disputes: tuple[str, ...] = ()

    def lifts_critical(self, refs: frozenset[str]) -> bool:
        """Whether this override lifts a gate failed by the critical findings ``refs``."""
        return self.reason == MEASUREMENT_WRONG and self.approvals >= 2 and bool(refs) and refs <= set(self.disputes)


@dataclass(frozen=True)
class PreviousTier:
    """The tier last published for a provider (same rubric major version; the caller checks)."""

    provider: str
    tier: str


@dataclass(frozen=True)
class ScoringInput:
    rubric: RubricSpec
    providers: tuple[str, ...]
    seed: int
    probe_observations: tuple[ProbeObservation, ...] = ()
    doc_scores: tuple[DocReviewScore, ...] = ()
    feedback: tuple[FeedbackResponse, ...] = ()
    previous_tiers: tuple[PreviousTier, ...] = ()
    overrides: tuple[CriterionOverride, ...] = ()


# ---------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class KindResult:
    """One evidence stream of one criterion: its raw value, its [0, 1] score and its count."""

    kind: str
    value: float  # probe median / pass rate, doc median (0-4), shrunk customer rating (1-5)
    score: float
    n: int
    raw_mean: float | None = None  # customer feedback: the unshrunk mean rating


@dataclass(frozen=True)
class CriterionResult:
    key: str
    area: str
    status: str  # "measured" | "declined" (scored at the worst anchor, not covered) | "missing" | "not_applicable"
    score: float | None
    weight_share: float  # effective weight in the composite (0 when not measured)
    kinds: tuple[KindResult, ...]
    n_missing: int  # harness errors dropped from this criterion
    is_gate: bool
    gate_failed: bool


@dataclass(frozen=True)
class AreaResult:
    key: str
    weight: float  # normalised area weight
    measured: bool
    score: float | None
    coverage: float
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class GateCap:
    """A failed gate. ``reason``: "critical" (a critical finding), "failed_replicate" (a failing
    replicate of a pass/fail gate) or "score" (the criterion's score under its threshold).
    ``replicate`` (1-based, of ``replicates``, in the canonical order of the findings' refs)
    and ``finding`` name the first failing replicate; they are empty for "score"."""

    criterion: str
    cap_tier: str
    score: float
    reason: str = "score"
    replicate: int | None = None
    replicates: int = 0
    finding: str = ""


@dataclass(frozen=True)
class ProviderResult:
    provider: str
    rated: bool
    tier: str  # the published tier, or NOT_RATED
    tier_point: str | None  # the peer-relative tier of the point estimate (floors + gates applied)
    previous_tier: str | None
    hysteresis_held: bool
    probabilities: tuple[tuple[str, float], ...]  # (tier, P) for all five tiers, best first
    composite: float | None
    composite_pessimistic: float | None  # missing criteria and unmeasured areas counted as 0; None if not rated
    ci_low: float | None
    ci_high: float | None
    coverage: float
    borderline: bool
    outlook: str  # "stable" | "positive" | "negative"
    floor_capped: bool
    gate_caps: tuple[GateCap, ...]
    areas: tuple[AreaResult, ...]
    criteria: tuple[CriterionResult, ...]
    flags: tuple[str, ...]


@dataclass(frozen=True)
class Boundary:
    """A tier boundary of the point estimate, between two neighbouring providers."""

    upper_provider: str
    lower_provider: str
    upper_composite: float
    lower_composite: float
    probability: float  # bootstrap P(upper > lower)
    kept: bool


@dataclass(frozen=True)
class ScoringResult:
    engine_version: str
    rubric_id: str
    rubric_name: str
    rubric_version: str
    rubric_fingerprint: str
    seed: int
    bootstrap_size: int
    inputs_hash: str
    providers: tuple[ProviderResult, ...]
    boundaries: tuple[Boundary, ...]

    def provider(self, key: str) -> ProviderResult:
        for result in self.providers:
            if result.provider == key:
                return result
        raise KeyError(key)


def is_finite_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
