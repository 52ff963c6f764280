"""Writes of the grades app: grade definitions (import, freeze, clone, draft replace/delete) and
rental price observations.

Keyword-only and atomic: on any error nothing is written. A frozen definition is refused here
(``FrozenGradeError``), again by the model and again by the database trigger (``grades.guards``).
The lock, freeze, import and clone steps are ``rubric.versioned``'s, as for rubric versions.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.text import unsafe_text_problem
from grades.models import GradeDefinition, PriceObservation
from grades.selectors import grade_vocabulary
from grades.spec import TERMS, GradeFormatError, emit_grade, parse_grade
from rubric import versioned

BANDS_FILE = Path(__file__).resolve().parent / "data" / "price_bands.yaml"


class GradeConflictError(versioned.DocumentConflictError):
    """A grade NAME@VERSION already exists with different content."""


class PriceObservationError(ValueError):
    """A price observation was refused (the message says why); nothing was written."""


@dataclass(frozen=True)
class GradeImportResult:
    grade: GradeDefinition
    created: bool
    message: str


def _validated(text: str, filename: str) -> tuple[Any, str]:
    """Parse once for the rubric label, then again against that rubric's criteria and the probe catalog."""
    loose = parse_grade(text, filename=filename)
    grade = parse_grade(text, filename=filename, vocabulary=grade_vocabulary(rubric_label=loose.rubric, filename=filename))
    return grade, emit_grade(grade)


@transaction.atomic
def grade_definition_import(*, text: str, filename: str, freeze: bool = False) -> GradeImportResult:
    """Create a draft (optionally frozen) from a grade YAML document; idempotent for identical content."""
    grade, canonical = _validated(text, filename)
    existing = GradeDefinition.objects.select_for_update().filter(name=grade.name, version=grade.version).first()
    if existing is not None:
        existing, _frozen_now, message = versioned.document_import_existing(
            existing, same_content=existing.canonical == canonical, filename=filename, freeze=freeze,
            freeze_with=lambda row: grade_definition_freeze(grade=row), conflict=GradeConflictError,
        )
        return GradeImportResult(existing, False, message)
    with versioned.document_create_race(filename=filename, label=grade.label, conflict=GradeConflictError):
        row = GradeDefinition.objects.create(
            name=grade.name, version=grade.version, title=grade.title, rubric_label=grade.rubric,
            gpu_model=grade.hardware.gpu_model, canonical=canonical,
        )
    if freeze:
        row = grade_definition_freeze(grade=row)
    counts = f"{len(grade.requirements)} operating requirements"
    return GradeImportResult(row, True, versioned.document_imported_message(row, counts=counts, frozen=freeze))


@transaction.atomic
def grade_definition_freeze(*, grade: GradeDefinition) -> GradeDefinition:
    """Validate the draft's text again (the rubric or catalog may have changed) and freeze it."""
    return versioned.document_freeze(grade, canonical_text=_validated_text)


def _validated_text(row: GradeDefinition) -> str:
    """The draft's stored canonical text (what is fingerprinted), after validating it again."""
    _validated(row.canonical, f"{row.label} (canonical text)")
    return row.canonical


@transaction.atomic
def grade_definition_clone(*, source: GradeDefinition, version: str, name: str | None = None) -> GradeDefinition:
    """A new draft NAME@VERSION with the source's content, its parent set to the source."""
    new_name, label = versioned.document_clone_label(
        GradeDefinition, name=name or source.name, version=version, error=GradeFormatError, conflict=GradeConflictError,
    )
    grade = replace(parse_grade(source.canonical, filename=source.label), name=new_name, version=label)
    return GradeDefinition.objects.create(
        name=new_name, version=label, title=grade.title, rubric_label=grade.rubric,
        gpu_model=grade.hardware.gpu_model, canonical=emit_grade(grade), parent=source,
    )


@transaction.atomic
def grade_definition_replace(*, grade: GradeDefinition, text: str, filename: str = "<edit>") -> GradeDefinition:
    """Replace a draft's content (same NAME@VERSION); refused once frozen."""
    row = versioned.document_lock_draft(grade)
    parsed, canonical = _validated(text, filename)
    if (parsed.name, parsed.version) != (row.name, row.version):
        raise GradeConflictError(f"{filename} is {parsed.label}; a draft keeps its label ({row.label})")
    row.title, row.rubric_label, row.gpu_model, row.canonical = (
        parsed.title, parsed.rubric, parsed.hardware.gpu_model, canonical)
    row.save()
    return row


@transaction.atomic
def grade_definition_delete(*, grade: GradeDefinition) -> None:
    """Delete a draft; frozen definitions are never deleted."""
    versioned.document_draft_delete(grade)


# --------------------------------------------------------------------------- price observations
@cache
def price_bands() -> dict[str, tuple[Decimal, Decimal]]:
    data = yaml.safe_load(BANDS_FILE.read_text(encoding="utf-8")) or {}
    return {str(model): (Decimal(str(b["min"])), Decimal(str(b["max"]))) for model, b in data.items()}


def _cluster_gpu(cluster: Any) -> str:
    return (cluster.gpu_model or "").strip() or "none"


def _price(value: Any) -> Decimal:
    try:
        price = Decimal(str(value).strip())
    except (InvalidOperation, ValueError) as exc:
        raise PriceObservationError(f"price_per_gpu_hour: {value!r} is not a number") from exc
    if not price.is_finite():
        raise PriceObservationError("price_per_gpu_hour: must be a finite number")
    if price.as_tuple().exponent < -4 or abs(price) >= 10_000:  # type: ignore[operator]
        raise PriceObservationError("price_per_gpu_hour: at most 4 decimals and below 10000")
    return price


def price_observation_check(
    *, grade: GradeDefinition, cluster: Any, source: str, observed_on: Any, term: str, price_per_gpu_hour: Any,
) -> tuple[str, Decimal]:
    """Every check a new observation must pass, reading but writing nothing: (clean source, price).

    Raises PriceObservationError naming the field and the reason (the admin form shows it as is).
    """
    if not grade.is_frozen:
        raise PriceObservationError(f"grade {grade.label} is a draft; prices are recorded against frozen grades only")
    source = (source or "").strip()
    if not source or len(source) > 200:
        raise PriceObservationError("source: say where the price was seen (1 to 200 characters)")
    if problem := unsafe_text_problem(source):
        raise PriceObservationError(f"source: {problem}")
    if term not in TERMS:
        raise PriceObservationError(f"term: {term!r} is not one of {', '.join(TERMS)}")
    if not isinstance(observed_on, dt.date) or isinstance(observed_on, dt.datetime):
        raise PriceObservationError("observed_on: expected a date")
    if observed_on > timezone.localdate():
        raise PriceObservationError(f"observed_on: {observed_on} is in the future")
    gpu = _cluster_gpu(cluster)
    if gpu.lower() != grade.gpu_model.lower():
        raise PriceObservationError(
            f"cluster {cluster} has GPU model {gpu!r}; grade {grade.label} is for {grade.gpu_model!r}")
    price = _price(price_per_gpu_hour)
    band = price_bands().get(grade.gpu_model)
    if band is None:
        raise PriceObservationError(f"no plausibility band for GPU model {grade.gpu_model!r} "
                                    f"(add one to grades/data/{BANDS_FILE.name})")
    if not band[0] <= price <= band[1]:
        raise PriceObservationError(
            f"price_per_gpu_hour: ${price}/GPU-hour is outside the plausible band for {grade.gpu_model} "
            f"(${band[0]} to ${band[1]}); check for a misplaced decimal point or a per-node price")
    duplicate = PriceObservation.objects.filter(
        grade=grade, cluster=cluster, source=source, observed_on=observed_on, term=term).first()
    if duplicate is not None:
        raise PriceObservationError(
            f"duplicate: {cluster} under {grade.label}, {term}, {observed_on} from {source!r} is already "
            f"recorded (#{duplicate.pk}, ${duplicate.price_per_gpu_hour}/GPU-hour)")
    return source, price


@transaction.atomic
def price_observation_record(
    *, grade: GradeDefinition, cluster: Any, source: str, observed_on: dt.date, term: str,
    price_per_gpu_hour: Any, user: Any = None,
) -> PriceObservation:
    """Record one observed rent after checking it; a refusal raises PriceObservationError and writes nothing."""
    source, price = price_observation_check(grade=grade, cluster=cluster, source=source, observed_on=observed_on,
                                            term=term, price_per_gpu_hour=price_per_gpu_hour)
    try:
        with transaction.atomic():
            return PriceObservation.objects.create(
                grade=grade, cluster=cluster, source=source, observed_on=observed_on, term=term,
                price_per_gpu_hour=price, recorded_by=user if getattr(user, "pk", None) else None,
            )
    except IntegrityError as exc:  # a concurrent duplicate won the race
        raise PriceObservationError("duplicate: the same observation was recorded at the same time") from exc
