"""The scoring engine: evidence -> criterion scores -> areas -> composite -> tiers, with confidence.

Pure: frozen dataclasses in (``engine_types.ScoringInput``), frozen dataclasses out
(``engine_types.ScoringResult``); numpy/scipy only, no Django, no clock, no global RNG.
Same input and seed give byte-identical ``canonical_json`` and therefore the same hash.

Pipeline (docs/domain.md "Scoring"; research/scoring.md section 6):

1. **Criterion values**, one stream per evidence kind present:
   - measured probe: the median of the replicates, taken over their normalised scores
     (equal to normalising the median for an odd count; for an even count it averages the
     two middle scores, which keeps negating a metric + flipping its direction exact);
   - pass/fail probe: ``(k+1)/(n+2)`` with pass = 1, warn = 1/2 (met a lower bar: half a
     pass), fail = provider_error = timeout = 0, then normalised against the anchors;
   - outcomes: ``error`` is dropped (missing, our fault), ``provider_error`` is a fail,
     ``timeout`` is censored at the worst anchor, and so is a ``fail`` of a measured probe
     that carries no value (measured bad, but no number: e.g. a node nobody scrapes),
     ``not_applicable`` is excluded; a criterion
     whose only evidence is not_applicable leaves the coverage denominator too;
   - doc review: the reconciled score if there is one, else the reviewers' median, over 4;
   - customer feedback: ``(v*R + m*C)/(v+m)`` with R the provider's mean rating over v
     respondents, C the peer mean (the mean of the rated providers' means) and m the
     rubric's prior strength, mapped from 1-5 onto [0, 1].
   A criterion measured by several kinds scores the mean of its kinds. An approved override
   (``CriterionOverride``, 0-1) replaces a criterion's evidence for one provider, noise-free.
2. **Normalisation** against the rubric's anchors, linear or log, clipped to [0, 1].
3. **Aggregation**: area score = weighted mean over measured criteria; area coverage =
   measured share of the area's applicable weight; an area under ``area_coverage_floor`` is
   unmeasured. Composite = area-weighted mean over measured areas; coverage = measured share
   of the applicable weight. Below ``coverage_floor`` the provider is Not rated: it gets no
   tier, and it takes no part in anyone else's tier or peer mean.
4. **Gates**: a gate criterion scoring under its threshold caps the tier (never raises it).
5. **Bootstrap** (B from the rubric, seeded): within each provider, resample probe
   replicates, reviewers and respondents, and rerun everything above plus the tier rule of
   ``ratings.tiering`` in every replicate. Each provider draws from its own stream, keyed by
   the seed and the provider's name, one uniform per replicate per (criterion, kind) slot of
   the rubric: common random numbers, so providers and rows can be shuffled, a Not-rated
   provider can be added, and one value can change without moving anyone else's draws.
   Each stream's resampled statistic has an exact small discrete distribution (order
   statistics for medians, a convolution for pass counts and rating sums), so one uniform
   per slot and replicate is inverted through its CDF instead of drawing and sorting n
   indices: that is what makes 100 providers x 150 criteria x B=2000 cheap.
6. **Tiers** (``ratings.tiering``): Ckmeans boundaries kept only where neighbours differ with
   bootstrap probability >= ``boundary_confidence``; floors; gates; tier probabilities,
   composite CI, borderline/outlook flag, hysteresis against the last published tier.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.stats import binom

from ratings import tiering
from ratings.engine_types import (
    EVIDENCE_KIND_ORDER,
    NOT_RATED,
    TIERS,
    AreaResult,
    AreaSpec,
    Boundary,
    CriterionResult,
    CriterionSpec,
    DocReviewScore,
    EmptyPeerSetError,
    EvidenceKind,
    FeedbackResponse,
    GateCap,
    KindResult,
    MixedRubricVersionError,
    Outcome,
    ProbeObservation,
    ProviderResult,
    RubricFingerprintError,
    RubricSpec,
    Scale,
    ScoringInput,
    ScoringInputError,
    ScoringResult,
    is_finite_number,
)
from rubric.spec import is_fingerprint

ENGINE_VERSION = "opgrade-scoring/1.0.0"

WARN_CREDIT = 0.5  # a warn met a lower bar: half a pass in (k+1)/(n+2)
COMPOSITE_DECIMALS = 12  # composites are rounded before tiering so float noise cannot split a tie
OUTPUT_DECIMALS = 10  # floats in the canonical serialisation
MAX_SEED = 2**63 - 1

_FAIL_LIKE = {Outcome.FAIL, Outcome.PROVIDER_ERROR, Outcome.TIMEOUT}
_CREDIT = {Outcome.PASS: 2, Outcome.WARN: 1}  # doubled credits; everything else counts 0


# ===================================================================================== hashes
def _canonical_dumps(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rubric_content(rubric: RubricSpec) -> dict[str, Any]:
    """Everything that decides a score, in canonical form (the rubric's id and label excluded)."""
    params = dataclasses.asdict(rubric.params)
    return {
        "params": params,
        "areas": sorted(([a.key, float(a.weight)] for a in rubric.areas), key=lambda x: x[0]),
        "criteria": sorted(
            (
                {
                    "key": c.key,
                    "area": c.area,
                    "weight": float(c.weight),
                    "evidence_kinds": sorted(str(k) for k in c.evidence_kinds),
                    "anchor_best": float(c.anchor_best),
                    "anchor_worst": float(c.anchor_worst),
                    "direction": str(c.direction),
                    "scale": str(c.scale),
                    "probe_id": c.probe_id,
                    "probe_metric": c.probe_metric,
                    "is_gate": bool(c.is_gate),
                    "gate_cap_tier": c.gate_cap_tier,
                    "gate_threshold": float(c.gate_threshold),
                }
                for c in rubric.criteria
            ),
            key=lambda x: x["key"],
        ),
    }


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _hashable(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is float or value is None or kind is bool:
        return value
    if isinstance(value, str):
        return str(value)  # an enum member hashes like its plain value
    return float(value)  # ints (ratings, integral values) hash like the equal float


def inputs_hash(inp: ScoringInput) -> str:
    """Hash of everything the result depends on; rows are sorted, so row order does not count."""

    def rows(items: Iterable[Any]) -> list[str]:
        out = []
        for item in items:
            names = _FIELD_NAMES.get(type(item))
            if names is None:
                names = _FIELD_NAMES[type(item)] = tuple(f.name for f in dataclasses.fields(item))
            # repr() of str/float/bool/None is unambiguous and stable, and far cheaper than json
            out.append(repr(tuple(map(_hashable, map(item.__getattribute__, names)))))
        out.sort()
        return out

    data = {
        "engine_version": ENGINE_VERSION,
        "rubric": {
            "id": inp.rubric.id,
            "name": inp.rubric.name,
            "version": inp.rubric.version,
            "fingerprint": inp.rubric.fingerprint,
            "content": rubric_content(inp.rubric),
        },
        "providers": sorted(inp.providers),
        "seed": inp.seed,
        "probe_observations": rows(inp.probe_observations),
        "doc_scores": rows(inp.doc_scores),
        "feedback": rows(inp.feedback),
        "previous_tiers": rows(inp.previous_tiers),
        "overrides": rows(inp.overrides),
    }
    return _sha256(_canonical_dumps(data))


# ================================================================================= validation
def _check_fraction(name: str, value: object, *, low: float = 0.0, high: float = 1.0) -> None:
    if not is_finite_number(value) or not (low <= float(value) <= high):  # type: ignore[arg-type]
        raise ScoringInputError(f"rubric parameter {name}={value!r} must be a number in [{low}, {high}]")


def validate_rubric(rubric: RubricSpec) -> None:
    p = rubric.params
    for name in ("coverage_floor", "area_coverage_floor", "hysteresis_threshold"):
        _check_fraction(name, getattr(p, name))
    for name in ("boundary_confidence", "borderline_threshold", "ci_level"):
        _check_fraction(name, getattr(p, name))
        if getattr(p, name) <= 0:
            raise ScoringInputError(f"rubric parameter {name} must be above 0")
    if not isinstance(p.bootstrap_size, int) or isinstance(p.bootstrap_size, bool) or p.bootstrap_size < 1:
        raise ScoringInputError(f"bootstrap_size={p.bootstrap_size!r} must be a positive integer")
    if not is_finite_number(p.feedback_prior_strength) or p.feedback_prior_strength < 0:
        raise ScoringInputError("feedback_prior_strength must be a finite number >= 0")
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
        raise ScoringInputError(f"seed={inp.seed!r} must be an integer in [0, 2**63-1]")
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
    for row in inp.probe_observations:
        criterion = common(row, EvidenceKind.PROBE)
        if row.outcome not in outcomes:
            raise ScoringInputError(f"unknown outcome {row.outcome!r}")
        if row.value is not None and not is_finite_number(row.value):
            raise ScoringInputError(f"probe value {row.value!r} for {row.provider}/{row.criterion} is not finite")
        # A pass or warn must say what was measured; a valueless fail is censored at the worst anchor.
        needs_value = not criterion.is_pass_rate and row.outcome in {Outcome.PASS, Outcome.WARN}
        if needs_value and row.value is None:
            raise ScoringInputError(f"measured criterion {row.criterion!r} got a {row.outcome} finding without a value")
        if needs_value and criterion.scale == Scale.LOG and row.value is not None and row.value < 0:
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
            raise ScoringInputError(f"customer rating {row.rating!r} for {row.provider}/{row.criterion} is not 1-5")
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


# ============================================================================= normalisation
def normalise(values: np.ndarray | float, criterion: CriterionSpec) -> np.ndarray:
    """Map raw values onto [0, 1] against the rubric's anchors (1 = best anchor or better)."""
    best, worst = float(criterion.anchor_best), float(criterion.anchor_worst)
    x = np.clip(np.asarray(values, dtype=np.float64), min(best, worst), max(best, worst))
    if criterion.scale == Scale.LOG:
        score = (np.log(x) - math.log(worst)) / (math.log(best) - math.log(worst))
    else:
        score = (x - worst) / (best - worst)
    return np.clip(score, 0.0, 1.0)


# ===================================================================== resampling distributions
@lru_cache(maxsize=256)
def median_table(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact bootstrap distribution of the median of n resampled values (by order-statistic index).

    Returns ``(j1, j2, probabilities)``: resampling n values with replacement from n sorted
    values, the resample's median is ``(sorted[j1] + sorted[j2]) / 2`` with that probability.
    Odd n: j1 == j2 is the middle order statistic. Even n: (j1, j2) are the two middle ones,
    from the closed form P(J1 <= a, J2 <= b) = P(X >= m+1) + P(X = m)(1 - (1 - q)^(n-m)) with
    X ~ Bin(n, (a+1)/n) the draws at or below a and q = (b-a)/(n-a-1).
    """
    if n % 2:
        m = (n + 1) // 2
        cdf = np.array([binom.sf(m - 1, n, (j + 1) / n) for j in range(n)])
        cdf[-1] = 1.0
        probs = np.diff(cdf, prepend=0.0)
        idx = np.arange(n)
        return idx, idx.copy(), probs
    m = n // 2

    def joint_cdf(a: int, b: int) -> float:
        if a < 0 or b < 0:
            return 0.0
        a = min(a, b)
        if a >= n - 1:
            return 1.0
        pa = (a + 1) / n
        q = (b - a) / (n - a - 1)
        return float(binom.sf(m, n, pa) + binom.pmf(m, n, pa) * (1.0 - (1.0 - q) ** (n - m)))

    j1s, j2s, probs = [], [], []
    for a in range(n):
        for b in range(a, n):
            p = joint_cdf(a, b) - joint_cdf(a - 1, b) - joint_cdf(a, b - 1) + joint_cdf(a - 1, b - 1)
            j1s.append(a)
            j2s.append(b)
            probs.append(max(p, 0.0))
    total = math.fsum(probs)
    return np.array(j1s), np.array(j2s), np.array(probs) / total


def _sum_distribution(single: np.ndarray, draws: int) -> np.ndarray:
    """pmf of the sum of ``draws`` iid draws whose single-draw pmf over 0..k is ``single``."""
    out = np.array([1.0])
    for _ in range(draws):
        out = np.convolve(out, single)
    return out


@dataclass(frozen=True)
class Stream:
    """One (criterion, kind) evidence stream of one provider, ready for the bootstrap.

    ``atoms``/``probs``: the exact distribution of the stream's resampled statistic, in score
    space ([0, 1]) except customer feedback, whose atoms are mean ratings (shrunk later).
    """

    slot: int
    kind: EvidenceKind
    point: float  # score (feedback: mean rating)
    value: float  # raw display value
    n: int
    atoms: np.ndarray
    probs: np.ndarray


def _probe_outcomes(rows: list[ProbeObservation]) -> tuple[list[ProbeObservation], int, bool]:
    """(usable rows, harness errors dropped, all_not_applicable)."""
    errors = sum(1 for r in rows if r.outcome == Outcome.ERROR)
    usable = [r for r in rows if r.outcome not in (Outcome.ERROR, Outcome.NOT_APPLICABLE)]
    all_na = bool(rows) and all(r.outcome == Outcome.NOT_APPLICABLE for r in rows)
    return usable, errors, all_na


@lru_cache(maxsize=4096)
def _pass_count_distribution(passes: int, warns: int, fails: int) -> np.ndarray:
    """pmf of the doubled credit 2*passes + warns of a resample, over 0..2n."""
    n = passes + warns + fails
    return _sum_distribution(np.array([fails, warns, passes], dtype=np.float64) / n, n)


def _pass_rate_stream(slot: int, c: CriterionSpec, usable: list[ProbeObservation]) -> Stream:
    n = len(usable)
    passes = sum(1 for r in usable if r.outcome == Outcome.PASS)
    warns = sum(1 for r in usable if r.outcome == Outcome.WARN)
    probs = _pass_count_distribution(passes, warns, n - passes - warns)
    rates = (np.arange(2 * n + 1) / 2.0 + 1.0) / (n + 2.0)
    point_rate = (passes + WARN_CREDIT * warns + 1.0) / (n + 2.0)
    keep = probs > 0
    return Stream(
        slot, EvidenceKind.PROBE, float(normalise(point_rate, c)), point_rate, n,
        normalise(rates[keep], c), probs[keep],
    )


def _measured_streams(slot: int, c: CriterionSpec, cells: dict[str, list[ProbeObservation]]) -> dict[str, Stream]:
    """Median streams of one measured criterion for all providers at once (batched by count)."""
    by_count: dict[int, list[tuple[str, list[float]]]] = defaultdict(list)
    for provider, usable in cells.items():
        # timeout and provider_error are censored at the worst anchor whatever value they carry,
        # and so is a fail that carries none
        raw = [
            float(c.anchor_worst)
            if r.outcome in (Outcome.TIMEOUT, Outcome.PROVIDER_ERROR) or r.value is None
            else float(r.value)
            for r in usable
        ]
        by_count[len(raw)].append((provider, raw))
    out: dict[str, Stream] = {}
    for n, members in by_count.items():
        raw = np.array([m[1] for m in members], dtype=np.float64)
        scores = np.sort(normalise(raw, c), axis=1)
        j1, j2, probs = median_table(n)
        atoms = (scores[:, j1] + scores[:, j2]) / 2.0
        points, values = np.median(scores, axis=1), np.median(raw, axis=1)
        for i, (provider, _) in enumerate(members):
            out[provider] = Stream(slot, EvidenceKind.PROBE, float(points[i]), float(values[i]), n, atoms[i], probs)
    return out


def _doc_stream(slot: int, rows: list[DocReviewScore]) -> Stream | None:
    if not rows:
        return None
    reconciled = [r for r in rows if r.reconciled]
    reviewers = sorted(float(r.score) for r in rows if not r.reconciled)
    if reconciled:  # the analysts' decision: fixed, carries no resampling noise
        value = float(reconciled[0].score)
        return Stream(slot, EvidenceKind.DOC_REVIEW, value / 4.0, value, len(reviewers) or 1,
                      np.array([value / 4.0]), np.array([1.0]))
    scores = np.array(reviewers) / 4.0
    j1, j2, probs = median_table(len(scores))
    value = float(np.median(reviewers))
    return Stream(slot, EvidenceKind.DOC_REVIEW, float(np.median(scores)), value, len(scores),
                  (scores[j1] + scores[j2]) / 2.0, probs)


def _feedback_stream(slot: int, rows: list[FeedbackResponse]) -> Stream | None:
    if not rows:
        return None
    v = len(rows)
    counts = np.bincount([r.rating - 1 for r in rows], minlength=5).astype(np.float64)
    probs = _sum_distribution(counts / v, v)  # sum of ratings minus v, over 0..4v
    means = (np.arange(len(probs)) + v) / v
    keep = probs > 0
    mean = float(np.dot(counts, np.arange(1, 6)) / v)
    return Stream(slot, EvidenceKind.CUSTOMER_FEEDBACK, mean, mean, v, means[keep], probs[keep])


def shrink(mean: np.ndarray | float, n: int, peer_mean: np.ndarray | float, prior: float) -> np.ndarray:
    """Bayesian average of a mean rating toward the peer mean, mapped from 1-5 onto [0, 1]."""
    shrunk = (n * np.asarray(mean) + prior * np.asarray(peer_mean)) / (n + prior)
    return np.clip((shrunk - 1.0) / 4.0, 0.0, 1.0)


# ============================================================================ provider layout
@dataclass
class _Provider:
    key: str
    streams: list[Stream]
    status: dict[str, str]  # criterion -> measured | missing | not_applicable
    n_missing: dict[str, int]
    rated: bool = False
    coverage: float = 0.0
    area_weight: dict[str, float] = dataclasses.field(default_factory=dict)  # normalised, applicable areas
    area_coverage: dict[str, float] = dataclasses.field(default_factory=dict)
    area_measured: dict[str, bool] = dataclasses.field(default_factory=dict)
    stream_weight: dict[int, float] = dataclasses.field(default_factory=dict)  # slot -> weight in its area
    applicable_weight: dict[str, float] = dataclasses.field(default_factory=dict)  # area -> criterion weight


class _Layout:
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


def _group(rows: Iterable[Any]) -> dict[tuple[str, str], list[Any]]:
    grouped: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for row in rows:
        grouped[(row.provider, row.criterion)].append(row)
    return grouped


def _build_providers(inp: ScoringInput, layout: _Layout) -> list[_Provider]:
    probes, docs, feedback = _group(inp.probe_observations), _group(inp.doc_scores), _group(inp.feedback)
    probe_streams: dict[tuple[str, str], Stream] = {}
    probe_meta: dict[tuple[str, str], tuple[int, bool]] = {}
    for c in layout.criteria:
        if EvidenceKind.PROBE not in c.evidence_kinds:
            continue
        slot = layout.slot_of[(c.key, EvidenceKind.PROBE)]
        measured_cells: dict[str, list[ProbeObservation]] = {}
        for key in inp.providers:
            usable, errors, all_na = _probe_outcomes(probes.get((key, c.key), []))
            probe_meta[(key, c.key)] = (errors, all_na)
            if usable and c.is_pass_rate:
                probe_streams[(key, c.key)] = _pass_rate_stream(slot, c, usable)
            elif usable:
                measured_cells[key] = usable
        for key, stream in _measured_streams(slot, c, measured_cells).items():
            probe_streams[(key, c.key)] = stream
    overrides = {(o.provider, o.criterion): float(o.score) for o in inp.overrides}
    out = []
    for key in sorted(inp.providers):
        streams: list[Stream] = []
        status: dict[str, str] = {}
        n_missing: dict[str, int] = {}
        for c in layout.criteria:
            errors, _ = probe_meta.get((key, c.key), (0, False))
            if (key, c.key) in overrides:  # the approved value replaces the evidence, noise-free
                value = overrides[(key, c.key)]
                slot = layout.slot_of[(c.key, c.evidence_kinds[0])]
                streams.append(Stream(slot, EvidenceKind.OVERRIDE, value, value, 0, np.array([value]), np.array([1.0])))
                status[c.key] = "measured"
                n_missing[c.key] = errors
                continue
            found: list[Stream | None] = [probe_streams.get((key, c.key))]
            errors, all_na = probe_meta.get((key, c.key), (0, False))
            if EvidenceKind.DOC_REVIEW in c.evidence_kinds:
                found.append(_doc_stream(layout.slot_of[(c.key, EvidenceKind.DOC_REVIEW)], docs.get((key, c.key), [])))
            if EvidenceKind.CUSTOMER_FEEDBACK in c.evidence_kinds:
                slot = layout.slot_of[(c.key, EvidenceKind.CUSTOMER_FEEDBACK)]
                found.append(_feedback_stream(slot, feedback.get((key, c.key), [])))
            present = [s for s in found if s is not None]
            streams += present
            status[c.key] = "measured" if present else "not_applicable" if all_na else "missing"
            n_missing[c.key] = errors
        out.append(_Provider(key, streams, status, n_missing))
    return out


def _plan_weights(p: _Provider, layout: _Layout, rubric: RubricSpec) -> None:
    """Coverage, area weights and per-stream weights for one provider (values play no part)."""
    params = rubric.params
    applicable_w: dict[str, float] = defaultdict(float)
    measured_w: dict[str, float] = defaultdict(float)
    for c in layout.criteria:
        if p.status[c.key] != "not_applicable":
            applicable_w[c.area] += c.weight
        if p.status[c.key] == "measured":
            measured_w[c.area] += c.weight
    applicable_areas = [a for a in layout.areas if applicable_w[a.key] > 0]
    p.applicable_weight = dict(applicable_w)
    total = math.fsum(a.weight for a in applicable_areas)
    p.area_weight = {a.key: a.weight / total for a in applicable_areas}
    for a in applicable_areas:
        cov = measured_w[a.key] / applicable_w[a.key]
        p.area_coverage[a.key] = cov
        p.area_measured[a.key] = measured_w[a.key] > 0 and cov >= params.area_coverage_floor
    p.coverage = math.fsum(p.area_weight[k] * p.area_coverage[k] for k, m in p.area_measured.items() if m)
    p.rated = any(p.area_measured.values()) and p.coverage >= params.coverage_floor
    kinds_per_criterion: dict[str, int] = defaultdict(int)
    for s in p.streams:
        kinds_per_criterion[layout.slots[s.slot][0].key] += 1
    for s in p.streams:
        c = layout.slots[s.slot][0]
        p.stream_weight[s.slot] = c.weight / measured_w[c.area] / kinds_per_criterion[c.key]


# ================================================================================ aggregation
def _sample_streams(p: _Provider, n_slots: int, size: int, seed: int) -> np.ndarray:
    """(B, streams) resampled statistics of one provider's streams, by CDF inversion."""
    digest = hashlib.sha256(p.key.encode("utf-8")).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 32, 4)]
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy=seed, spawn_key=words)))
    uniforms = rng.random((size, n_slots))
    out = np.empty((size, len(p.streams)), dtype=np.float64)
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, s in enumerate(p.streams):
        by_length[len(s.atoms)].append(i)
    for length, members in by_length.items():
        if length == 1:
            out[:, members] = np.array([p.streams[i].atoms[0] for i in members])
            continue
        cdf = np.cumsum(np.stack([p.streams[i].probs for i in members]), axis=1)  # (k, L)
        atoms = np.stack([p.streams[i].atoms for i in members]).ravel()
        slots = [p.streams[i].slot for i in members]
        u = uniforms if slots == list(range(n_slots)) else uniforms[:, slots]  # (B, k)
        # Inverse CDF: the atom index is the number of cumulative probabilities <= u.
        index = np.zeros(u.shape, dtype=np.uint8 if length < 256 else np.intp)
        mask = np.empty(u.shape, dtype=bool)
        for col in range(length - 1):
            np.greater_equal(u, cdf[:, col], out=mask)
            index += mask.view(np.uint8) if length < 256 else mask
        flat = np.take(atoms, index + np.arange(len(members), dtype=np.intp) * length)
        if len(members) == out.shape[1]:
            out = flat
        else:
            out[:, members] = flat
    return out


@dataclass
class _Partial:
    """One provider's stream scores reduced to what the cross-provider step still needs.

    ``areas`` holds each area's weighted sum over its non-feedback streams (NaN for an area
    without streams); ``kept`` holds the columns that cannot be summed yet: customer feedback
    (mean ratings, shrunk toward the peer mean later) and every stream of a gate criterion.
    Reducing each provider at once keeps memory flat in the number of providers.
    """

    areas: np.ndarray  # (B, areas)
    kept: np.ndarray  # (B, kept streams)
    kept_index: list[int]  # stream index of each kept column


def _reduce(p: _Provider, layout: _Layout, scores: np.ndarray) -> _Partial:
    size = scores.shape[0]
    areas = np.full((size, len(layout.areas)), np.nan)
    if p.streams:
        # Streams are in slot order, so each area's streams are contiguous: one weighting pass
        # and one segmented sum (feedback weighs 0 here; it is added once shrunk).
        area_of = np.array([layout.area_index[layout.slots[s.slot][0].area] for s in p.streams])
        weights = np.array(
            [0.0 if s.kind == EvidenceKind.CUSTOMER_FEEDBACK else p.stream_weight[s.slot] for s in p.streams]
        )
        starts = np.flatnonzero(np.concatenate(([True], area_of[1:] != area_of[:-1])))
        areas[:, area_of[starts]] = np.add.reduceat(scores * weights, starts, axis=1)
    kept_index = [
        i for i, s in enumerate(p.streams)
        if s.kind == EvidenceKind.CUSTOMER_FEEDBACK or layout.slots[s.slot][0].is_gate
    ]
    return _Partial(areas, scores[:, kept_index].copy(), kept_index)


def _finish(
    p: _Provider, layout: _Layout, part: _Partial
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Composite (B,), area scores (B, areas) and gate criterion scores, after shrinkage."""
    areas = part.areas.copy()
    for k, i in enumerate(part.kept_index):
        s = p.streams[i]
        if s.kind == EvidenceKind.CUSTOMER_FEEDBACK:
            areas[:, layout.area_index[layout.slots[s.slot][0].area]] += part.kept[:, k] * p.stream_weight[s.slot]
    size = areas.shape[0]
    measured = [i for i, a in enumerate(layout.areas) if p.area_measured.get(a.key)]
    weights = np.array([p.area_weight[layout.areas[i].key] for i in measured])
    composite = (areas[:, measured] * (weights / weights.sum())).sum(axis=1) if measured else np.full(size, np.nan)
    gates: dict[str, np.ndarray] = {}
    for c in layout.criteria:
        if c.is_gate and p.status[c.key] == "measured":
            cols = [k for k, i in enumerate(part.kept_index) if layout.slots[p.streams[i].slot][0].key == c.key]
            gates[c.key] = part.kept[:, cols].mean(axis=1)
    return np.round(composite, COMPOSITE_DECIMALS), areas, gates


NEUTRAL_RATING = 3.0  # the shrinkage target when no rated peer has feedback on a criterion


def _peer_means(providers: list[_Provider], parts: list[_Partial]) -> dict[int, np.ndarray]:
    """Peer mean rating per feedback slot: the mean of the rated providers' means (per replicate).

    Only rated providers count, so a Not-rated provider's answers move no one else. Where no
    rated provider has answers on a criterion the target is the neutral middle of the scale.
    """
    members: dict[int, list[np.ndarray]] = defaultdict(list)
    size = 1
    for p, part in zip(providers, parts, strict=True):
        size = part.kept.shape[0]
        for k, i in enumerate(part.kept_index):
            if p.streams[i].kind == EvidenceKind.CUSTOMER_FEEDBACK and p.rated:
                members[p.streams[i].slot].append(part.kept[:, k])
    out: dict[int, np.ndarray] = defaultdict(lambda: np.full(size, NEUTRAL_RATING))
    for slot, columns in members.items():
        out[slot] = np.mean(np.stack(columns), axis=0)
    return out


def _shrink_feedback(
    providers: list[_Provider], parts: list[_Partial], peer: dict[int, np.ndarray], prior: float
) -> None:
    for p, part in zip(providers, parts, strict=True):
        for k, i in enumerate(part.kept_index):
            s = p.streams[i]
            if s.kind == EvidenceKind.CUSTOMER_FEEDBACK:
                part.kept[:, k] = shrink(part.kept[:, k], s.n, peer[s.slot], prior)


def _point_stream_scores(p: _Provider, part: _Partial) -> np.ndarray:
    """Each stream's point score, feedback after shrinkage."""
    scores = np.array([s.point for s in p.streams], dtype=np.float64)
    for k, i in enumerate(part.kept_index):
        scores[i] = part.kept[0, k]
    return scores


def _gate_caps(layout: _Layout, gates: dict[str, np.ndarray], size: int) -> np.ndarray:
    caps = np.zeros(size, dtype=np.int64)
    for key, scores in gates.items():
        c = layout.by_key[key]
        cap = TIERS.index(c.gate_cap_tier)
        caps = np.where(scores < c.gate_threshold, np.maximum(caps, cap), caps)
    return caps


# ===================================================================================== engine
def score_cycle(inp: ScoringInput) -> ScoringResult:
    """Score one cycle. Raises ``ScoringInputError`` (and subclasses) on bad input."""
    validate_input(inp)
    rubric, params = inp.rubric, inp.rubric.params
    layout = _Layout(rubric)
    providers = _build_providers(inp, layout)
    for p in providers:
        _plan_weights(p, layout, rubric)
    size = params.bootstrap_size

    # Point estimate.
    point_parts = [
        _reduce(p, layout, np.array([[s.point for s in p.streams]], dtype=np.float64).reshape(1, -1))
        for p in providers
    ]
    _shrink_feedback(providers, point_parts, _peer_means(providers, point_parts), params.feedback_prior_strength)
    point = [_finish(p, layout, part) for p, part in zip(providers, point_parts, strict=True)]
    point_vals = [_point_stream_scores(p, part) for p, part in zip(providers, point_parts, strict=True)]

    # Bootstrap, rated providers only (the others take part in nothing).
    rated = [i for i, p in enumerate(providers) if p.rated]
    rated_providers = [providers[i] for i in rated]
    parts = [_reduce(p, layout, _sample_streams(p, len(layout.slots), size, inp.seed)) for p in rated_providers]
    _shrink_feedback(rated_providers, parts, _peer_means(rated_providers, parts), params.feedback_prior_strength)
    boot = [_finish(p, layout, part) for p, part in zip(rated_providers, parts, strict=True)]
    del parts

    floors = params.tier_floors
    replicates = np.stack([b[0] for b in boot]) if boot else np.zeros((0, size))
    pairs = tiering.BootstrapPairs(replicates)
    point_composites = np.array([point[i][0][0] for i in rated])
    point_caps = np.array([_gate_caps(layout, point[i][2], 1)[0] for i in rated])
    rep_caps = np.stack([_gate_caps(layout, b[2], size) for b in boot]) if boot else np.zeros((0, size), int)
    if rated:
        point_tiers, breaks = tiering.tier_indices(
            point_composites, point_caps, floors, pairs, params.boundary_confidence
        )
        probs = tiering.tier_probabilities(
            tiering.replicate_tiers(replicates, rep_caps, floors, pairs, params.boundary_confidence)
        )
    else:
        point_tiers, breaks, probs = np.zeros(0, int), [], np.zeros((0, len(TIERS)))

    previous = {pt.provider: TIERS.index(pt.tier) for pt in inp.previous_tiers}
    results: list[ProviderResult] = []
    rated_pos = {i: r for r, i in enumerate(rated)}
    level = params.ci_level
    quantiles = [(1 - level) / 2, 1 - (1 - level) / 2]
    for i, p in enumerate(providers):
        r = rated_pos.get(i)
        boot_i = boot[r] if r is not None else None
        results.append(
            _provider_result(
                p, layout, rubric, point[i], point_vals[i], boot_i, quantiles,
                None if r is None else (int(point_tiers[r]), probs[r], int(point_caps[r])),
                previous.get(p.key),
            )
        )
    keys = [providers[i].key for i in rated]
    boundaries = tuple(
        Boundary(
            upper_provider=min(keys[u] for u in b.upper),
            lower_provider=min(keys[low] for low in b.lower),
            upper_composite=b.upper_value,
            lower_composite=b.lower_value,
            probability=b.probability,
            kept=b.kept,
        )
        for b in sorted(breaks, key=lambda b: -b.upper_value)
    )
    return ScoringResult(
        engine_version=ENGINE_VERSION,
        rubric_id=rubric.id,
        rubric_name=rubric.name,
        rubric_version=rubric.version,
        rubric_fingerprint=rubric.fingerprint,
        seed=inp.seed,
        bootstrap_size=size,
        inputs_hash=inputs_hash(inp),
        providers=tuple(results),
        boundaries=boundaries,
    )


def _provider_result(
    p: _Provider,
    layout: _Layout,
    rubric: RubricSpec,
    point: tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]],
    point_scores: np.ndarray,
    boot: tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]] | None,
    quantiles: list[float],
    tiered: tuple[int, np.ndarray, int] | None,
    previous: int | None,
) -> ProviderResult:
    composite_point, area_point, _ = point
    composite = float(composite_point[0]) if p.rated or not np.isnan(composite_point[0]) else None
    flags: list[str] = []
    # Criteria.
    gate_caps: list[GateCap] = []
    criteria: list[CriterionResult] = []
    measured_areas = [a for a, m in p.area_measured.items() if m]
    area_norm = math.fsum(p.area_weight[a] for a in measured_areas)
    pessimistic_parts: list[float] = []
    streams_of: dict[str, list[int]] = defaultdict(list)
    for j, s in enumerate(p.streams):
        streams_of[layout.slots[s.slot][0].key].append(j)
    for c in layout.criteria:
        kinds = []
        scores = []
        own = streams_of.get(c.key, [])
        for j in own:
            s = p.streams[j]
            score = float(point_scores[j])
            scores.append(score)
            kinds.append(
                KindResult(
                    kind=str(s.kind),
                    value=_display_value(s, score),
                    score=score,
                    n=s.n,
                    raw_mean=s.value if s.kind == EvidenceKind.CUSTOMER_FEEDBACK else None,
                )
            )
        score = float(np.mean(point_scores[own])) if scores else None
        share = 0.0
        if score is not None and p.area_measured.get(c.area):
            share = p.area_weight[c.area] / area_norm * math.fsum(p.stream_weight[p.streams[j].slot] for j in own)
        if score is not None and p.area_measured.get(c.area):  # an unmeasured area counts 0 here too
            pessimistic_parts.append(p.area_weight[c.area] * c.weight / p.applicable_weight[c.area] * score)
        gate_score = point[2].get(c.key)  # the value the tier rule used
        failed = bool(gate_score is not None and gate_score[0] < c.gate_threshold)
        if failed:
            gate_caps.append(GateCap(criterion=c.key, cap_tier=c.gate_cap_tier, score=float(gate_score[0])))  # type: ignore[index]
        if c.is_gate and p.status[c.key] == "missing":
            flags.append(f"gate_unmeasured:{c.key}")
        if any(k.kind == EvidenceKind.OVERRIDE for k in kinds):
            flags.append(f"override:{c.key}")
        criteria.append(
            CriterionResult(
                key=c.key, area=c.area, status=p.status[c.key], score=score, weight_share=share,
                kinds=tuple(kinds), n_missing=p.n_missing[c.key], is_gate=c.is_gate, gate_failed=failed,
            )
        )
    # Areas.
    areas = []
    area_ci = np.quantile(boot[1], quantiles, axis=0) if boot is not None else None
    for a_index, a in enumerate(layout.areas):
        measured = bool(p.area_measured.get(a.key))
        low = high = None
        if area_ci is not None and measured:
            low, high = float(area_ci[0, a_index]), float(area_ci[1, a_index])
        value = area_point[0, a_index]
        areas.append(
            AreaResult(
                key=a.key, weight=p.area_weight.get(a.key, 0.0), measured=measured,
                score=None if np.isnan(value) else float(value), coverage=p.area_coverage.get(a.key, 0.0),
                ci_low=low, ci_high=high,
            )
        )
    common = {
        "provider": p.key, "composite": composite, "composite_pessimistic": math.fsum(pessimistic_parts),
        "coverage": p.coverage, "gate_caps": tuple(gate_caps), "areas": tuple(areas), "criteria": tuple(criteria),
    }
    if tiered is None or boot is None:
        flags.append("below_coverage_floor")
        return ProviderResult(
            rated=False, tier=NOT_RATED, tier_point=None, previous_tier=None if previous is None else TIERS[previous],
            hysteresis_held=False, probabilities=(), ci_low=None, ci_high=None, borderline=False,
            outlook="stable", floor_capped=False, flags=tuple(sorted(flags)), **common,
        )
    point_tier, probs, gate_cap = tiered
    params = rubric.params
    floor_cap = int(tiering.floor_tier_index(np.array([composite]), params.tier_floors)[0])
    tier, held, borderline, outlook = tiering.publish(
        point_tier, probs, previous, params.hysteresis_threshold, params.borderline_threshold,
        max(floor_cap, gate_cap),
    )
    low, high = (float(x) for x in np.quantile(boot[0], quantiles))
    if held:
        flags.append("hysteresis_held")
    if borderline:
        flags.append(f"borderline:{outlook}")
    if gate_caps and gate_cap >= point_tier:
        flags.append("gate_capped")
    # floor_capped: the floor, not the peers or a gate, set the tier.
    floor_capped = floor_cap == point_tier and floor_cap > gate_cap and floor_cap > 0
    return ProviderResult(
        rated=True, tier=TIERS[tier], tier_point=TIERS[point_tier],
        previous_tier=None if previous is None else TIERS[previous], hysteresis_held=held,
        probabilities=tuple((t, float(probs[j])) for j, t in enumerate(TIERS)),
        ci_low=low, ci_high=high, borderline=borderline, outlook=outlook, floor_capped=floor_capped,
        flags=tuple(sorted(flags)), **common,
    )


def _display_value(s: Stream, score: float) -> float:
    if s.kind == EvidenceKind.CUSTOMER_FEEDBACK:
        return 1.0 + 4.0 * score  # the shrunk rating on its 1-5 scale
    return s.value


# ============================================================================= serialisation
def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            raise ValueError("non-finite float in a scoring result")
        return round(float(value), OUTPUT_DECIMALS) + 0.0
    raise TypeError(f"cannot serialise {type(value).__name__}")


def result_to_dict(result: ScoringResult) -> dict[str, Any]:
    """The result as plain JSON-able data (floats rounded to OUTPUT_DECIMALS)."""
    return _plain(result)


def canonical_json(result: ScoringResult) -> str:
    """Canonical serialisation: sorted keys, no whitespace, rounded floats; stable byte for byte."""
    return _canonical_dumps(result_to_dict(result))


def content_hash(result: ScoringResult) -> str:
    return _sha256(canonical_json(result))
