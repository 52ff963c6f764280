"""Who may do what: the five roles, their permissions, and the checks every endpoint declares.

Project-wide, so it lives in the project package: every app's API, admin and services ask
the same questions here (roles, narrowing a queryset to a provider user, who may publish).

Roles are Django groups (created by migration 0002 and kept in sync by `roles_sync`):

| role      | staff | what for                                                             |
|-----------|-------|----------------------------------------------------------------------|
| analyst   | yes   | runs cycles: rubric, providers, probes, assignments, feedback import  |
| reviewer  | yes   | scores documentation blind: only their own assignments                |
| publisher | yes   | reads everything, proposes and approves overrides (four eyes)         |
| admin     | yes   | everything                                                           |
| provider  | no    | an outside user of ONE provider (ProviderMembership): the portal only |

API views derive from `RoleViewSetMixin` and declare ``roles = {"read": {...}, "write": {...}}``
(enforced by `RolePermission`); a
view that provider users may reach says so and narrows its queryset with
`queryset_for_user`. Every other API view (other apps' included) is closed to provider
users by `NotProviderUser`, the project's default permission: an outside account sees
nothing it was not explicitly given.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any, ClassVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Model, QuerySet
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request


class Role(StrEnum):
    ANALYST = "analyst"
    REVIEWER = "reviewer"
    PUBLISHER = "publisher"
    ADMIN = "admin"
    PROVIDER = "provider"


STAFF_ROLES: frozenset[Role] = frozenset({Role.ANALYST, Role.REVIEWER, Role.PUBLISHER, Role.ADMIN})
ALL_STAFF_READ: frozenset[Role] = frozenset({Role.ANALYST, Role.PUBLISHER, Role.ADMIN})
# When a user is in several groups the strongest role wins (a provider user in a staff
# group is a configuration error and is treated as staff only if also is_staff).
_PRECEDENCE: tuple[Role, ...] = (Role.ADMIN, Role.PUBLISHER, Role.ANALYST, Role.REVIEWER, Role.PROVIDER)

# Django model permissions each group holds, by app label (codename actions) and by model.
# Applied by reviews.services.roles_sync; models added later by other apps are covered on
# the next migrate or `manage.py roles_sync`.
_MANAGED_APPS = ("rubric", "providers", "ratings", "probes", "costs", "grades", "reports", "django_celery_beat")
ROLE_PERMISSIONS: dict[Role, dict[str, tuple[str, ...]]] = {
    Role.ANALYST: {
        **dict.fromkeys((a for a in _MANAGED_APPS if a != "ratings"), ("view", "add", "change")),
        **dict.fromkeys(
            ("ratings.docreview", "ratings.customerfeedback", "ratings.scoresnapshot", "ratings.tierassignment"),
            ("view", "add", "change"),
        ),
        "ratings.scoreoverride": ("view",),
        "reviews.reviewassignment": ("view", "add", "change"),
        "reviews.conflictofinterest": ("view", "add", "change"),
        "reviews.reconciliation": ("view", "add", "change"),
        "reviews.interviewnote": ("view", "add", "change"),
        "reviews.feedbackimport": ("view", "add"),
        "reviews.rightofreply": ("view", "change"),
        "reviews.providermembership": ("view",),
        "reviews.auditevent": ("view",),
    },
    Role.REVIEWER: {
        "reviews.reviewassignment": ("view", "change"),
        "reviews.conflictofinterest": ("view", "add"),
        "rubric.criterion": ("view",),
    },
    Role.PUBLISHER: {
        **dict.fromkeys((*_MANAGED_APPS, "reviews"), ("view",)),
        "reports": ("view", "add", "change", "publish"),
        "ratings.scoreoverride": ("view", "add", "change"),
        "reviews.rightofreply": ("view", "change"),
    },
    Role.ADMIN: dict.fromkeys((*_MANAGED_APPS, "reviews", "auth", "axes"), ("view", "add", "change", "delete", "publish")),
    Role.PROVIDER: {},
}
ROLE_IS_STAFF: dict[Role, bool] = {role: role in STAFF_ROLES for role in Role}


def user_roles(user: AbstractBaseUser | AnonymousUser | None) -> frozenset[Role]:
    """Every role the user holds (superusers count as admin)."""
    if user is None or not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_opgrade_roles", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
        cached = frozenset(Role(n) for n in names if n in Role.__members__.values())
        if getattr(user, "is_superuser", False):
            cached = cached | {Role.ADMIN}
        user._opgrade_roles = cached  # type: ignore[union-attr]
    return cached


def user_role(user: AbstractBaseUser | AnonymousUser | None) -> Role | None:
    """The user's effective role: the strongest one held, or None."""
    roles = user_roles(user)
    return next((role for role in _PRECEDENCE if role in roles), None)


def user_provider(user: AbstractBaseUser | AnonymousUser | None) -> Any | None:
    """The one provider a provider-role user belongs to (None for everyone else)."""
    if user_role(user) != Role.PROVIDER:
        return None
    membership = getattr(user, "provider_membership", None)
    return membership.provider if membership is not None else None


def is_provider_user(user: AbstractBaseUser | AnonymousUser | None) -> bool:
    """True for outside accounts: the provider role, or any membership without a staff role."""
    role = user_role(user)
    if role == Role.PROVIDER:
        return True
    return role is None and user is not None and user.is_authenticated and hasattr(user, "provider_membership")


def queryset_for_user[M: Model](
    queryset: QuerySet[M], user: AbstractBaseUser | AnonymousUser | None, *, provider_field: str | None = "provider",
    staff_roles: Iterable[Role] = ALL_STAFF_READ,
) -> QuerySet[M]:
    """Narrow a queryset to what the user may see.

    Staff in `staff_roles` see everything; a provider user sees only rows whose
    `provider_field` is their provider (nothing if the model has no provider field or
    they have no membership); everyone else sees nothing.
    """
    role = user_role(user)
    if role in set(staff_roles):
        return queryset
    if role == Role.PROVIDER and provider_field is not None:
        provider = user_provider(user)
        if provider is not None:
            return queryset.filter(**{provider_field: provider})
    return queryset.none()


class NotProviderUser(BasePermission):
    """Project default: any signed-in user except provider users, unless the view opts in.

    A view opts provider users in by declaring ``roles`` that include Role.PROVIDER (and
    then it must narrow its queryset with `queryset_for_user`).
    """

    message = "Provider accounts may only use the provider portal and the endpoints made for them."

    def has_permission(self, request: Request, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if is_provider_user(request.user):
            declared = getattr(view, "roles", None) or {}
            return any(Role.PROVIDER in set(group) for group in declared.values())
        return True


class RolePermission(BasePermission):
    """Allow a request only if the user's role is declared by the view for this kind of method.

    Views declare ``roles = {"read": {Role...}, "write": {Role...}}``; an action may
    refine it with ``action_roles = {"approve": {...}}``.
    """

    message = "Your role may not use this endpoint."

    def has_permission(self, request: Request, view: Any) -> bool:
        role = user_role(request.user)
        if role is None:
            return False
        action = getattr(view, "action", None)
        per_action: dict[str, Iterable[Role]] = getattr(view, "action_roles", {}) or {}
        if action in per_action:
            return role in set(per_action[action])
        declared: dict[str, Iterable[Role]] = getattr(view, "roles", {}) or {}
        kind = "read" if request.method in SAFE_METHODS else "write"
        return role in set(declared.get(kind, ()))


class RoleViewSetMixin:
    """The API's one viewset base: a view declares which roles may read and which may write.

    ``roles = {"read": {Role...}, "write": {Role...}}``, refined per action by
    ``action_roles = {"approve": {...}}``; a view that admits provider users names
    Role.PROVIDER and narrows its queryset with `queryset_for_user`.
    """

    permission_classes: ClassVar[list[Any]] = [RolePermission]
    roles: ClassVar[dict[str, set[Role]]] = {}
    action_roles: ClassVar[dict[str, set[Role]]] = {}


# --------------------------------------------------------------------------------- publishing
# Who may publish reports: holders of `reports.publish_report`, or staff in the "publisher"
# group. One helper so that services, admin and API ask the same question the same way.
# Group membership counts on its own because a role sync may rewrite the group's permission
# list without knowing the reports app's custom permission (reports migration 0003 grants it).
PUBLISH_PERMISSION = "reports.publish_report"
PUBLISHER_GROUP = Role.PUBLISHER.value


def can_publish(user: Any) -> bool:
    """True for an active user with reports.publish_report, or active staff in "publisher"."""
    if user is None or not getattr(user, "is_active", False):
        return False
    if user.has_perm(PUBLISH_PERMISSION):
        return True
    return bool(user.is_staff and user.groups.filter(name=PUBLISHER_GROUP).exists())
