"""Signal receivers of the reviews app, connected in ReviewsConfig.ready.

``audit_event_record`` copies every historical record simple-history writes (ours or another
app's, see reviews.history) into one ``AuditEvent`` with the field-level before/after, so the
admin can list who changed what, when, across all models.
"""

from __future__ import annotations

from typing import Any

from reviews.history import audit_changes
from reviews.models import AuditEvent


def audit_event_record(*, sender: Any, history_instance: Any, history_user: Any = None, **_: Any) -> None:
    """simple-history `post_create_historical_record` receiver: write one AuditEvent."""
    meta = history_instance.instance_type._meta
    user = history_user if getattr(history_user, "pk", None) else None
    AuditEvent.objects.create(
        at=history_instance.history_date,
        user=user,
        username=user.get_username() if user else "",
        model=f"{meta.app_label}.{meta.model_name}",
        object_id=str(getattr(history_instance, meta.pk.attname)),
        object_repr=str(history_instance.instance)[:200],
        action=history_instance.history_type,
        changes=audit_changes(history_instance),
    )
