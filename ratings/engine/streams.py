"""Evidence streams: each (criterion, kind) of a provider as an exact resampling distribution.

A stream's bootstrap statistic has a small exact discrete distribution: order statistics for
medians (``median_table``), a convolution for pass counts and rating sums. It is kept as
``atoms`` (scores in [0, 1]) and ``probs``; the sampler (``ratings.engine.sampling``) inverts
one uniform per replicate through the CDF instead of drawing and sorting n indices.

Outcomes (docs/domain.md): ``error`` is dropped (missing, our fault); ``provider_error`` is a
fail; ``timeout`` and ``declined`` are censored at the worst anchor, and so is a ``fail`` of a
measured probe that carries no value; ``not_applicable`` is excluded. A probe stream whose
every usable finding is ``declined`` scores exactly the worst anchor, noise-free, and marks
the criterion ``declined``: it counts at 0 in the composite but not as covered.

Customer feedback is shrunk toward the rubric's prior, ``(v*R + m*C)/(v+m)`` with R the
provider's mean over v respondents, C = ``feedback_prior_mean`` and m =
``feedback_prior_strength``: a constant of the rubric, so no provider's answers move another.

Pure: numpy/scipy only.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import binom

from ratings.engine.normalisation import normalise
from ratings.engine_types import (
    CriterionSpec,
    DocReviewScore,
    EvidenceKind,
    FeedbackResponse,
    Outcome,
    ProbeObservation,
)

WARN_CREDIT = 0.5  # a warn met a lower bar: half a pass in (k+1)/(n+2)
# Censored at the worst anchor whatever value they carry.
WORST_ANCHOR_OUTCOMES = frozenset({Outcome.TIMEOUT, Outcome.PROVIDER_ERROR, Outcome.DECLINED})
# A replicate of a pass/fail gate with one of these outcomes fails the gate.
FAILING_OUTCOMES = frozenset({Outcome.FAIL, Outcome.PROVIDER_ERROR, Outcome.TIMEOUT, Outcome.DECLINED})


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

    ``atoms`` are scores in [0, 1], ascending wherever ``probs`` depends on the evidence (pass
    counts, rating sums), so that an improvement moves the inverse CDF up for every uniform;
    for medians ``probs`` depends on the count only and each atom rises with the evidence.
    ``declined``: every usable finding was declined (the stream is the worst anchor).
    """

    slot: int
    kind: EvidenceKind
    point: float  # score
    value: float  # raw display value (feedback: the unshrunk mean rating)
    n: int
    atoms: np.ndarray
    probs: np.ndarray
    declined: bool = False


def probe_outcomes(rows: list[ProbeObservation]) -> tuple[list[ProbeObservation], int, bool]:
    """(usable rows, harness errors dropped, all_not_applicable)."""
    outcomes = [r.outcome for r in rows]
    if Outcome.ERROR not in outcomes and Outcome.NOT_APPLICABLE not in outcomes:
        return rows, 0, False  # the common case: every finding usable
    usable = []
    errors = not_applicable = 0
    for r, outcome in zip(rows, outcomes, strict=True):
        if outcome == Outcome.ERROR:
            errors += 1
        elif outcome == Outcome.NOT_APPLICABLE:
            not_applicable += 1
        else:
            usable.append(r)
    return usable, errors, bool(rows) and not_applicable == len(rows)


def declined_stream(slot: int, c: CriterionSpec, n: int) -> Stream:
    """Every usable finding declined: the worst anchor, without resampling noise."""
    value = 0.0 if c.is_pass_rate else float(c.anchor_worst)
    return Stream(slot, EvidenceKind.PROBE, 0.0, value, n, np.array([0.0]), np.array([1.0]), declined=True)


@lru_cache(maxsize=4096)
def _pass_count_distribution(passes: int, warns: int, fails: int) -> np.ndarray:
    """pmf of the doubled credit 2*passes + warns of a resample, over 0..2n."""
    n = passes + warns + fails
    out = _sum_distribution(np.array([fails, warns, passes], dtype=np.float64) / n, n)
    out.setflags(write=False)
    return out


def pass_rate_stream(slot: int, c: CriterionSpec, usable: list[ProbeObservation]) -> Stream:
    n = len(usable)
    if all(r.outcome == Outcome.DECLINED for r in usable):
        return declined_stream(slot, c, n)
    passes = sum(1 for r in usable if r.outcome == Outcome.PASS)
    warns = sum(1 for r in usable if r.outcome == Outcome.WARN)
    probs = _pass_count_distribution(passes, warns, n - passes - warns)
    rates = (np.arange(2 * n + 1) / 2.0 + 1.0) / (n + 2.0)
    point_rate = (passes + WARN_CREDIT * warns + 1.0) / (n + 2.0)
    # the whole support, zero-probability atoms included: the inverse CDF never lands on them,
    # and streams with equal counts share one index computation
    return Stream(slot, EvidenceKind.PROBE, float(normalise(point_rate, c)), point_rate, n, normalise(rates, c), probs)


def measured_streams(slot: int, c: CriterionSpec, cells: dict[str, list[ProbeObservation]]) -> dict[str, Stream]:
    """Median streams of one measured criterion for all providers at once (batched by count)."""
    by_count: dict[int, list[tuple[str, list[float]]]] = defaultdict(list)
    out: dict[str, Stream] = {}
    worst = float(c.anchor_worst)
    censored = WORST_ANCHOR_OUTCOMES
    for provider, usable in cells.items():
        outcomes = [r.outcome for r in usable]
        values = [r.value for r in usable]
        # The common case, every value measured (list membership compares, it does not hash:
        # Enum.__hash__ is Python code).
        if (None not in values and Outcome.TIMEOUT not in outcomes and Outcome.PROVIDER_ERROR not in outcomes
                and Outcome.DECLINED not in outcomes):
            by_count[len(values)].append((provider, values))
            continue
        raw = []
        declined = 0
        for outcome, value in zip(outcomes, values, strict=True):
            if outcome in censored or value is None:
                raw.append(worst)
                declined += outcome == Outcome.DECLINED
            else:
                raw.append(float(value))
        if declined == len(usable):
            out[provider] = declined_stream(slot, c, len(usable))
        else:
            by_count[len(raw)].append((provider, raw))
    for n, members in by_count.items():
        raw = np.array([m[1] for m in members], dtype=np.float64)
        scores = np.sort(normalise(raw, c), axis=1)
        j1, j2, probs = median_table(n)
        atoms = (scores[:, j1] + scores[:, j2]) / 2.0
        points, values = np.median(scores, axis=1).tolist(), np.median(raw, axis=1).tolist()
        for (provider, _), point, value, row in zip(members, points, values, atoms, strict=True):
            out[provider] = Stream(slot, EvidenceKind.PROBE, point, value, n, row, probs)
    return out


def doc_stream(slot: int, rows: list[DocReviewScore]) -> Stream | None:
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


def shrink(mean: np.ndarray | float, n: int, prior_mean: float, strength: float) -> np.ndarray:
    """Bayesian average of a mean rating toward the rubric's prior, mapped from 1-5 onto [0, 1]."""
    shrunk = (n * np.asarray(mean, dtype=np.float64) + strength * prior_mean) / (n + strength)
    return np.clip((shrunk - 1.0) / 4.0, 0.0, 1.0)


def feedback_stream(slot: int, rows: list[FeedbackResponse], prior_mean: float, strength: float) -> Stream | None:
    if not rows:
        return None
    v = len(rows)
    counts = np.bincount([r.rating - 1 for r in rows], minlength=5).astype(np.float64)
    probs = _sum_distribution(counts / v, v)  # sum of ratings minus v, over 0..4v
    means = (np.arange(len(probs)) + v) / v
    mean = math.fsum(r.rating for r in rows) / v
    return Stream(
        slot, EvidenceKind.CUSTOMER_FEEDBACK, float(shrink(mean, v, prior_mean, strength)), mean, v,
        shrink(means, v, prior_mean, strength), probs,
    )
