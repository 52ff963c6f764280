"""The shared vocabulary of a rating: tiers, probe outcomes, areas, the rubric spec, its fingerprint.

Every app and the pure engine speak these words; this module is the only place they are
listed. The models' ``TextChoices`` are built from the enums here (``choices_for``), the
engine (``ratings.engine_types``), the probe catalog (``probes.catalog.base``), the YAML
format (``rubric.yaml_format``) and the report builder (``reports.context``) import them.

Pure: standard library only, no Django, no clock.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from enum import StrEnum


# ------------------------------------------------------------------------------------------ tiers
class Tier(StrEnum):
    """The five published tiers, best first (index 0 is Platinum; a larger index is worse)."""

    PLATINUM = "platinum"
    GOLD = "gold"
    SILVER = "silver"
    BRONZE = "bronze"
    UNDERPERFORMING = "underperforming"


TIERS: tuple[str, ...] = tuple(t.value for t in Tier)  # best first
NOT_RATED = "not_rated"  # below the coverage floor: no tier is published
TIER_LABELS: dict[str, str] = {
    Tier.PLATINUM.value: "Platinum",
    Tier.GOLD.value: "Gold",
    Tier.SILVER.value: "Silver",
    Tier.BRONZE.value: "Bronze",
    Tier.UNDERPERFORMING.value: "Underperforming",
    NOT_RATED: "Not rated",
}
# Every label dict is keyed by plain strings, so it serialises and compares like the values.
# A failed gate caps the tier; capping at the top tier would cap nothing.
GATE_CAP_TIERS: tuple[str, ...] = TIERS[1:]


# --------------------------------------------------------------------------------------- outcomes
class Outcome(StrEnum):
    """A probe finding's outcome; see the outcome table in docs/domain.md."""

    PASS = "pass"  # noqa: S105 - an outcome, not a password
    FAIL = "fail"
    WARN = "warn"
    ERROR = "error"  # our harness broke: missing, never held against the provider
    PROVIDER_ERROR = "provider_error"  # counts as a fail
    TIMEOUT = "timeout"  # censored at the deadline: the worst anchor
    NOT_APPLICABLE = "not_applicable"  # excluded from scores and from coverage
    # The provider did not allow or provide what the probe needs (no API, access refused):
    # scored at the worst anchor, and shown as declined rather than as a measured failure.
    DECLINED = "declined"


# Worst first: how a table that shows one outcome for several findings picks it.
OUTCOME_SEVERITY: tuple[str, ...] = (
    Outcome.FAIL.value, Outcome.PROVIDER_ERROR.value, Outcome.TIMEOUT.value, Outcome.DECLINED.value,
    Outcome.ERROR.value, Outcome.WARN.value, Outcome.PASS.value, Outcome.NOT_APPLICABLE.value,
)
OUTCOME_LABELS: dict[str, str] = {
    Outcome.PASS.value: "Pass",
    Outcome.FAIL.value: "Fail",
    Outcome.WARN.value: "Warn",
    Outcome.ERROR.value: "Error (our harness)",
    Outcome.PROVIDER_ERROR.value: "Provider error",
    Outcome.TIMEOUT.value: "Timeout",
    Outcome.NOT_APPLICABLE.value: "Not applicable",
    Outcome.DECLINED.value: "Declined by the provider",
}


# ------------------------------------------------------------------------------ areas and criteria
class Area(StrEnum):
    """The four areas of the default rubric; every probe of the catalog is filed under one."""

    PROVISIONING = "provisioning"
    RELIABILITY = "reliability"
    MONITORING = "monitoring"
    SECURITY = "security"


class EvidenceKind(StrEnum):
    PROBE = "probe"
    DOC_REVIEW = "doc_review"
    CUSTOMER_FEEDBACK = "customer_feedback"
    OVERRIDE = "override"  # an approved analyst override; never a kind a rubric criterion declares


# The kinds a rubric criterion may declare, in canonical order (fixes the bootstrap's draw order).
EVIDENCE_KIND_ORDER: tuple[EvidenceKind, ...] = (
    EvidenceKind.PROBE,
    EvidenceKind.DOC_REVIEW,
    EvidenceKind.CUSTOMER_FEEDBACK,
)
EVIDENCE_KINDS: tuple[str, ...] = tuple(k.value for k in EVIDENCE_KIND_ORDER)
EVIDENCE_KIND_LABELS: dict[str, str] = {
    EvidenceKind.PROBE.value: "Probe",
    EvidenceKind.DOC_REVIEW.value: "Documentation review",
    EvidenceKind.CUSTOMER_FEEDBACK.value: "Customer feedback",
}


class Direction(StrEnum):
    HIGHER = "higher"  # more is better (bandwidth)
    LOWER = "lower"  # less is better (latency, leaked lines)


DIRECTION_LABELS: dict[str, str] = {Direction.HIGHER.value: "Higher is better", Direction.LOWER.value: "Lower is better"}


class Scale(StrEnum):
    LINEAR = "linear"
    LOG = "log"


SCALE_LABELS: dict[str, str] = {Scale.LINEAR.value: "Linear", Scale.LOG.value: "Logarithmic"}


def choices_for(values: tuple[str, ...] | type[StrEnum], labels: dict[str, str]) -> list[tuple[str, str]]:
    """``[(value, label), ...]`` in vocabulary order: what a model field's ``choices`` takes."""
    return [(str(v), labels[v]) for v in values]


def choice_members(enum: type[StrEnum], labels: dict[str, str]) -> list[tuple[str, tuple[str, str]]]:
    """``[(NAME, (value, label)), ...]``: the members of a ``TextChoices`` built from ``enum``.

    ``models.TextChoices("Outcome", choice_members(Outcome, OUTCOME_LABELS))`` gives the
    model field the same values, in the same order, as the vocabulary (Django stays out of here).
    """
    return [(member.name, (member.value, labels[member])) for member in enum]


# ---------------------------------------------------------------------------------------- rubric
@dataclass(frozen=True)
class TierFloors:
    """Absolute floors: a tier needs a composite of at least its floor.

    Below ``bronze`` a provider is Underperforming whatever its peers do. Floors only ever
    lower a peer-relative tier; they never raise one.
    """

    platinum: float = 0.80
    gold: float = 0.65
    silver: float = 0.50
    bronze: float = 0.40

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.platinum, self.gold, self.silver, self.bronze)


@dataclass(frozen=True)
class ScoringParams:
    """The rubric version's scoring parameters (rubric.models.RubricVersion fields)."""

    coverage_floor: float = 0.6
    area_coverage_floor: float = 0.5
    bootstrap_size: int = 2000
    boundary_confidence: float = 0.9
    borderline_threshold: float = 0.7
    hysteresis_threshold: float = 0.2
    feedback_prior_strength: float = 5.0
    # The rating (1-5) customer feedback is shrunk toward: a rubric constant, never the peer
    # mean, so one provider's ratings never move another's score. 3.0 is the scale's middle.
    feedback_prior_mean: float = 3.0
    # A tier boundary needs a gap of at least this many composite points (0-1) besides the
    # bootstrap's confirmation; 0 keeps any confirmed gap.
    boundary_min_gap: float = 0.0
    tier_floors: TierFloors = field(default_factory=TierFloors)
    ci_level: float = 0.95


@dataclass(frozen=True)
class AreaSpec:
    key: str
    weight: float


@dataclass(frozen=True)
class CriterionSpec:
    """One criterion. ``probe_metric`` empty means the probe's pass/fail outcome is scored.

    Anchors are in the evidence's raw unit for measured probes; for pass/fail probes they
    apply to the pass rate (usually best=1, worst=0). Doc reviews (0-4) and customer
    ratings (1-5) map onto [0, 1] by their own fixed scales and ignore the anchors.
    """

    key: str
    area: str
    weight: float
    evidence_kinds: tuple[EvidenceKind, ...]
    anchor_best: float
    anchor_worst: float
    direction: Direction = Direction.HIGHER
    scale: Scale = Scale.LINEAR
    probe_id: str = ""
    probe_metric: str = ""
    is_gate: bool = False
    gate_cap_tier: str = ""
    gate_threshold: float = 0.5

    @property
    def is_pass_rate(self) -> bool:
        return not self.probe_metric


@dataclass(frozen=True)
class RubricSpec:
    """A frozen rubric version as the engine scores it.

    ``fingerprint`` is the one recorded when the version was frozen
    (``RubricVersion.fingerprint``, see :func:`rubric_fingerprint`), carried through as
    stored, never recomputed by whoever builds the spec: the rubric app verifies the stored
    content against it before a spec is built, and the engine refuses a spec without one.
    """

    id: str
    name: str
    version: str
    params: ScoringParams
    areas: tuple[AreaSpec, ...]
    criteria: tuple[CriterionSpec, ...]
    fingerprint: str


# ----------------------------------------------------------------------------------- fingerprint
FINGERPRINT_RE = re.compile(r"^[0-9a-f]{64}$")


def rubric_fingerprint(canonical_text: str) -> str:
    """THE rubric fingerprint: sha256 hex of a version's canonical export (``yaml_format.emit_rubric``).

    Recorded on the version when it is frozen, and checked against a fresh export of the
    stored rows before every scoring run (``rubric.selectors.rubric_version_verify_fingerprint``).
    """
    return hashlib.sha256(canonical_text.encode("utf-8")).hexdigest()


def is_fingerprint(value: object) -> bool:
    """A recorded fingerprint's form (64 lowercase hex digits); a draft has none."""
    return isinstance(value, str) and FINGERPRINT_RE.match(value) is not None
