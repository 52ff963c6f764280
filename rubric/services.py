"""Writes to rubric versions: import, freeze, clone, draft edits and deletion.

Every function is keyword-only and atomic: on any error nothing is written. Frozen
versions are refused here with :class:`~rubric.models.FrozenRubricError` (and again by the
models' ``save``/``delete`` and by database triggers, see migration 0003).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from rubric.models import Area, Criterion, FrozenRubricError, RubricVersion
from rubric.selectors import rubric_version_export, rubric_version_spec
from rubric.spec import rubric_fingerprint
from rubric.yaml_format import (
    KEY_RE,
    VERSION_RE,
    VERSION_RULE,
    RubricFormatError,
    RubricProblem,
    RubricSpec,
    emit_rubric,
    parse_rubric,
)


class RubricConflictError(Exception):
    """A version with the same NAME@VERSION label already exists with different content."""


@dataclass(frozen=True)
class RubricImportResult:
    rubric_version: RubricVersion
    created: bool
    frozen_now: bool
    message: str


def _lock(rubric_version: RubricVersion) -> RubricVersion:
    """Lock the version row for the rest of the transaction and return its current state."""
    return RubricVersion.objects.select_for_update().get(pk=rubric_version.pk)


def _refuse_frozen(rubric_version: RubricVersion, what: str) -> None:
    if rubric_version.is_frozen:
        raise FrozenRubricError(rubric_version, what)


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
        if rubric_version_export(rubric_version=existing) != emit_rubric(spec):
            raise RubricConflictError(
                f"{filename}: rubric version {existing.label} already exists with different content; "
                "give the new content a new version label"
            )
        frozen_now = False
        if freeze and not existing.is_frozen:
            existing = rubric_version_freeze(rubric_version=existing)
            frozen_now = True
        state = "frozen" if existing.is_frozen else "draft"
        message = f"{existing.label} already exists with identical content ({state}); nothing imported"
        if frozen_now:
            message = f"{existing.label} already existed with identical content; froze it"
        return RubricImportResult(existing, created=False, frozen_now=frozen_now, message=message)
    try:
        with transaction.atomic():
            version = _create_from_spec(spec)
    except IntegrityError as exc:  # a concurrent import of the same label won the race
        raise RubricConflictError(f"{filename}: could not create {spec.name}@{spec.version}: {exc}") from exc
    if freeze:
        version = rubric_version_freeze(rubric_version=version)
    counts = f"{len(spec.areas)} areas, {len(spec.criteria)} criteria"
    message = f"imported {version.label} ({counts}){', frozen' if freeze else ' as a draft'}"
    return RubricImportResult(version, created=True, frozen_now=freeze, message=message)


@transaction.atomic
def rubric_version_freeze(*, rubric_version: RubricVersion) -> RubricVersion:
    """Validate a draft's whole content and freeze it, recording frozen_at and its fingerprint.

    Freezing an already frozen version changes nothing and returns it. A draft whose content
    does not validate (say, criterion weights edited so they no longer sum) is refused with the
    same ``RubricFormatError`` an import would give, lines counted in its canonical export.
    """
    version = _lock(rubric_version)
    if version.is_frozen:
        return version
    text = rubric_version_export(rubric_version=version)
    parse_rubric(text, filename=f"{version.label} (canonical export)")
    now = timezone.now()
    fingerprint = rubric_fingerprint(text)
    updated = RubricVersion.objects.filter(pk=version.pk, status=RubricVersion.Status.DRAFT).update(
        status=RubricVersion.Status.FROZEN, frozen_at=now, fingerprint=fingerprint
    )
    if updated != 1:  # pragma: no cover - the row lock above makes this unreachable
        raise FrozenRubricError(version, "the version")
    version.refresh_from_db()
    return version


@transaction.atomic
def rubric_version_clone(*, source: RubricVersion, version: str, name: str | None = None) -> RubricVersion:
    """A new draft NAME@VERSION with the source's content, its parent set to the source."""
    spec = rubric_version_spec(rubric_version=source)
    label = version.strip()
    new_name = name or source.name
    if not label or len(label) > 32 or not VERSION_RE.match(label):
        raise RubricFormatError([RubricProblem(
            "clone", None, "version", f"must be 1 to 32 characters, {VERSION_RULE}"
        )])
    if not KEY_RE.match(new_name) or len(new_name) > 64:
        raise RubricFormatError([RubricProblem("clone", None, "name", "must be lower-case letters, digits, '_' or '-'")])
    if RubricVersion.objects.filter(name=new_name, version=label).exists():
        raise RubricConflictError(f"rubric version {new_name}@{label} already exists")
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
    version = _lock(rubric_version)
    _refuse_frozen(version, "the version")
    _apply(version, data, _VERSION_EDITABLE)
    return version


@transaction.atomic
def area_update(*, area: Area, data: dict[str, Any]) -> Area:
    """Edit an area of a draft; refused when its version is frozen. Weights are checked at freeze."""
    _refuse_frozen(_lock(area.rubric_version), f"area '{area.key}'")
    _apply(area, data, _AREA_EDITABLE)
    return area


@transaction.atomic
def criterion_update(*, criterion: Criterion, data: dict[str, Any]) -> Criterion:
    """Edit a criterion of a draft; refused when its version is frozen. Weights are checked at freeze."""
    _refuse_frozen(_lock(criterion.rubric_version), f"criterion '{criterion.key}'")
    _apply(criterion, data, _CRITERION_EDITABLE)
    return criterion


@transaction.atomic
def criterion_delete(*, criterion: Criterion) -> None:
    """Remove a criterion from a draft; refused when its version is frozen."""
    _refuse_frozen(_lock(criterion.rubric_version), f"criterion '{criterion.key}'")
    criterion.delete()


@transaction.atomic
def rubric_version_delete(*, rubric_version: RubricVersion) -> None:
    """Delete a draft with its areas and criteria; frozen versions are never deleted."""
    version = _lock(rubric_version)
    _refuse_frozen(version, "the version")
    version.delete()
