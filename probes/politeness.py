"""Per-provider politeness: at most N of our SSH sessions against one provider, across all workers.

Each run already bounds its own fan-out; this module bounds the sum over concurrent runs (several
probes, several workers) with a Redis counting semaphore. A slot is a member of a sorted set scored
by its expiry time; holders renew it while they work, so a worker that dies holding slots frees
them when the (short) lease runs out; the acquire script first drops expired members, then adds ours only if fewer than N remain. All of it
runs in one Lua script, so two workers cannot both take the last slot.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

_ACQUIRE = """
local key, now, limit, expires, token = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
if redis.call('ZCARD', key) < limit then
  redis.call('ZADD', key, expires, token)
  redis.call('PEXPIRE', key, math.ceil((expires - now) * 1000) + 1000)
  return 1
end
return 0
"""


class SlotUnavailable(TimeoutError):
    """No session slot for this provider came free in time. Transient: the run retries later."""

    transient = True
    code = "provider_busy"


class ProviderSlots:
    """A counting semaphore named after a provider, shared by every worker through Redis."""

    def __init__(self, *, client: redis.Redis, provider_key: str, limit: int, lease_s: float) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.client = client
        self.key = f"opgrade:probes:provider-slots:{provider_key}"
        self.limit = limit
        self.lease_s = lease_s
        self._acquire = client.register_script(_ACQUIRE)

    def try_acquire(self) -> str | None:
        token = uuid.uuid4().hex
        now = time.time()
        took = self._acquire(keys=[self.key], args=[now, self.limit, now + self.lease_s, token])
        return token if took else None

    def release(self, token: str) -> None:
        self.client.zrem(self.key, token)

    def in_use(self) -> int:
        self.client.zremrangebyscore(self.key, "-inf", time.time())
        return int(self.client.zcard(self.key))

    def renew(self, token: str) -> None:
        """Push a held slot's expiry one lease ahead (only if we still hold it)."""
        self.client.zadd(self.key, {token: time.time() + self.lease_s}, xx=True)

    @contextmanager
    def slot(self, *, wait_s: float, poll_s: float = 0.05) -> Iterator[None]:
        """Hold one slot for the duration of the block; wait at most ``wait_s`` for it.

        The lease is short and renewed from a side thread while the block runs, so a holder that
        dies (SIGKILL) frees its slot within one lease, while a live one keeps it however long.
        """
        deadline = time.monotonic() + wait_s
        token = self.try_acquire()
        while token is None:
            if time.monotonic() >= deadline:
                raise SlotUnavailable(f"no free session slot for {self.key} within {wait_s:.0f}s")
            time.sleep(poll_s)
            token = self.try_acquire()
        stop = threading.Event()

        def keep_alive() -> None:
            while not stop.wait(self.lease_s / 3):
                self.renew(token)

        renewer = threading.Thread(target=keep_alive, name="provider-slot-renew", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join(timeout=5)
            self.release(token)
