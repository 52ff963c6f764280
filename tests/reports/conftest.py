"""Fixtures for the report tests: a cycle, a publisher and a real report document."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from config.access import PUBLISHER_GROUP
from reports import context as ctx
from reports.models import Report
from tests.factories import CycleFactory, ProviderFactory, RubricVersionFactory

RUBRIC = ctx.RubricInput(
    name="opgrade",
    version="test.1",
    fingerprint="f" * 64,
    title="Test rubric",
    description="Hands-on probes, documentation review and customer feedback.",
    areas=(
        ctx.AreaDefinition(key="reliability", title="Reliability", weight=2.0),
        ctx.AreaDefinition(key="security", title="Security", weight=1.0),
    ),
    criteria=(
        ctx.CriterionDefinition(key="nccl-bw", title="NCCL all-reduce bandwidth", area_key="reliability",
                                weight=3.0, unit="GB/s", anchor_best=400, anchor_worst=100,
                                evidence_kinds=("probe",)),
        ctx.CriterionDefinition(key="node-health", title="Node health checks", area_key="reliability", weight=1.0,
                                evidence_kinds=("probe", "doc_review")),
        ctx.CriterionDefinition(key="isolation", title="Tenant isolation", area_key="security", weight=1.0,
                                is_gate=True, gate_cap_tier="silver", evidence_kinds=("probe",)),
    ),
    parameters={"coverage_floor": 0.6, "tier_floor_platinum": 0.8},
)

TIERS = {"alpha": "platinum", "beta": "gold", "gamma": None}


def provider_result(slug: str, tier: str | None, *, score: float = 0.7) -> ctx.ProviderResult:
    return ctx.ProviderResult(
        slug=slug,
        name=f"{slug.title()} Cloud",
        tier=tier,
        tier_probabilities={tier: 0.8, "gold" if tier != "gold" else "silver": 0.2} if tier else {},
        ci_low=score - 0.05,
        ci_high=score + 0.05,
        composite=score if tier else None,
        pessimistic=score - 0.1,
        coverage=0.9 if tier else 0.4,
        area_scores={"reliability": score, "security": None if tier is None else 0.5},
        gate_caps=("isolation",) if tier == "gold" else (),
        borderline=tier == "gold",
        outlook="positive" if tier == "gold" else "",
        criteria=(
            ctx.CriterionResult(key="nccl-bw", value=350.0, normalised=0.833333, evidence_counts={"probe": 3}),
            ctx.CriterionResult(key="node-health", value=1.0, normalised=score, evidence_counts={"probe": 2, "doc_review": 1}),
            ctx.CriterionResult(key="isolation", value=0.0 if tier == "gold" else 1.0,
                                normalised=0.0 if tier == "gold" else 1.0, evidence_counts={"probe": 1},
                                gate_passed=tier != "gold"),
        ),
    )


def build_document(cycle: Any, tiers: dict[str, str | None] | None = None, *, seed: int = 7,
                   history: tuple[ctx.PublishedCycle, ...] = (), overrides: tuple = ()) -> dict[str, Any]:
    tiers = TIERS if tiers is None else tiers
    scores = {"platinum": 0.85, "gold": 0.7, "silver": 0.55, "bronze": 0.45, "underperforming": 0.3, None: 0.2}
    return ctx.build_report_document(ctx.ReportInput(
        cycle_slug=cycle.slug, cycle_name=cycle.name,
        period_start=cycle.period_start.isoformat(), period_end=cycle.period_end.isoformat(),
        rubric=RUBRIC, engine_version="opgrade-engine 1.0", seed=seed,
        inputs_hash="a" * 64, snapshot_hash="b" * 64,
        providers=tuple(provider_result(slug, tier, score=scores[tier]) for slug, tier in tiers.items()),
        overrides=overrides, history=history, methodology_text="We measure, normalise and tier.",
    ))


@pytest.fixture
def cycle(db):
    providers = [ProviderFactory(slug=slug, name=f"{slug.title()} Cloud") for slug in TIERS]
    return CycleFactory(
        slug="2026-q4", name="2026 Q4", rubric_version=RubricVersionFactory(version="test.1"),
        period_start=dt.date(2026, 10, 1), period_end=dt.date(2026, 12, 31), providers=providers,
    )


@pytest.fixture
def publisher(db) -> User:
    user = User.objects.create_user("pat-publisher", password="not-used-1234567", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name=PUBLISHER_GROUP)[0])
    return User.objects.get(pk=user.pk)  # fresh instance: permission caches start empty


@pytest.fixture
def analyst(db) -> User:
    return User.objects.create_user("ana-analyst", password="not-used-1234567", is_staff=True)


@pytest.fixture
def make_published(cycle, publisher) -> Callable[..., Report]:
    from reports import services

    def make(tiers: dict[str, str | None] | None = None, *, on_cycle: Any = None, seed: int = 7) -> Report:
        target = on_cycle or cycle
        draft = services.report_draft_create(cycle=target, snapshot_document=build_document(target, tiers, seed=seed))
        services.report_fact_check_open(report=draft)
        return services.report_publish(report=draft, user=publisher)

    return make
