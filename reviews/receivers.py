"""Signal receivers of the reviews app, connected in ReviewsConfig.ready.

``audit_event_record`` copies every historical record simple-history writes (ours or another
app's, see reviews.history) into one ``AuditEvent`` with the field-level before/after, so the
admin can list who changed what, when, across all models.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reviews.history import audit_changes
from reviews.models import AuditEvent


def audit_event_record(*, sender: Any, history_instance: Any, history_user: Any = None, **_: Any) -> None:
    """simple-history `post_create_historical_record` receiver: write one AuditEvent."""
    audit_event_build(history_instance, history_user).save()


def audit_events_bulk_record(history_instances: Iterable[Any], objects: Iterable[Any], history_user: Any = None,
                             batch_size: int = 2000) -> int:
    """The AuditEvents of historical records written in bulk (simple-history's bulk writes send
    no signal, so a bulk writer calls this with what it wrote, and the objects they record, in
    the same order, whose related rows are already loaded). Returns how many were written."""
    events = [audit_event_build(h, history_user, instance=o)
              for h, o in zip(history_instances, objects, strict=True)]
    AuditEvent.objects.bulk_create(events, batch_size=batch_size)
    return len(events)


def audit_event_build(history_instance: Any, history_user: Any = None, instance: Any = None) -> AuditEvent:
    """One unsaved AuditEvent for one historical record (``instance``: the object it records,
    when at hand, so naming it reads no related row again)."""
    meta = history_instance.instance_type._meta
    user = history_user if getattr(history_user, "pk", None) else None
    return AuditEvent(
        at=history_instance.history_date,
        user=user,
        username=user.get_username() if user else "",
        model=f"{meta.app_label}.{meta.model_name}",
        object_id=str(getattr(history_instance, meta.pk.attname)),
        object_repr=str(history_instance.instance if instance is None else instance)[:200],
        action=history_instance.history_type,
        changes=audit_changes(history_instance),
    )
