"""Who may publish: holders of `reports.publish_report`, or staff in the "publisher" group.

One helper so that services, admin and API ask the same question the same way. The group
is the reviewers' "publisher" role (reviews.access) when that app is installed; migration
0003 creates it and grants the permission otherwise. Group membership counts on its own
because a role sync may rewrite the group's permission list without knowing our
custom permission.
"""

from __future__ import annotations

from typing import Any

PUBLISH_PERMISSION = "reports.publish_report"
PUBLISHER_GROUP = "publisher"


def can_publish(user: Any) -> bool:
    """True for an active user with reports.publish_report, or active staff in "publisher"."""
    if user is None or not getattr(user, "is_active", False):
        return False
    if user.has_perm(PUBLISH_PERMISSION):
        return True
    return bool(user.is_staff and user.groups.filter(name=PUBLISHER_GROUP).exists())
