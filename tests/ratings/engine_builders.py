"""Builders and Hypothesis strategies for the pure scoring engine's tests (no Django)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

from ratings.engine_types import (
    AreaSpec,
    CriterionSpec,
    DocReviewScore,
    EvidenceKind,
    FeedbackResponse,
    Outcome,
    ProbeObservation,
    RubricSpec,
    Scale,
    ScoringInput,
    ScoringParams,
)

RV = "rv-1"
# What freezing would have recorded (rubric.spec.rubric_fingerprint of the canonical export);
# the engine carries it as given and only checks that a frozen rubric has one.
FROZEN_FINGERPRINT = "f" * 64


def rubric(
    criteria: list[CriterionSpec] | tuple[CriterionSpec, ...],
    areas: dict[str, float] | None = None,
    **params: Any,
) -> RubricSpec:
    areas = areas or {c.area: 1.0 for c in criteria}
    return RubricSpec(
        id=RV, name="opgrade", version="test", params=ScoringParams(**params),
        areas=tuple(AreaSpec(k, w) for k, w in areas.items()), criteria=tuple(criteria),
        fingerprint=FROZEN_FINGERPRINT,
    )


def measured(key: str, area: str = "reliability", *, best: float = 10.0, worst: float = 100.0,
             scale: Scale = Scale.LINEAR, weight: float = 1.0, **kw: Any) -> CriterionSpec:
    direction = "higher" if best > worst else "lower"
    return CriterionSpec(key=key, area=area, weight=weight, evidence_kinds=(EvidenceKind.PROBE,),
                         anchor_best=best, anchor_worst=worst, direction=direction, scale=scale,
                         probe_id=f"probe-{key}", probe_metric="value", **kw)


def pass_rate(key: str, area: str = "security", *, weight: float = 1.0, **kw: Any) -> CriterionSpec:
    return CriterionSpec(key=key, area=area, weight=weight, evidence_kinds=(EvidenceKind.PROBE,),
                         anchor_best=1.0, anchor_worst=0.0, probe_id=f"probe-{key}", **kw)


def doc(key: str, area: str = "monitoring", *, weight: float = 1.0, **kw: Any) -> CriterionSpec:
    return CriterionSpec(key=key, area=area, weight=weight, evidence_kinds=(EvidenceKind.DOC_REVIEW,),
                         anchor_best=1.0, anchor_worst=0.0, **kw)


def feedback(key: str, area: str = "provisioning", *, weight: float = 1.0, **kw: Any) -> CriterionSpec:
    return CriterionSpec(key=key, area=area, weight=weight, evidence_kinds=(EvidenceKind.CUSTOMER_FEEDBACK,),
                         anchor_best=1.0, anchor_worst=0.0, **kw)


def obs(provider: str, criterion: str, value: float | None = None, outcome: Outcome = Outcome.PASS) -> ProbeObservation:
    return ProbeObservation(RV, provider, criterion, outcome, value)


def review(provider: str, criterion: str, reviewer: str, score: float, reconciled: bool = False) -> DocReviewScore:
    return DocReviewScore(RV, provider, criterion, reviewer, score, reconciled)


def rating(provider: str, criterion: str, respondent: str, value: int) -> FeedbackResponse:
    return FeedbackResponse(RV, provider, criterion, respondent, value)


def cycle(rub: RubricSpec, providers: list[str] | tuple[str, ...], rows: list[Any], seed: int = 1, previous: tuple = ()) -> ScoringInput:
    return ScoringInput(
        rubric=rub, providers=tuple(providers), seed=seed,
        probe_observations=tuple(r for r in rows if isinstance(r, ProbeObservation)),
        doc_scores=tuple(r for r in rows if isinstance(r, DocReviewScore)),
        feedback=tuple(r for r in rows if isinstance(r, FeedbackResponse)),
        previous_tiers=tuple(previous),
    )


# The rubric the property tests use: every evidence stream and both scales, four areas.
PROPERTY_CRITERIA = (
    measured("ready-time", "provisioning", best=30.0, worst=3600.0, scale=Scale.LOG),
    measured("busbw", "reliability", best=480.0, worst=100.0),
    measured("detect-time", "reliability", best=5.0, worst=600.0, weight=2.0),
    pass_rate("isolation", "security", is_gate=True, gate_cap_tier="bronze"),
    doc("docs-metrics", "monitoring"),
    feedback("customers", "monitoring", weight=0.5),
)
MEASURED_RANGES = {"ready-time": (10.0, 5000.0), "busbw": (50.0, 520.0), "detect-time": (1.0, 800.0)}
PASS_FAIL = [Outcome.PASS, Outcome.FAIL, Outcome.WARN, Outcome.PROVIDER_ERROR, Outcome.TIMEOUT, Outcome.ERROR]


def property_rubric(size: int = 40, **params: Any) -> RubricSpec:
    return rubric(PROPERTY_CRITERIA, bootstrap_size=size, **params)


@st.composite
def provider_rows(draw: st.DrawFn, provider: str, complete: bool = False) -> list[Any]:
    """Evidence for one provider; ``complete`` keeps every criterion measured."""
    rows: list[Any] = []
    for key, (low, high) in MEASURED_RANGES.items():
        if not complete and draw(st.integers(0, 4)) == 0:
            continue
        values = draw(st.lists(st.floats(low, high, allow_nan=False), min_size=1, max_size=4))
        rows += [obs(provider, key, v) for v in values]
        if not complete:
            rows += [obs(provider, key, None, Outcome.ERROR) for _ in range(draw(st.integers(0, 1)))]
    outcomes = draw(st.lists(st.sampled_from(PASS_FAIL[:-1] if complete else PASS_FAIL), min_size=1, max_size=4))
    if complete and all(o == Outcome.ERROR for o in outcomes):
        outcomes = [Outcome.PASS]
    rows += [obs(provider, "isolation", None, o) for o in outcomes]
    scores = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))
    rows += [review(provider, "docs-metrics", f"rev-{i}", float(s)) for i, s in enumerate(scores)]
    ratings = draw(st.lists(st.integers(1, 5), min_size=0 if not complete else 1, max_size=4))
    rows += [rating(provider, "customers", f"org-{i}", r) for i, r in enumerate(ratings)]
    return rows


@st.composite
def cycles(draw: st.DrawFn, min_providers: int = 2, max_providers: int = 5, complete: bool = False,
           size: int = 40) -> ScoringInput:
    n = draw(st.integers(min_providers, max_providers))
    providers = [f"prov-{i}" for i in range(n)]
    rows: list[Any] = []
    for p in providers:
        rows += draw(provider_rows(p, complete=complete))
    return cycle(property_rubric(size), providers, rows, seed=draw(st.integers(0, 2**32)))


def replace_rows(inp: ScoringInput, **changes: Any) -> ScoringInput:
    return dataclasses.replace(inp, **changes)
