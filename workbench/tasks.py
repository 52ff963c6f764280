"""Celery task of the workbench: one step of a cluster's queue of disruptive probes (thin)."""

from __future__ import annotations

import logging
from datetime import datetime

from celery import shared_task

from workbench import services

logger = logging.getLogger(__name__)


@shared_task(name="workbench.probe_sequence_advance", ignore_result=True, acks_late=True)
def probe_sequence_advance_task(
    cycle_id: int, cluster_id: int, wait_ids: list[int], remaining: list[str], slot: str
) -> None:
    step = services.probe_sequence_advance(
        cycle_id=cycle_id, cluster_id=cluster_id, wait_ids=list(wait_ids), remaining=list(remaining),
        slot=datetime.fromisoformat(slot),
    )
    logger.info("disruptive probes of cluster %s in cycle %s: %s", cluster_id, cycle_id, step)
