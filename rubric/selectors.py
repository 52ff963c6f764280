"""Reads of rubric versions: lookup by label, the canonical export, diffs and fingerprint checks.

A version's content is read back into the pure :class:`~rubric.yaml_format.RubricSpec`, so
export, fingerprint and diff all go through the one canonical emitter in ``yaml_format``.
"""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from rubric.models import Area, Criterion, RubricVersion
from rubric.spec import rubric_fingerprint
from rubric.versioned import DocumentNotFound, document_get
from rubric.yaml_format import (
    AreaSpec,
    CriterionSpec,
    RubricDiff,
    RubricSpec,
    ScoringSpec,
    diff_specs,
    emit_rubric,
)


class RubricVersionNotFound(DocumentNotFound):
    """No rubric version answers to the given reference."""


class RubricFingerprintMismatch(RuntimeError):
    """A frozen version's content no longer matches the fingerprint recorded when it was frozen."""


def rubric_version_list() -> QuerySet[RubricVersion]:
    """Every version with its areas and criteria prefetched (a fixed number of queries)."""
    return RubricVersion.objects.select_related("parent").prefetch_related(
        Prefetch("areas", queryset=Area.objects.order_by("position", "key")),
        Prefetch("criteria", queryset=Criterion.objects.select_related("area").order_by("position", "key")),
    )


def rubric_version_get(*, ref: str | int) -> RubricVersion:
    """Find a version by ``NAME@VERSION`` or by its numeric id."""
    return document_get(RubricVersion, ref=ref, not_found=RubricVersionNotFound)


def rubric_version_spec(*, rubric_version: RubricVersion) -> RubricSpec:
    """The stored content of a version as a pure spec (areas and criteria in file order)."""
    v = rubric_version
    areas = list(Area.objects.filter(rubric_version=v).order_by("position", "key"))
    criteria = Criterion.objects.filter(rubric_version=v).select_related("area").order_by("position", "key")
    return RubricSpec(
        name=v.name, version=v.version, title=v.title, description=v.description,
        scoring=ScoringSpec(
            coverage_floor=v.coverage_floor, area_coverage_floor=v.area_coverage_floor,
            bootstrap_size=v.bootstrap_size, boundary_confidence=v.boundary_confidence,
            borderline_threshold=v.borderline_threshold, hysteresis_threshold=v.hysteresis_threshold,
            feedback_prior_strength=v.feedback_prior_strength, tier_floor_platinum=v.tier_floor_platinum,
            tier_floor_gold=v.tier_floor_gold, tier_floor_silver=v.tier_floor_silver,
            tier_floor_bronze=v.tier_floor_bronze, feedback_prior_mean=v.feedback_prior_mean,
            boundary_min_gap=v.boundary_min_gap,
        ),
        areas=tuple(AreaSpec(key=a.key, title=a.title, weight=a.weight, description=a.description) for a in areas),
        criteria=tuple(
            CriterionSpec(
                key=c.key, area=c.area.key, title=c.title, description=c.description, weight=c.weight,
                evidence=tuple(c.evidence_kinds), probe_id=c.probe_id, probe_metric=c.probe_metric, unit=c.unit,
                direction=c.direction, scale=c.scale, anchor_best=c.anchor_best, anchor_worst=c.anchor_worst,
                is_gate=c.is_gate, gate_cap_tier=c.gate_cap_tier, gate_threshold=c.gate_threshold,
            )
            for c in criteria
        ),
    )


def rubric_version_export(*, rubric_version: RubricVersion) -> str:
    """The canonical YAML of a version: importing it again recreates the same content."""
    return emit_rubric(rubric_version_spec(rubric_version=rubric_version))


def rubric_version_content_fingerprint(*, rubric_version: RubricVersion) -> str:
    """sha256 of the canonical export, computed now from the stored rows."""
    return rubric_fingerprint(rubric_version_export(rubric_version=rubric_version))


def rubric_version_verify_fingerprint(*, rubric_version: RubricVersion) -> str:
    """Check that a frozen version still has the content it was frozen with; return the fingerprint.

    The scoring engine calls this before scoring: the triggers stop ordinary writes, and this
    catches anything that went around them (a disabled trigger, a restored dump).
    """
    if not rubric_version.is_frozen:
        raise RubricFingerprintMismatch(f"rubric version {rubric_version.label} is a draft; only frozen versions are scored")
    actual = rubric_version_content_fingerprint(rubric_version=rubric_version)
    if actual != rubric_version.fingerprint:
        raise RubricFingerprintMismatch(
            f"rubric version {rubric_version.label} was changed after freezing: recorded fingerprint "
            f"{rubric_version.fingerprint[:12]}..., content now {actual[:12]}..."
        )
    return actual


def rubric_version_diff(*, a: RubricVersion, b: RubricVersion) -> RubricDiff:
    """Areas, criteria and scoring parameters added, removed or changed from ``a`` to ``b``."""
    return diff_specs(rubric_version_spec(rubric_version=a), rubric_version_spec(rubric_version=b))
