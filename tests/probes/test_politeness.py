"""The provider-wide session semaphore, on the real Redis."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import redis
from django.conf import settings

from probes.politeness import ProviderSlots, SlotUnavailable


@pytest.fixture
def client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


def slots(client: redis.Redis, limit: int, lease_s: float = 30) -> ProviderSlots:
    return ProviderSlots(client=client, provider_key=f"test-{uuid.uuid4().hex}", limit=limit, lease_s=lease_s)


def test_no_more_than_the_limit_hold_a_slot_at_once_across_independent_holders(client: redis.Redis) -> None:
    first = slots(client, limit=2)
    # A second object on the same key stands for another worker process.
    second = ProviderSlots(client=redis.Redis.from_url(settings.REDIS_URL), provider_key=first.key.rsplit(":", 1)[1],
                           limit=2, lease_s=30)  # fmt: skip
    lock = threading.Lock()
    running = peak = 0

    def work(sem: ProviderSlots) -> None:
        nonlocal running, peak
        with sem.slot(wait_s=20):
            with lock:
                running += 1
                peak = max(peak, running)
            time.sleep(0.05)
            with lock:
                running -= 1

    threads = [threading.Thread(target=work, args=(first if i % 2 else second,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert peak == 2 and first.in_use() == 0


def test_waiting_too_long_for_a_slot_is_a_transient_error(client: redis.Redis) -> None:
    sem = slots(client, limit=1)
    with sem.slot(wait_s=1), pytest.raises(SlotUnavailable) as caught, sem.slot(wait_s=0.2):
        pass
    assert caught.value.transient


def test_slots_of_a_dead_holder_expire_with_their_lease(client: redis.Redis) -> None:
    sem = slots(client, limit=1, lease_s=0.3)
    assert sem.try_acquire() is not None  # never released: its worker "died"
    assert sem.try_acquire() is None
    time.sleep(0.4)
    assert sem.try_acquire() is not None
