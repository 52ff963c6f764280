"""The Django side of a frozen, versioned document: model, guard, lookup, writes, command verbs.

A rubric version (``rubric.models.RubricVersion``) and a grade definition
(``grades.models.GradeDefinition``) are the same kind of row: ``NAME@VERSION``, a draft until
frozen, then immutable (refused by the services, by the model's ``save``/``delete`` and by a
database trigger) and changed only by cloning it into a new draft; frozen with the sha256 of
its canonical text (``rubric.yaml_kit.fingerprint``), which the row keeps. This module holds
what the two share, so each app writes only what is its own (its fields, its YAML format,
what its content is made of):

* :class:`FrozenDocument`, the abstract model: the status choices, ``label``, ``is_frozen``,
  and ``save``/``delete`` that refuse a stored frozen row with the model's own error
  (:meth:`FrozenDocument.frozen_error`). It declares no field: each model keeps its columns
  in their order and with their help texts, so no migration follows and the audit trail
  (``reviews.history``) lists a row's fields as it did.
* :func:`frozen_document_guard`, the database trigger of such a table.
* :func:`document_get` (by label or id), :func:`document_lock_draft`, :func:`document_freeze`,
  :func:`document_import_existing`, :func:`document_create_race`, :func:`document_clone_label`,
  :func:`document_draft_delete`: the reads and writes every app's services compose.
* :class:`VersionedDocumentCommand`: ``import``, ``export``, ``diff``, ``freeze`` and ``clone``
  as one management command base; an app's command names the service or selector each
  verb calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Protocol

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from config.errors import NotFound
from config.immutability import Guard, ImmutableError
from rubric.yaml_kit import FormatError, fingerprint, label_problems


class DocumentNotFound(LookupError, NotFound):
    """No document answers to the given reference."""


class DocumentConflictError(Exception):
    """A document NAME@VERSION already exists (with other content, or at all for a clone)."""


# --------------------------------------------------------------------------- model


class FrozenDocument(models.Model):
    """Abstract: a ``NAME@VERSION`` row that is a draft until frozen, then refuses every change.

    A concrete model declares ``name``, ``version``, ``status`` (``choices=Status.choices``),
    ``frozen_at``, ``fingerprint`` and ``parent``, sets ``document_noun`` (how messages name
    one) and returns its own :class:`ImmutableError` from :meth:`frozen_error`.
    """

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        FROZEN = "frozen", "Frozen"

    document_noun: ClassVar[str] = "document"
    name: str
    version: str
    status: str
    fingerprint: str

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The freeze itself is the one write allowed: a conditional UPDATE of a stored draft.
        if self.stored_is_frozen():
            raise self.frozen_error()
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        if self.stored_is_frozen():
            raise self.frozen_error()
        return super().delete(*args, **kwargs)

    def frozen_error(self, what: str | None = None) -> ImmutableError:
        """The error that refuses a change of this frozen row (``what`` names the part refused)."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def is_frozen(self) -> bool:
        return self.status == self.Status.FROZEN

    def stored_is_frozen(self) -> bool:
        """Whether the stored row (not this instance, which may be stale or edited) is frozen."""
        if self.pk is None:
            return False
        return type(self)._default_manager.filter(pk=self.pk, status=self.Status.FROZEN).exists()


def frozen_document_guard(*, table: str, message: str, replaces: tuple[str, ...] = ()) -> Guard:
    """The trigger that refuses any UPDATE or DELETE of a frozen row of ``table``.

    The freeze (draft -> frozen, one UPDATE) passes: the condition reads the row's *old* status.
    """
    frozen = "OLD.status = 'frozen'"
    return Guard(name=f"{table}_frozen", table=table, message=message, refuse={"UPDATE": frozen, "DELETE": frozen},
                 replaces=replaces)


# --------------------------------------------------------------------------- reads


def document_get[D: FrozenDocument](model: type[D], *, ref: str | int, not_found: type[DocumentNotFound]) -> D:
    """Find a row by ``NAME@VERSION`` or by its numeric id; ``not_found`` says which it was not."""
    noun = model.document_noun
    text = str(ref).strip()
    if "@" in text:
        name, _, version = text.partition("@")
        found = model._default_manager.filter(name=name, version=version).first()
    elif text.isdigit():
        found = model._default_manager.filter(pk=int(text)).first()
    else:
        raise not_found(f"'{text}' is not a {noun} reference: use NAME@VERSION or an id")
    if found is None:
        raise not_found(f"no {noun} '{text}'")
    return found


# --------------------------------------------------------------------------- writes
# Each runs inside its caller's transaction (the services are atomic); atomic(savepoint=False)
# opens one only when called outside any, and costs no query inside one.


@transaction.atomic(savepoint=False)
def document_lock_draft[D: FrozenDocument](document: D, *, what: str | None = None) -> D:
    """Lock the row for the rest of the transaction and return it as stored; refuse it if frozen."""
    row = type(document)._default_manager.select_for_update().get(pk=document.pk)
    if row.is_frozen:
        raise row.frozen_error(what)
    return row


@transaction.atomic(savepoint=False)
def document_freeze[D: FrozenDocument](document: D, *, canonical_text: Callable[[D], str]) -> D:
    """Freeze a draft: lock it, validate it, record ``frozen_at`` and the fingerprint; return it.

    ``canonical_text(row)`` validates the locked draft's whole content (raising the format's
    error) and returns the canonical text the fingerprint is taken of. Freezing a frozen row
    changes nothing and returns it.
    """
    model = type(document)
    row = model._default_manager.select_for_update().get(pk=document.pk)
    if row.is_frozen:
        return row
    text = canonical_text(row)
    updated = model._default_manager.filter(pk=row.pk, status=FrozenDocument.Status.DRAFT).update(
        status=FrozenDocument.Status.FROZEN, frozen_at=timezone.now(), fingerprint=fingerprint(text),
    )
    if updated != 1:  # pragma: no cover - the row lock above makes this unreachable
        raise row.frozen_error()
    row.refresh_from_db()
    return row


def document_import_existing[D: FrozenDocument](
    existing: D, *, same_content: bool, filename: str, freeze: bool, freeze_with: Callable[[D], D],
    conflict: type[DocumentConflictError],
) -> tuple[D, bool, str]:
    """An import whose label is taken: (the row, whether it was frozen now, the message).

    Identical content is a no-op that may still freeze the draft when asked; other content
    under the same label is a ``conflict``.
    """
    if not same_content:
        raise conflict(f"{filename}: {existing.document_noun} {existing.label} already exists with different "
                       "content; give the new content a new version label")
    if freeze and not existing.is_frozen:
        frozen = freeze_with(existing)
        return frozen, True, f"{frozen.label} already existed with identical content; froze it"
    state = "frozen" if existing.is_frozen else "draft"
    return existing, False, f"{existing.label} already exists with identical content ({state}); nothing imported"


def document_imported_message(document: FrozenDocument, *, counts: str, frozen: bool) -> str:
    return f"imported {document.label} ({counts}){', frozen' if frozen else ' as a draft'}"


@contextmanager
def document_create_race(*, filename: str, label: str, conflict: type[DocumentConflictError]) -> Iterator[None]:
    """Create a new label's rows in a savepoint: a concurrent import that won the race is a ``conflict``."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError as exc:
        raise conflict(f"{filename}: could not create {label}: {exc}") from exc


def document_clone_label(
    model: type[FrozenDocument], *, name: str, version: str, error: type[FormatError],
    conflict: type[DocumentConflictError],
) -> tuple[str, str]:
    """A clone's (name, version), checked: a valid label (else ``error``) that no row holds yet."""
    label = version.strip()
    problems = label_problems(name=name, version=label, context="clone")
    if problems:
        raise error(problems)
    if model._default_manager.filter(name=name, version=label).exists():
        raise conflict(f"{model.document_noun} {name}@{label} already exists")
    return name, label


@transaction.atomic(savepoint=False)
def document_draft_delete(document: FrozenDocument, *, what: str | None = None) -> None:
    """Delete a draft (and what cascades from it); a frozen row is never deleted."""
    document_lock_draft(document, what=what).delete()


# --------------------------------------------------------------------------- command


class _Diff(Protocol):
    def as_text(self) -> str: ...


class VersionedDocumentCommand(BaseCommand):
    """``import``, ``export``, ``diff``, ``freeze`` and ``clone`` of one kind of frozen document.

    Documents are named ``NAME@VERSION`` or by id. Each verb parses its arguments, calls the one
    service or selector the subclass names (the ``get``/``import_text``/... methods) and prints
    the result; a refusal exits non-zero with its message. ``add_actions`` adds verbs of the
    app's own (a verb ``x`` runs the method ``_x``).
    """

    kind = "document"  # what its files are: "a rubric YAML file"
    thing = "document"  # what one is called on the command line: "version", "grade"
    errors: tuple[type[BaseException], ...] = (FormatError, DocumentConflictError, ImmutableError, DocumentNotFound)

    def get(self, ref: str) -> Any:
        raise NotImplementedError

    def import_text(self, *, text: str, filename: str, freeze: bool) -> str:
        """Import a document; return the service's message."""
        raise NotImplementedError

    def export(self, document: Any) -> str:
        raise NotImplementedError

    def diff(self, a: Any, b: Any) -> _Diff:
        raise NotImplementedError

    def freeze(self, document: Any) -> Any:
        raise NotImplementedError

    def clone(self, source: Any, *, version: str, name: str | None) -> Any:
        raise NotImplementedError

    def add_actions(self, sub: Any) -> None:
        """Add the app's own subcommands to ``sub`` (argparse's subparsers)."""

    def add_arguments(self, parser: CommandParser) -> None:
        thing = self.thing
        sub = parser.add_subparsers(dest="action", required=True)
        imp = sub.add_parser("import", help=f"Import a {self.kind} YAML file (idempotent).")
        imp.add_argument("file")
        imp.add_argument("--freeze", action="store_true", help=f"Freeze the {thing} after importing it.")
        exp = sub.add_parser("export", help=f"Print a {thing} as canonical YAML.")
        exp.add_argument("ref", help="NAME@VERSION or id")
        exp.add_argument("-o", "--output", help="Write to this file instead of stdout.")
        diff = sub.add_parser("diff", help=f"Show what changed from {thing} A to {thing} B.")
        diff.add_argument("a")
        diff.add_argument("b")
        frz = sub.add_parser("freeze", help=f"Validate and freeze a draft {thing}.")
        frz.add_argument("ref")
        cln = sub.add_parser("clone", help=f"Clone a {thing} into a new draft.")
        cln.add_argument("ref")
        cln.add_argument("--version", dest="new_version", required=True, help="Label of the new draft.")
        cln.add_argument("--name", dest="new_name",
                         help=f"{self.kind.capitalize()} name of the new draft (default: the same).")
        self.add_actions(sub)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except self.errors as exc:
            raise CommandError(str(exc)) from exc

    def _import(self, options: dict[str, Any]) -> None:
        path = Path(options["file"])
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: cannot read: {exc}") from exc
        self.stdout.write(self.import_text(text=text, filename=str(path), freeze=options["freeze"]))

    def _export(self, options: dict[str, Any]) -> None:
        text = self.export(self.get(options["ref"]))
        if options.get("output"):
            Path(options["output"]).write_text(text, encoding="utf-8")
        else:
            # Write the text untouched (no added newline): the export must round-trip byte for byte.
            self.stdout.write(text, ending="")

    def _diff(self, options: dict[str, Any]) -> None:
        a, b = self.get(options["a"]), self.get(options["b"])
        self.stdout.write(self.diff(a, b).as_text(), ending="")

    def _freeze(self, options: dict[str, Any]) -> None:
        document = self.get(options["ref"])
        was_frozen = document.is_frozen
        document = self.freeze(document)
        state = "was already frozen" if was_frozen else "frozen"
        self.stdout.write(f"{document.label} {state}; fingerprint sha256:{document.fingerprint}")

    def _clone(self, options: dict[str, Any]) -> None:
        source = self.get(options["ref"])
        clone = self.clone(source, version=options["new_version"], name=options.get("new_name"))
        self.stdout.write(f"cloned {source.label} into draft {clone.label} (id {clone.pk})")

