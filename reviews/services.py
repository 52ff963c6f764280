"""Writes of the human-evidence workflow. Every rule lives here; views and admin call these.

Each service is keyword-only, checks the caller's role itself (defence in depth: the
API and admin check too), refuses bad input with a `ReviewsError` that says why, and
writes nothing when it refuses.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from config.access import ROLE_PERMISSIONS, Role, user_provider, user_role, user_roles
from config.errors import BadInput, Forbidden
from providers.models import Cycle, Provider
from ratings.models import CustomerFeedback, DocReview, ScoreOverride
from ratings.services import (
    ScoreOverrideFourEyes,
    ScoreOverrideRefused,
    customer_feedback_bulk_create,
    customer_feedback_delete,
    customer_feedback_interview_create,
    score_override_check,
    score_override_decide,
    score_override_propose,
)
from reports.selectors import report_in_fact_check_exists
from reviews.feedback_csv import FeedbackRow, ParseResult, RowError, feedback_csv_parse, org_pseudonym
from reviews.history import history_user_as
from reviews.models import (
    DISAGREEMENT_POINTS,
    SCORE_MAX,
    SCORE_MIN,
    ConflictOfInterest,
    FeedbackImport,
    InterviewNote,
    ProviderMembership,
    Reconciliation,
    ReviewAssignment,
    RightOfReply,
)
from reviews.receivers import audit_events_bulk_record
from rubric.models import Area, Criterion

logger = logging.getLogger(__name__)


class ReviewsError(ValueError, BadInput):
    """A refused request; the message is safe to show to the caller."""


class RoleRefused(ReviewsError, PermissionError, Forbidden):
    """The caller's role may not do this."""


class ConflictOfInterestError(ReviewsError):
    """The reviewer declared a conflict with this provider."""


def _require_role(user: Any, roles: Iterable[Role], doing: str) -> None:
    if user_role(user) not in set(roles):
        raise RoleRefused(f"{getattr(user, 'username', 'anonymous')!s} may not {doing}")


def _as(instance: Any, user: Any) -> Any:
    """Attribute the next history record of `instance` to `user` (outside requests too)."""
    instance._history_user = user if getattr(user, "pk", None) else None
    return instance


# --- roles ---------------------------------------------------------------------------------


def roles_sync() -> dict[str, int]:
    """Create the five role groups and give each exactly its declared permissions."""
    counts: dict[str, int] = {}
    for role, grants in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role.value)
        wanted = Q(pk__in=[])
        for target, actions in grants.items():
            app_label, _, model = target.partition(".")
            codenames = Q()
            for action in actions:
                codenames |= Q(codename__startswith=f"{action}_")
            scope = Q(content_type__app_label=app_label)
            if model:
                scope &= Q(content_type__model=model)
            wanted |= scope & codenames
        permissions = list(Permission.objects.filter(wanted).select_related("content_type"))
        group.permissions.set(permissions)
        counts[role.value] = len(permissions)
    return counts


def roles_sync_after_migrate(*, app_config: Any = None, using: str = "default", **_: Any) -> None:
    """post_migrate receiver: keep the groups' permissions in step with the models.

    Runs once, for the last installed app, because Django creates each app's permissions
    in that app's own post_migrate: only after the last one do they all exist.
    """
    from django.apps import apps

    if app_config is None or app_config.label != list(apps.get_app_configs())[-1].label:
        return
    if not ContentType.objects.using(using).filter(app_label="reviews").exists():
        return
    roles_sync()


def user_role_set(*, user: Any, role: Role, provider: Provider | None = None) -> None:
    """Give a user exactly one role; a provider user is tied to exactly one provider."""
    if role == Role.PROVIDER and provider is None:
        raise ReviewsError("a provider user needs the provider they belong to")
    if role != Role.PROVIDER and provider is not None:
        raise ReviewsError("only provider users belong to a provider")
    with transaction.atomic():
        user.groups.set([Group.objects.get_or_create(name=role.value)[0]])
        user.is_staff = role != Role.PROVIDER
        if role == Role.PROVIDER:
            user.is_superuser = False
        user.save(update_fields=["is_staff", "is_superuser"])
        if role == Role.PROVIDER:
            ProviderMembership.objects.update_or_create(user=user, defaults={"provider": provider})
        else:
            ProviderMembership.objects.filter(user=user).delete()
    user.__dict__.pop("_opgrade_roles", None)


# --- documentation review ------------------------------------------------------------------


def _unit_check(*, cycle: Cycle, provider: Provider, criterion: Criterion) -> None:
    if criterion.rubric_version_id != cycle.rubric_version_id:
        raise ReviewsError(f"criterion {criterion.key} is not in the rubric of cycle {cycle.slug}")
    if not cycle.providers.filter(pk=provider.pk).exists():
        raise ReviewsError(f"provider {provider.slug} is not in the peer set of cycle {cycle.slug}")


def conflict_declare(*, reviewer: Any, provider: Provider, note: str = "", by: Any | None = None) -> ConflictOfInterest:
    """Record a conflict of interest (by the reviewer, or by an analyst on their behalf)."""
    by = by or reviewer
    if by.pk != reviewer.pk:
        _require_role(by, {Role.ANALYST, Role.ADMIN}, "declare conflicts for someone else")
    elif Role.REVIEWER not in user_roles(reviewer) and user_role(reviewer) not in {Role.ANALYST, Role.ADMIN}:
        raise RoleRefused("only reviewers declare conflicts of interest")
    coi, created = ConflictOfInterest.objects.get_or_create(
        reviewer=reviewer, provider=provider, defaults={"note": note}
    )
    if not created and note and note != coi.note:
        coi.note = note
        _as(coi, by).save(update_fields=["note"])
    return coi


def _conflict_check(*, reviewer: Any, provider: Provider) -> None:
    if ConflictOfInterest.objects.filter(reviewer=reviewer, provider=provider).exists():
        raise ConflictOfInterestError(
            f"{reviewer.get_username()} declared a conflict of interest with {provider.slug}: "
            "choose another reviewer"
        )


def assignment_create(
    *, cycle: Cycle, provider: Provider, criterion: Criterion, reviewer: Any, slot: str, by: Any
) -> ReviewAssignment:
    """Assign one reviewer to one slot of a cycle x provider x criterion; refuses conflicts."""
    assignment_validate(cycle=cycle, provider=provider, criterion=criterion, reviewer=reviewer, slot=slot, by=by)
    assignment = ReviewAssignment(
        cycle=cycle, provider=provider, criterion=criterion, reviewer=reviewer, slot=slot, assigned_by=by
    )
    try:
        with transaction.atomic():
            _as(assignment, by).save()
    except IntegrityError as exc:  # a concurrent assignment won the slot
        raise ReviewsError("this slot was assigned concurrently; reload and try again") from exc
    return assignment


def assignment_validate(
    *, cycle: Cycle, provider: Provider, criterion: Criterion, reviewer: Any, slot: str, by: Any
) -> None:
    """Every check of `assignment_create`, without writing (forms call it to show errors)."""
    _require_role(by, {Role.ANALYST, Role.ADMIN}, "assign reviews")
    if Role.REVIEWER not in user_roles(reviewer):
        raise ReviewsError(f"{reviewer.get_username()} is not a reviewer")
    if slot not in ReviewAssignment.Slot.values:
        raise ReviewsError(f"slot must be one of {', '.join(ReviewAssignment.Slot.values)}")
    _unit_check(cycle=cycle, provider=provider, criterion=criterion)
    if "doc_review" not in (criterion.evidence_kinds or []):
        raise ReviewsError(f"criterion {criterion.key} takes no documentation review")
    _conflict_check(reviewer=reviewer, provider=provider)
    unit = ReviewAssignment.objects.filter(cycle=cycle, provider=provider, criterion=criterion)
    if unit.filter(slot=slot).exists():
        raise ReviewsError(f"the {slot} slot of this criterion is already assigned")
    if unit.filter(reviewer=reviewer).exists():
        raise ReviewsError(f"{reviewer.get_username()} already reviews this criterion for this provider")


def citations_clean(citations: Any) -> list[dict[str, str]]:
    """Validate citations: a non-empty list of {url: http(s) URL, quote: non-empty text}."""
    if not isinstance(citations, list) or not citations:
        raise ReviewsError("at least one citation ({url, quote}) is required")
    cleaned = []
    for index, item in enumerate(citations, start=1):
        if not isinstance(item, dict):
            raise ReviewsError(f"citation {index} must be an object with url and quote")
        url, quote = str(item.get("url", "")).strip(), str(item.get("quote", "")).strip()
        parsed = urlparse(url)
        if parsed.scheme not in {"http", "https"} or not parsed.netloc:
            raise ReviewsError(f"citation {index}: url must be an http(s) URL")
        if not quote:
            raise ReviewsError(f"citation {index}: quote is empty")
        if len(quote) > 2000 or len(url) > 2000:
            raise ReviewsError(f"citation {index}: url and quote are limited to 2000 characters")
        cleaned.append({"url": url, "quote": quote})
    return cleaned


@dataclass(frozen=True)
class SubmitResult:
    assignment: ReviewAssignment
    third_assignment: ReviewAssignment | None = None
    needs_third_reviewer: bool = False


def review_submit(
    *, assignment: ReviewAssignment, by: Any, score: int, citations: Any, notes: str = ""
) -> SubmitResult:
    """Submit the reviewer's own score; a 2+ point first/second gap opens a third slot."""
    if assignment.reviewer_id != by.pk:
        raise RoleRefused("only the assigned reviewer may submit this review")
    if isinstance(score, bool) or not isinstance(score, int) or not SCORE_MIN <= score <= SCORE_MAX:
        raise ReviewsError("score must be a whole number from 0 to 4")
    cleaned = citations_clean(citations)
    with transaction.atomic():
        locked = ReviewAssignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.is_submitted:
            raise ReviewsError("this review was already submitted; ask an analyst to reopen it")
        doc = _doc_review_record(
            cycle=locked.cycle, provider=locked.provider, criterion=locked.criterion, reviewer=by,
            score=float(score), citations=cleaned, notes=notes,
        )
        locked.score, locked.citations, locked.notes, locked.doc_review = score, cleaned, notes, doc
        locked.status, locked.submitted_at = ReviewAssignment.Status.SUBMITTED, timezone.now()
        _as(locked, by).save()
        third, needs_third = _third_reviewer_if_needed(locked)
    assignment.refresh_from_db()
    return SubmitResult(assignment=assignment, third_assignment=third, needs_third_reviewer=needs_third)


def _third_reviewer_if_needed(assignment: ReviewAssignment) -> tuple[ReviewAssignment | None, bool]:
    unit = ReviewAssignment.objects.select_for_update().filter(
        cycle_id=assignment.cycle_id, provider_id=assignment.provider_id, criterion_id=assignment.criterion_id
    )
    rows = {a.slot: a for a in unit}
    first, second = rows.get("first"), rows.get("second")
    if not (first and second and first.is_submitted and second.is_submitted):
        return None, False
    if abs(first.score - second.score) < DISAGREEMENT_POINTS or "third" in rows:  # type: ignore[operator]
        return None, False
    reviewer = third_reviewer_pick(assignment=assignment, exclude=[first.reviewer_id, second.reviewer_id])
    if reviewer is None:
        logger.warning(
            "no unconflicted reviewer for third review of %s/%s/%s",
            assignment.cycle_id, assignment.provider_id, assignment.criterion_id,
        )
        return None, True
    third = ReviewAssignment(
        cycle_id=assignment.cycle_id, provider_id=assignment.provider_id, criterion_id=assignment.criterion_id,
        reviewer=reviewer, slot=ReviewAssignment.Slot.THIRD,
    )
    third.save()
    return third, False


def third_reviewer_pick(*, assignment: ReviewAssignment, exclude: Sequence[int]) -> Any | None:
    """The least-loaded reviewer with no conflict with the provider (ties: by username)."""
    from django.contrib.auth import get_user_model

    conflicted = ConflictOfInterest.objects.filter(provider_id=assignment.provider_id).values("reviewer_id")
    candidates = (
        get_user_model().objects.filter(groups__name=Role.REVIEWER.value, is_active=True)
        .exclude(pk__in=exclude).exclude(pk__in=conflicted)
        .annotate(open_count=Count("review_assignments", filter=Q(review_assignments__status="assigned")))
        .order_by("open_count", "username")
    )
    return candidates.first()


def reconciliation_create(
    *, cycle: Cycle, provider: Provider, criterion: Criterion, by: Any, value: float | None = None, note: str = ""
) -> Reconciliation:
    """Reconcile submitted reviews into the value used for scoring, keeping links to them.

    Two agreeing reviewers (gap < 2): their mean. A third reviewer: the median of three.
    An analyst may set a value by hand, with a note saying why.
    """
    _require_role(by, {Role.ANALYST, Role.ADMIN}, "reconcile reviews")
    submitted = list(
        ReviewAssignment.objects.filter(
            cycle=cycle, provider=provider, criterion=criterion, status=ReviewAssignment.Status.SUBMITTED
        )
    )
    slots = {a.slot: a for a in submitted}
    if value is not None:
        if not note.strip():
            raise ReviewsError("a hand-set reconciled value needs a note saying why")
        if not SCORE_MIN <= value <= SCORE_MAX:
            raise ReviewsError("a reconciled value must be within 0-4")
        if not submitted:
            raise ReviewsError("no submitted reviews to reconcile")
        method = Reconciliation.Method.MANUAL
    elif "third" in slots and {"first", "second"} <= set(slots):
        value = float(statistics.median(a.score for a in submitted))  # type: ignore[misc]
        method = Reconciliation.Method.MEDIAN
    elif {"first", "second"} <= set(slots):
        first, second = slots["first"].score, slots["second"].score
        if abs(first - second) >= DISAGREEMENT_POINTS:  # type: ignore[operator]
            raise ReviewsError("first and second reviewers disagree by 2+ points: waiting for the third reviewer")
        value = (first + second) / 2  # type: ignore[operator]
        method = Reconciliation.Method.MEAN
    else:
        raise ReviewsError("both the first and second reviews must be submitted first")
    with transaction.atomic():
        rec = Reconciliation.objects.select_for_update().filter(
            cycle=cycle, provider=provider, criterion=criterion
        ).first()
        rec = rec or Reconciliation(cycle=cycle, provider=provider, criterion=criterion)
        notes = f"Reconciled ({method}) from {len(submitted)} reviews." + (f" {note}" if note else "")
        doc = rec.doc_review
        if doc is None or doc.superseded:  # a superseded reconciliation is history: record a new one
            doc = _doc_review_record(
                cycle=cycle, provider=provider, criterion=criterion, reviewer=by, score=float(value),
                citations=_citations_union(submitted), notes=notes, is_reconciled=True,
            )
        else:  # the one route for a stored review's change: who, when and why are recorded
            from ratings.engine_types import ScoringInputError
            from ratings.services import doc_review_change

            try:
                doc = doc_review_change(
                    review=doc, changed_by=by, reason=notes, score=float(value),
                    citations=_citations_union(submitted), notes=notes, reviewer=by,
                )
            except ScoringInputError as exc:
                raise ReviewsError(str(exc)) from exc
        rec.value, rec.method, rec.note, rec.reconciled_by, rec.doc_review = value, method, note, by, doc
        _as(rec, by).save()
        rec.reviews.set(submitted)
        rec.doc_reviews.set([a.doc_review_id for a in submitted if a.doc_review_id])
    return rec


def _doc_review_record(*, reviewer: Any, **fields: Any) -> DocReview:
    """Write the evidence row through the ratings service, attributed to the reviewer."""
    from ratings.engine_types import ScoringInputError
    from ratings.services import doc_review_record

    try:
        with history_user_as(reviewer):
            doc = doc_review_record(reviewer=reviewer, **fields)
    except ScoringInputError as exc:
        raise ReviewsError(str(exc)) from exc
    return doc


def _citations_union(reviews: Sequence[ReviewAssignment]) -> list[dict[str, str]]:
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for review in reviews:
        for citation in review.citations:
            seen.setdefault((citation["url"], citation["quote"]), {"url": citation["url"], "quote": citation["quote"]})
    return list(seen.values())


# --- customer feedback ---------------------------------------------------------------------


def cycle_feedback_targets(*, cycle: Cycle) -> tuple[set[str], dict[str, str]]:
    """Keys customers may rate in this cycle's rubric, and the others with the reason why not.

    A criterion takes a rating only if customer feedback is one of its evidence kinds; an area
    only if exactly one of its criteria does (the engine gives the area's ratings to it). Anything
    else would be accepted here and then stop ``compute_tiers`` for the whole cycle.
    """
    version = cycle.rubric_version
    accepted: set[str] = set()
    refused: dict[str, str] = {}
    per_area: dict[int, list[str]] = {}
    for key, area_id, kinds in version.criteria.values_list("key", "area_id", "evidence_kinds"):
        if "customer_feedback" in (kinds or []):
            accepted.add(key)
            per_area.setdefault(area_id, []).append(key)
        else:
            refused[key] = f"this criterion takes no customer feedback (its evidence: {', '.join(kinds or []) or 'none'})"
    for area_id, key in version.areas.values_list("id", "key"):
        targets = per_area.get(area_id, [])
        if len(targets) == 1:
            accepted.add(key)
        elif not targets:
            refused[key] = "no criterion of this area takes customer feedback"
        else:
            refused[key] = f"this area has {len(targets)} customer-feedback criteria; rate one of them: {', '.join(targets)}"
    return accepted, refused


def cycle_rating_keys(*, cycle: Cycle) -> set[str]:
    """Area and criterion keys customers may rate in this cycle's rubric."""
    return cycle_feedback_targets(cycle=cycle)[0]


@dataclass(frozen=True)
class ImportReport:
    dry_run: bool
    parsed: ParseResult
    written: int
    batch_id: int | None

    @property
    def ok(self) -> bool:
        return self.parsed.ok


Progress = Callable[[str, int, int], None]  # (phase "validated" or "written", rows done, rows in all)
PROGRESS_EVERY = 5_000  # rows between two progress calls
WRITE_BATCH = 2_000  # rows per INSERT


def feedback_import(
    *, cycle: Cycle, text: str, filename: str, by: Any | None, dry_run: bool, progress: Progress | None = None,
) -> ImportReport:
    """Validate a survey export and, unless a dry run, write it in one transaction.

    Rows become ratings.CustomerFeedback evidence, linked to one FeedbackImport. Any bad
    row (including a respondent rating the same thing twice, in the file or already in
    the cycle) means nothing is written; the report lists every bad row by line number.
    ``progress`` is called every ``PROGRESS_EVERY`` rows while validating and writing.
    """
    report = None
    for step in feedback_import_steps(
        cycle=cycle, text=text, filename=filename, by=by, dry_run=dry_run,
        parse_progress=(lambda n: progress("validated", n, 0)) if progress else None,
    ):
        if isinstance(step, ImportReport):
            report = step
        elif progress and step[0] != "validated":  # validation progress came through parse_progress
            progress(*step)
    assert report is not None
    return report


def feedback_import_steps(
    *, cycle: Cycle, text: str, filename: str, by: Any | None, dry_run: bool,
    parse_progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[str, int, int] | ImportReport]:
    """``feedback_import`` as steps, for a caller that shows progress as it goes (the workbench's
    import page streams them): yields ("validated", rows read, 0) once the file is checked, then
    ("written", rows written, rows in all) after each ``PROGRESS_EVERY`` rows, and last the
    ImportReport. Consume it to the end: the writes commit only then (closed early, they roll back).

    Rows are written in bulk (a few thousand per INSERT), each with its history record and its
    audit event, as a row saved one by one would have: 50,000 rows took minutes one at a time.
    """
    if by is not None:
        _require_role(by, {Role.ANALYST, Role.ADMIN}, "import customer feedback")
    accepted, refused = cycle_feedback_targets(cycle=cycle)
    parsed = feedback_csv_parse(
        text,
        provider_slugs=set(cycle.providers.values_list("slug", flat=True)),
        rating_keys=accepted,
        pseudonym_key=settings.OPGRADE_PSEUDONYM_KEY,
        refused=refused,
        progress=parse_progress,
        progress_every=PROGRESS_EVERY,
    )
    parsed = _feedback_duplicates_check(cycle=cycle, parsed=parsed)
    yield ("validated", len(parsed.rows) + len({e.line for e in parsed.errors}), 0)
    if dry_run or not parsed.ok:
        yield ImportReport(dry_run=dry_run, parsed=parsed, written=0, batch_id=None)
        return
    providers = {p.slug: p for p in cycle.providers.all()}
    areas, criteria = _rating_targets(cycle=cycle)
    total = len(parsed.rows)
    user = by if getattr(by, "pk", None) else None
    with transaction.atomic():
        batch = FeedbackImport.objects.create(
            cycle=cycle, filename=filename[:255], sha256=hashlib.sha256(text.encode()).hexdigest(),
            row_count=total, imported_by=by,
        )
        through = FeedbackImport.rows.through
        written = 0
        for start in range(0, total, PROGRESS_EVERY):
            created, records = customer_feedback_bulk_create([
                {
                    "cycle": cycle, "provider": providers[row.provider_slug], "area": areas.get(row.area_or_criterion),
                    "criterion": criteria.get(row.area_or_criterion) if row.area_or_criterion not in areas else None,
                    "rating": row.rating, "source": row.source, "respondent_org_hash": row.respondent_org_hash,
                    "comment": row.comment, "answered_on": row.date,
                }
                for row in parsed.rows[start:start + PROGRESS_EVERY]
            ], by=user, batch_size=WRITE_BATCH)
            audit_events_bulk_record(records, created, history_user=user, batch_size=WRITE_BATCH)
            through.objects.bulk_create(
                [through(feedbackimport_id=batch.pk, customerfeedback_id=f.pk) for f in created],
                batch_size=WRITE_BATCH,
            )
            written += len(created)
            yield ("written", written, total)
    yield ImportReport(dry_run=False, parsed=parsed, written=written, batch_id=batch.pk)


@transaction.atomic
def feedback_import_rollback(*, batch: FeedbackImport, by: Any | None) -> int:
    """Undo one import as a unit: delete every feedback row it wrote (each deletion is in the
    audit trail) and mark the import rolled back. Returns how many rows were removed."""
    if by is not None:
        _require_role(by, {Role.ANALYST, Role.ADMIN}, "roll back a customer-feedback import")
    batch = FeedbackImport.objects.select_for_update().get(pk=batch.pk)
    if batch.rolled_back_at is not None:
        raise ReviewsError(f"the import {batch} was already rolled back on {batch.rolled_back_at:%Y-%m-%d %H:%M}")
    rows = list(batch.rows.all())
    batch.rows.clear()
    customer_feedback_delete(rows, by=by)
    batch.rolled_back_at = timezone.now()
    batch.rolled_back_by = by
    batch.save(update_fields=["rolled_back_at", "rolled_back_by"])
    return len(rows)


def _rating_targets(*, cycle: Cycle) -> tuple[dict[str, Area], dict[str, Criterion]]:
    version = cycle.rubric_version
    return ({a.key: a for a in version.areas.all()}, {c.key: c for c in version.criteria.all()})


def _feedback_key(row: FeedbackRow) -> tuple[str, str, str, str]:
    return (row.provider_slug, row.area_or_criterion, row.respondent_org_hash, row.source)


def _feedback_duplicates_check(*, cycle: Cycle, parsed: ParseResult) -> ParseResult:
    """A respondent rates one thing once per source: refuse repeats in the file or the cycle."""
    existing = {
        (slug, area_key or criterion_key, org, source)
        for slug, area_key, criterion_key, org, source in CustomerFeedback.objects.filter(cycle=cycle).values_list(
            "provider__slug", "area__key", "criterion__key", "respondent_org_hash", "source"
        )
    }
    first_line: dict[tuple[str, str, str, str], int] = {}
    errors, rows = list(parsed.errors), []
    for row in parsed.rows:
        key = _feedback_key(row)
        if key in existing:
            errors.append(RowError(row.line, "this respondent's rating of this item is already imported"))
        elif key in first_line:
            errors.append(RowError(row.line, f"same respondent, item and source as line {first_line[key]}"))
        else:
            first_line[key] = row.line
            rows.append(row)
    errors.sort(key=lambda e: e.line)
    return ParseResult(rows=tuple(rows), errors=tuple(errors))


def interview_note_create(
    *, cycle: Cycle, provider: Provider, area_or_criterion: str, respondent_org: str, notes: str,
    interviewed_on: dt.date, by: Any, rating: int | None = None,
) -> InterviewNote:
    """Record a customer interview; the organisation is kept only as a keyed hash."""
    _require_role(by, {Role.ANALYST, Role.ADMIN}, "enter interview notes")
    if not cycle.providers.filter(pk=provider.pk).exists():
        raise ReviewsError(f"provider {provider.slug} is not in the peer set of cycle {cycle.slug}")
    if area_or_criterion not in cycle_rating_keys(cycle=cycle):
        raise ReviewsError(f"{area_or_criterion!r} is not an area or criterion of the cycle's rubric")
    if rating is not None and not 1 <= rating <= 5:
        raise ReviewsError("rating must be 1-5")
    if not respondent_org.strip() or not notes.strip():
        raise ReviewsError("respondent organisation and notes are required")
    org_hash = org_pseudonym(respondent_org, key=settings.OPGRADE_PSEUDONYM_KEY)
    note = InterviewNote(
        cycle=cycle, provider=provider, area_or_criterion=area_or_criterion, rating=rating,
        respondent_org_hash=org_hash, notes=notes, interviewed_on=interviewed_on, interviewer=by,
    )
    with transaction.atomic():
        if rating is not None:
            areas, criteria = _rating_targets(cycle=cycle)
            duplicate = CustomerFeedback.objects.filter(
                cycle=cycle, provider=provider, respondent_org_hash=org_hash, source=CustomerFeedback.Source.INTERVIEW,
                **({"area": areas[area_or_criterion]} if area_or_criterion in areas
                   else {"criterion": criteria[area_or_criterion]}),
            ).exists()
            if duplicate:
                raise ReviewsError("this organisation's interview rating of this item is already recorded")
            note.feedback = customer_feedback_interview_create(
                cycle=cycle, provider=provider, area=areas.get(area_or_criterion),
                criterion=None if area_or_criterion in areas else criteria[area_or_criterion],
                rating=rating, respondent_org_hash=org_hash, by=by,
            )
        _as(note, by).save()
    return note


# --- overrides (four eyes) -----------------------------------------------------------------


def override_propose(
    *, cycle: Cycle, provider: Provider, criterion: Criterion, value: float, justification: str, evidence: Any,
    by: Any, reason: str = ScoreOverride.Reason.JUDGEMENT, evidence_finding: Any | None = None,
) -> ScoreOverride:
    """A publisher proposes a new normalised criterion score, with justification and evidence.

    The row is written by ``ratings.services.score_override_propose``, which applies the
    critical-finding rule: a gate failed by a critical finding takes only ``reason``
    "measurement_wrong" with ``evidence_finding`` (a later finding that shows it).
    """
    cleaned = override_validate(
        cycle=cycle, provider=provider, criterion=criterion, value=value, justification=justification,
        evidence=evidence, by=by, reason=reason, evidence_finding=evidence_finding,
    )
    try:
        return score_override_propose(
            cycle=cycle, provider=provider, criterion=criterion, value=float(value),
            justification=justification.strip(), evidence=cleaned, by=by,
            reason=reason, evidence_finding=evidence_finding,
        )
    except ScoreOverrideRefused as exc:
        raise ReviewsError(str(exc)) from exc


def override_validate(
    *, cycle: Cycle, provider: Provider, criterion: Criterion, value: Any, justification: str, evidence: Any,
    by: Any, reason: str = ScoreOverride.Reason.JUDGEMENT, evidence_finding: Any | None = None,
) -> list[dict[str, str]]:
    """Every check of ``override_propose`` without writing (the admin form shows the refusal).

    Returns the cleaned citations; raises ``ReviewsError`` (``RoleRefused`` for the role).
    """
    _require_role(by, {Role.PUBLISHER}, "propose score overrides")
    if not justification or not justification.strip():
        raise ReviewsError("a written justification is required")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ReviewsError("value is the normalised criterion score and must be within 0-1")
    _unit_check(cycle=cycle, provider=provider, criterion=criterion)
    cleaned = citations_clean(evidence)
    try:
        score_override_check(
            cycle=cycle, provider=provider, criterion=criterion, reason=reason, evidence_finding=evidence_finding
        )
    except ScoreOverrideRefused as exc:
        raise ReviewsError(str(exc)) from exc
    return cleaned


def override_decide(*, override: ScoreOverride, by: Any, approve: bool, note: str = "") -> ScoreOverride:
    """A second publisher approves or rejects; deciding on your own proposal is refused.

    A "measurement was wrong" override needs two approvals by two different publishers
    (neither the proposer): the first leaves it ``confirming``. ``ratings.services`` writes.
    """
    _require_role(by, {Role.PUBLISHER}, "decide on score overrides")
    if not approve and not note.strip():
        raise ReviewsError("say why the override is rejected")
    try:
        return score_override_decide(override=override, by=by, approve=approve, note=note)
    except ScoreOverrideFourEyes as exc:
        raise RoleRefused(str(exc)) from exc
    except ScoreOverrideRefused as exc:
        raise ReviewsError(str(exc)) from exc


# --- right of reply ------------------------------------------------------------------------


def reply_create(*, by: Any, cycle: Cycle, fact_ref: str, text: str, report_id: int | None = None) -> RightOfReply:
    """A provider user comments on a fact about their own provider in a cycle's draft."""
    provider = user_provider(by)
    if provider is None:
        raise RoleRefused("only provider users file right-of-reply comments")
    if not cycle.providers.filter(pk=provider.pk).exists():
        raise ReviewsError("your provider is not rated in this cycle")
    if not fact_ref.strip() or not text.strip():
        raise ReviewsError("say which fact (fact reference) and what is wrong with it (text)")
    if len(text) > 10_000 or len(fact_ref) > 200:
        raise ReviewsError("the comment is too long (10,000 characters; fact reference 200)")
    if report_id is not None and not report_in_fact_check_exists(cycle=cycle, pk=report_id):
        raise ReviewsError(f"report_id {report_id} is not this cycle's report in fact-check")
    reply = RightOfReply(
        provider=provider, user=by, cycle=cycle, report_id=report_id, fact_ref=fact_ref.strip(), text=text.strip()
    )
    _as(reply, by).save()
    return reply


def reply_respond(*, reply: RightOfReply, by: Any, status: str, response: str) -> RightOfReply:
    """Opgrade answers a right-of-reply comment (accepted: the fact is corrected)."""
    _require_role(by, {Role.ANALYST, Role.PUBLISHER, Role.ADMIN}, "answer right-of-reply comments")
    if status not in {RightOfReply.Status.ACCEPTED, RightOfReply.Status.DECLINED}:
        raise ReviewsError("status must be accepted or declined")
    if not response.strip():
        raise ReviewsError("a response is required")
    reply.status, reply.response = status, response.strip()
    _as(reply, by).save(update_fields=["status", "response"])
    return reply
