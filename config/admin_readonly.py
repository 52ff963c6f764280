"""One read-only admin mixin for rows that only services write (snapshots, findings, audit events).

Listed and shown to whoever may view them; never added, changed or deleted through the
admin (their models, and for most a database trigger, refuse it too). Works for a
``ModelAdmin`` and for an inline.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


class ReadOnlyAdminMixin:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
