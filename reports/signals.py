"""Forget this process's memo of report cache keys whenever a report is saved or deleted."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from reports.models import Report
from reports.rendering import meta_cache


@receiver([post_save, post_delete], sender=Report, dispatch_uid="reports.meta_cache_clear")
def report_meta_cache_clear(**_: Any) -> None:
    meta_cache.clear()
    # Again after commit: a request in between may have memoised the pre-commit row.
    transaction.on_commit(meta_cache.clear)
