"""Celery tasks of the probes app: thin wrappers that take ids and call one service each.

State lives on ProbeRun rows, not in Celery results. ``acks_late`` + ``reject_on_worker_lost``
make the broker redeliver a run whose worker died; the atomic claim in ``probe_run_execute`` makes
that redelivery (or any duplicate) safe; a redelivery that finds its run still held by a dead
claimant comes back once the claim is stale instead of being dropped. Probe runs go to the
``probes`` queue.

A fault of our own coordination (the database or Redis unavailable) escaping the service is not
the run's failure: the task comes back with bounded backoff, and the claim decides what is left to
do. Should the broker be down too, so that not even the retry can be sent, the run's row is where
the sweeper finds it.
"""

from __future__ import annotations

import logging

import redis
from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError

from probes import services

logger = logging.getLogger(__name__)

#: Deliveries a run gets back after a coordination fault escaped (then the sweeper has it).
COORDINATION_RETRIES = 8


@shared_task(
    name=services.PROBE_RUN_EXECUTE_TASK,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    max_retries=None,  # bounded by OPGRADE_PROBE_MAX_ATTEMPTS on the row, not by Celery
)
def probe_run_execute_task(self, run_id: int) -> None:  # type: ignore[no-untyped-def]
    try:
        result = services.probe_run_execute(run_id=run_id, worker=services.probe_worker_identity())
    except SoftTimeLimitExceeded:
        services.probe_run_fail(
            run_id=run_id, code="time_limit", message="the run exceeded its soft time limit"
        )
        return
    except (OperationalError, InterfaceError, redis.RedisError) as exc:
        retries = self.request.retries or 0
        logger.warning("probe run %s: coordination fault (%s: %s), delivery %s", run_id, type(exc).__name__,
                       exc, retries + 1)
        if retries >= COORDINATION_RETRIES:
            return  # the row is pending or running with a heartbeat going stale: the sweeper re-sends it
        raise self.retry(countdown=min(2 ** retries, 60)) from exc
    logger.info("probe run %s: %s (%s findings)", run_id, result.status, result.findings)
    if result.retry_in is not None:
        raise self.retry(countdown=result.retry_in)


@shared_task(name=services.PROBE_SCHEDULE_FIRE_TASK, ignore_result=True, acks_late=True)
def probe_schedule_fire_task(schedule_id: int) -> None:
    services.probe_schedule_fire(schedule_id=schedule_id)


@shared_task(name=services.PROBE_RUN_SWEEP_TASK, ignore_result=True)
def probe_run_sweep_task() -> None:
    resent = services.probe_runs_sweep()
    if resent:
        logger.warning("re-sent %d stuck probe runs: %s", len(resent), resent)
