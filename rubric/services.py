"""Writes to rubric versions: import, freeze, clone, draft edits and deletion.

Every function is keyword-only and atomic: on any error nothing is written. Frozen
versions are refused here with :class:`~rubric.models.FrozenRubricError` (and again by the
models' ``save``/``delete`` and by database triggers, see migration 0003). The lock, freeze,
import and clone steps a grade definition shares are ``rubric.versioned``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from config.errors import Conflict
from rubric.models import Area, Criterion, RubricVersion
from rubric.selectors import rubric_version_export, rubric_version_spec
from rubric.versioned import (
    DocumentConflictError,
    document_clone_label,
    document_create_race,
    document_draft_delete,
    document_freeze,
    document_import_existing,
    document_imported_message,
    document_lock_draft,
)
from rubric.yaml_format import (
    RubricFormatError,
    RubricSpec,
    emit_rubric,
    parse_rubric,
)


class RubricConflictError(DocumentConflictError, Conflict):
    """A version with the same NAME@VERSION label already exists with different content."""


@dataclass(frozen=True)
class RubricImportResult:
    rubric_version: RubricVersion
    created: bool
    frozen_now: bool
    message: str


def _create_from_spec(spec: RubricSpec, *, parent: RubricVersion | None = None) -> RubricVersion:
    s = spec.scoring
    version = RubricVersion.objects.create(
        name=spec.name, version=spec.version, title=spec.title, description=spec.description, parent=parent,
        coverage_floor=s.coverage_floor, area_coverage_floor=s.area_coverage_floor,
        bootstrap_size=s.bootstrap_size, boundary_confidence=s.boundary_confidence,
        borderline_threshold=s.borderline_threshold, hysteresis_threshold=s.hysteresis_threshold,
        feedback_prior_strength=s.feedback_prior_strength, tier_floor_platinum=s.tier_floor_platinum,
        tier_floor_gold=s.tier_floor_gold, tier_floor_silver=s.tier_floor_silver,
        tier_floor_bronze=s.tier_floor_bronze, feedback_prior_mean=s.feedback_prior_mean,
        boundary_min_gap=s.boundary_min_gap,
    )
    areas = Area.objects.bulk_create(
        Area(rubric_version=version, key=a.key, title=a.title, description=a.description, weight=a.weight,
             position=i)
        for i, a in enumerate(spec.areas)
    )
    by_key = {a.key: a for a in areas}
    Criterion.objects.bulk_create(
        Criterion(
            rubric_version=version, area=by_key[c.area], key=c.key, title=c.title, description=c.description,
            weight=c.weight, evidence_kinds=list(c.evidence), probe_id=c.probe_id, probe_metric=c.probe_metric,
            unit=c.unit, direction=c.direction, scale=c.scale, anchor_best=c.anchor_best,
            anchor_worst=c.anchor_worst, is_gate=c.is_gate, gate_cap_tier=c.gate_cap_tier,
            gate_threshold=c.gate_threshold, position=i,
        )
        for i, c in enumerate(spec.criteria)
    )
    return version


@transaction.atomic
def rubric_version_import(*, text: str, filename: str, freeze: bool = False) -> RubricImportResult:
    """Create a version from a rubric YAML document (optionally frozen at once).

    Idempotent: importing content identical to an existing NAME@VERSION is a no-op (it may
    still freeze that draft when asked to); different content under an existing label is a
    :class:`RubricConflictError`. A malformed file raises ``RubricFormatError`` naming the
    file, line and field, and nothing is written.
    """
    spec = parse_rubric(text, filename=filename)
    existing = RubricVersion.objects.select_for_update().filter(name=spec.name, version=spec.version).first()
    if existing is not None:
        existing, frozen_now, message = document_import_existing(
            existing, same_content=rubric_version_export(rubric_version=existing) == emit_rubric(spec),
            filename=filename, freeze=freeze, freeze_with=lambda v: rubric_version_freeze(rubric_version=v),
            conflict=RubricConflictError,
        )
        return RubricImportResult(existing, created=False, frozen_now=frozen_now, message=message)
    with document_create_race(filename=filename, label=f"{spec.name}@{spec.version}", conflict=RubricConflictError):
        version = _create_from_spec(spec)
    if freeze:
        version = rubric_version_freeze(rubric_version=version)
    counts = f"{len(spec.areas)} areas, {len(spec.criteria)} criteria"
    message = document_imported_message(version, counts=counts, frozen=freeze)
    return RubricImportResult(version, created=True, frozen_now=freeze, message=message)


@transaction.atomic
def rubric_version_freeze(*, rubric_version: RubricVersion) -> RubricVersion:
    """Validate a draft's whole content and freeze it, recording frozen_at and its fingerprint.

    Freezing an already frozen version changes nothing and returns it. A draft whose content
    does not validate (say, criterion weights edited so they no longer sum) is refused with the
    same ``RubricFormatError`` an import would give, lines counted in its canonical export.
    """
    return document_freeze(rubric_version, canonical_text=_validated_export)


def _validated_export(version: RubricVersion) -> str:
    """The draft's canonical export, validated as an import of it would be."""
    text = rubric_version_export(rubric_version=version)
    parse_rubric(text, filename=f"{version.label} (canonical export)")
    return text


@transaction.atomic
def rubric_version_clone(*, source: RubricVersion, version: str, name: str | None = None) -> RubricVersion:
    """A new draft NAME@VERSION with the source's content, its parent set to the source."""
    spec = rubric_version_spec(rubric_version=source)
    new_name, label = document_clone_label(RubricVersion, name=name or source.name, version=version,
                                           error=RubricFormatError, conflict=RubricConflictError)
    clone_spec = RubricSpec(
        name=new_name, version=label, title=spec.title, description=spec.description, scoring=spec.scoring,
        areas=spec.areas, criteria=spec.criteria,
    )
    return _create_from_spec(clone_spec, parent=source)


_VERSION_EDITABLE = {
    "title", "description", "coverage_floor", "area_coverage_floor", "bootstrap_size", "boundary_confidence",
    "borderline_threshold", "hysteresis_threshold", "feedback_prior_strength", "tier_floor_platinum",
    "tier_floor_gold", "tier_floor_silver", "tier_floor_bronze", "feedback_prior_mean", "boundary_min_gap",
}
_AREA_EDITABLE = {"title", "description", "weight", "position"}
_CRITERION_EDITABLE = {
    "title", "description", "weight", "evidence_kinds", "probe_id", "probe_metric", "unit", "direction",
    "anchor_best", "anchor_worst", "scale", "is_gate", "gate_cap_tier", "gate_threshold", "position",
}


def _apply(obj: Any, data: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(data) - allowed
    if unknown:
        raise ValueError(f"cannot edit {', '.join(sorted(unknown))} (editable: {', '.join(sorted(allowed))})")
    for key, value in data.items():
        setattr(obj, key, value)
    obj.full_clean()
    obj.save()


@transaction.atomic
def rubric_version_update(*, rubric_version: RubricVersion, data: dict[str, Any]) -> RubricVersion:
    """Edit a draft's title, description or scoring parameters; refused once frozen."""
    version = document_lock_draft(rubric_version)
    _apply(version, data, _VERSION_EDITABLE)
    return version


@transaction.atomic
def area_update(*, area: Area, data: dict[str, Any]) -> Area:
    """Edit an area of a draft; refused when its version is frozen. Weights are checked at freeze."""
    document_lock_draft(area.rubric_version, what=f"area '{area.key}'")
    _apply(area, data, _AREA_EDITABLE)
    return area


@transaction.atomic
def criterion_update(*, criterion: Criterion, data: dict[str, Any]) -> Criterion:
    """Edit a criterion of a draft; refused when its version is frozen. Weights are checked at freeze."""
    document_lock_draft(criterion.rubric_version, what=f"criterion '{criterion.key}'")
    _apply(criterion, data, _CRITERION_EDITABLE)
    return criterion


@transaction.atomic
def criterion_delete(*, criterion: Criterion) -> None:
    """Remove a criterion from a draft; refused when its version is frozen."""
    document_lock_draft(criterion.rubric_version, what=f"criterion '{criterion.key}'")
    criterion.delete()


@transaction.atomic
def rubric_version_delete(*, rubric_version: RubricVersion) -> None:
    """Delete a draft with its areas and criteria; frozen versions are never deleted."""
    document_draft_delete(rubric_version)
