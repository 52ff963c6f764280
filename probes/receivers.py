"""Signal receivers of the probes app, connected in ProbesConfig.ready.

A ProbeSchedule fires through a django-celery-beat PeriodicTask. Whoever saves the schedule
(the admin, the API, a management command, a shell), the save syncs that task through
``probes.services.probe_schedule_sync``, and a deletion removes it; after every migrate the
sweeper's own PeriodicTask is ensured the same way.
"""

from __future__ import annotations

from typing import Any

from probes import services
from probes.models import ProbeSchedule


def probe_schedule_saved(*, sender: Any, instance: ProbeSchedule, raw: bool = False,
                         update_fields: Any = None, **_: Any) -> None:
    """post_save: sync the schedule's PeriodicTask (not for fixtures, nor for the sync's own save)."""
    if raw or (update_fields is not None and set(update_fields) <= {"periodic_task"}):
        return
    services.probe_schedule_sync(schedule=instance)


def probe_schedule_deleted(*, sender: Any, instance: ProbeSchedule, **_: Any) -> None:
    """post_delete: the schedule is gone, so beat must stop firing it."""
    services.probe_schedule_unsync(schedule=instance)


def sweeper_schedule_after_migrate(*, app_config: Any = None, **_: Any) -> None:
    """post_migrate (probes): make sure the stuck-run sweeper fires every minute."""
    if app_config is not None and app_config.label == "probes":
        services.probe_sweeper_schedule_ensure()
