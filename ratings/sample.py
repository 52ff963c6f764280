"""A seeded sample cycle under the default rubric, for demos and integration tests.

``sample_cycle_create`` imports (and freezes) rubric/data/opgrade-2026.1.yaml if needed and
writes a cycle with ``providers`` synthetic providers of graded quality: probe findings
(3-5 replicates per probe, measured values around the anchors, pass/fail outcomes, an
occasional harness error or timeout; stored through ``probes.services.probe_run_record``,
the same hand-off as measured findings), two doc reviews per documentation criterion with a
citation, and a handful of customer ratings per area. Provider 1 fails tenant log
isolation (a gate), and the last provider's probes all broke on our side (Not rated).
The same seed writes the same evidence, so ``compute_tiers`` prints the same hash.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from probes.catalog.base import FindingDraft, Outcome
from probes.services import probe_run_record
from providers.models import Cluster, Cycle, Provider
from ratings.services import customer_feedback_record, doc_review_record
from rubric.models import Criterion, RubricVersion
from rubric.services import rubric_version_import

DEFAULT_RUBRIC = Path(__file__).resolve().parent.parent / "rubric" / "data" / "opgrade-2026.1.yaml"


def default_rubric_get() -> RubricVersion:
    """The frozen default rubric (imported and frozen on first use)."""
    result = rubric_version_import(text=DEFAULT_RUBRIC.read_text(), filename=DEFAULT_RUBRIC.name, freeze=True)
    return result.rubric_version


def _value(c: Criterion, quality: float, rng: np.random.Generator) -> float:
    """A raw measurement for a provider of ``quality`` (0 worst .. 1 best) with noise."""
    best, worst = c.anchor_best, c.anchor_worst
    q = float(np.clip(quality + rng.normal(0, 0.08), -0.1, 1.1))
    if c.scale == "log":
        return float(math.exp(math.log(worst) + q * (math.log(best) - math.log(worst))))
    return float(worst + q * (best - worst))


@transaction.atomic
def sample_cycle_create(*, slug: str = "sample-2026q4", providers: int = 8, seed: int = 20261130) -> Cycle:
    if Cycle.objects.filter(slug=slug).exists():
        raise ValueError(f"cycle {slug!r} exists already")
    rng = np.random.default_rng(seed)
    rubric = default_rubric_get()
    cycle = Cycle.objects.create(
        name=f"Sample cycle {slug}", slug=slug, rubric_version=rubric, period_start=dt.date(2026, 10, 1),
        period_end=dt.date(2026, 12, 31), status=Cycle.Status.SCORING,
    )
    user_model = get_user_model()
    reviewers = [
        user_model.objects.get_or_create(username=f"sample-reviewer-{i}", defaults={"is_staff": True})[0]
        for i in (1, 2)
    ]
    criteria = list(Criterion.objects.filter(rubric_version=rubric).select_related("area").order_by("position", "key"))
    slot = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    for index in range(providers):
        quality = 0.95 - 0.8 * index / max(providers - 1, 1)
        provider, _ = Provider.objects.get_or_create(
            slug=f"{slug}-provider-{index + 1}", defaults={"name": f"Sample provider {index + 1} ({slug})"}
        )
        cluster, _ = Cluster.objects.get_or_create(provider=provider, name="main", defaults={"gpu_count": 64})
        cycle.providers.add(provider)
        broken = index == providers - 1  # our harness failed on this one: it must come out Not rated
        _probe_findings(cycle, cluster, criteria, quality, rng, slot, broken=broken, leaky=index == 1)
        for c in criteria:
            if "doc_review" in c.evidence_kinds:
                for reviewer in reviewers:
                    score = int(np.clip(round(4 * quality + rng.normal(0, 0.6)), 0, 4))
                    doc_review_record(
                        cycle=cycle, provider=provider, criterion=c, reviewer=reviewer, score=score,
                        citations=[{"url": f"https://docs.{provider.slug}.example/{c.key}", "quote": f"{c.title}."}],
                    )
        for area in {c.area for c in criteria}:
            for r in range(int(rng.integers(2, 6))):
                rating = int(np.clip(round(1 + 4 * quality + rng.normal(0, 0.8)), 1, 5))
                customer_feedback_record(
                    cycle=cycle, provider=provider, area=area, rating=rating, source="survey",
                    respondent_org=f"customer {index}-{r}",
                )
    return cycle


def _probe_findings(
    cycle: Cycle, cluster: Cluster, criteria: list[Criterion], quality: float, rng: np.random.Generator,
    slot: dt.datetime, *, broken: bool, leaky: bool,
) -> None:
    by_probe: dict[str, list[Criterion]] = {}
    for c in criteria:
        if "probe" in c.evidence_kinds and c.probe_id:
            by_probe.setdefault(c.probe_id, []).append(c)
    for probe_id, bound in sorted(by_probe.items()):
        for replicate in range(int(rng.integers(3, 6))):
            drafts = []
            for c in bound:
                outcome, value = _outcome(c, quality, rng, broken=broken, leaky=leaky)
                drafts.append(
                    FindingDraft(target="cluster", outcome=Outcome(outcome), metric=c.probe_metric, value=value, unit=c.unit)
                )
            probe_run_record(
                cluster=cluster, cycle=cycle, probe_id=probe_id, probe_version="1", slot=slot,
                idempotency_key=f"sample:{cycle.slug}:{cluster.pk}:{probe_id}:{replicate}", drafts=drafts,
            )


def _outcome(
    c: Criterion, quality: float, rng: np.random.Generator, *, broken: bool, leaky: bool
) -> tuple[str, float | None]:
    if broken or rng.random() < 0.03:
        return "error", None
    if c.key == "tenant_log_isolation" and leaky:
        return "fail", None
    if c.is_gate and not c.probe_metric:  # isolation holds everywhere else
        return ("pass" if rng.random() < 0.97 else "fail"), None
    if not c.probe_metric:
        return ("pass" if rng.random() < 0.2 + 0.8 * quality else "fail"), None
    if rng.random() < 0.02:
        return "timeout", None
    return "pass", _value(c, quality, rng)
