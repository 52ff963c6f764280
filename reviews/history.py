"""Audit trail registration: simple-history on other apps' models, and the field-level diff.

Rubric, providers, ratings and reports rows are owned by apps below this one, which must not
depend on it, so their history models are registered from here with ``app="reviews"``: the
history tables live in this app's migrations and the owning apps stay unaware. This module
imports no model of its own app (reviews.models calls ``foreign_history_register`` while
models load); the receiver that copies every historical record into one ``AuditEvent`` is
``reviews.receivers``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import simple_history
from django.db import models

from providers.models import Cluster, Cycle, Provider
from ratings.models import CustomerFeedback, DocReview, ScoreOverride, ScoreSnapshot, TierAssignment
from reports.models import Report
from rubric.models import Area, Criterion, RubricVersion

# Models owned by the apps below whose changes must be audited (reviews sits above them all,
# so it imports them directly).
FOREIGN_AUDITED: tuple[type[models.Model], ...] = (
    RubricVersion, Area, Criterion,
    Provider, Cluster, Cycle,
    DocReview, CustomerFeedback, ScoreSnapshot, TierAssignment, ScoreOverride,
    Report,
)

# Field names whose values never go into the audit log (credentials, keys, hashes).
_SECRET_MARKERS = ("secret", "password", "token", "private_key", "credential", "_hash")
_MAX_VALUE_CHARS = 500


def foreign_history_register() -> None:
    """Attach simple-history to each audited model of another app (idempotent)."""
    for model in FOREIGN_AUDITED:
        if hasattr(model, "history"):
            continue  # its own app already keeps history
        simple_history.register(model, app="reviews")


def _display(field_name: str, value: Any) -> str | None:
    if any(marker in field_name for marker in _SECRET_MARKERS):
        return "[redacted]"
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"


def _tracked_fields(history_instance: models.Model) -> list[str]:
    return [f.attname for f in history_instance.instance_type._meta.concrete_fields]  # type: ignore[attr-defined]


def audit_changes(history_instance: Any) -> list[dict[str, str | None]]:
    """Field-level before/after of one historical record against the previous one."""
    fields = _tracked_fields(history_instance)
    previous = history_instance.prev_record if history_instance.history_type != "+" else None
    changes: list[dict[str, str | None]] = []
    for name in fields:
        after = getattr(history_instance, name, None)
        before = getattr(previous, name, None) if previous is not None else None
        if history_instance.history_type == "-":
            before, after = after, None
        if previous is not None and before == after:
            continue
        if previous is None and history_instance.history_type == "+" and after in (None, ""):
            continue
        changes.append({"field": name, "before": _display(name, before), "after": _display(name, after)})
    return changes


@contextmanager
def history_user_as(user: Any) -> Iterator[None]:
    """Attribute history records written inside the block to `user`.

    For saves done by another app's service (which cannot take our `_history_user`),
    outside a request: simple-history then reads the user from its request context.
    Inside a request the middleware's own request is restored afterwards.
    """
    from simple_history.models import HistoricalRecords

    context = HistoricalRecords.context
    previous = getattr(context, "request", None)
    context.request = SimpleNamespace(user=user)
    try:
        yield
    finally:
        if previous is None:
            del context.request
        else:
            context.request = previous
