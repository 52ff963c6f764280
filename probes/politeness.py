"""Per-provider politeness: at most N of our SSH sessions against one provider, across all workers.

Each run already bounds its own fan-out; this module bounds the sum over concurrent runs (several
probes, several workers) with a Redis counting semaphore. A slot is a member of a sorted set scored
by its expiry time; holders renew it while they work, so a worker that dies holding slots frees
them when the (short) lease runs out; the acquire script first drops expired members, then adds ours only if fewer than N remain. All of it
runs in one Lua script, so two workers cannot both take the last slot.

Redis is our coordination, not the provider: when it is unavailable, nothing here may turn a
measurement into an error. Acquiring waits (bounded backoff, within the caller's deadline) until
Redis answers again, then raises ``CoordinationUnavailable``, a transient fault of ours; renewing
keeps trying; a release that fails is retried from a side thread until Redis is back or the slot's
lease has run out (every slot expires by itself: its score is its expiry and the key has a TTL, so
a lost release cannot leak a slot). Each such fault is noted on the ``Lease`` so the caller can
say in its evidence that our coordination faltered.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

logger = logging.getLogger(__name__)

#: Longest pause between two tries while Redis is unavailable (the backoff doubles up to it).
BACKOFF_MAX_S = 5.0

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

# Push one held slot's expiry a lease ahead, and the key's TTL with it (never shorten it).
_RENEW = """
local key, expires, ttl_ms, token = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
if not redis.call('ZSCORE', key, token) then
  return 0
end
redis.call('ZADD', key, expires, token)
if redis.call('PTTL', key) < ttl_ms then
  redis.call('PEXPIRE', key, ttl_ms)
end
return 1
"""


class CoordinationUnavailable(ConnectionError):
    """Our own coordination (Redis) did not answer in time: not the provider's fault. Transient."""

    transient = True
    coordination = True
    code = "coordination_unavailable"


class SlotUnavailable(TimeoutError):
    """No session slot for this provider came free in time. Transient: the run retries later."""

    transient = True
    code = "provider_busy"


class Lease:
    """One held slot, and the faults of our coordination seen while taking, holding or giving it back."""

    def __init__(self) -> None:
        self.faults: list[str] = []

    def note(self, what: str, error: BaseException) -> None:
        text = f"{what}: {type(error).__name__}: {error}"[:300]
        if text not in self.faults:
            self.faults.append(text)
        logger.warning("provider slot: %s", text)


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
        self._renew = client.register_script(_RENEW)

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
        """Push a held slot's expiry one lease ahead (only if we still hold it), and the key's TTL."""
        ttl_ms = math.ceil(self.lease_s * 1000) + 1000
        self._renew(keys=[self.key], args=[time.time() + self.lease_s, ttl_ms, token])

    def _release_later(self, token: str, lease: Lease) -> None:
        """Retry a failed release until Redis answers or the slot has expired by itself anyway."""
        give_up = time.monotonic() + self.lease_s

        def retry() -> None:
            pause = 0.5
            while time.monotonic() < give_up:
                time.sleep(min(pause, max(0.0, give_up - time.monotonic())))
                pause = min(pause * 2, BACKOFF_MAX_S)
                try:
                    self.release(token)
                    logger.info("provider slot %s released once Redis answered again", self.key)
                    return
                except redis.RedisError:
                    continue
            logger.info("provider slot %s not released; it expired with its lease", self.key)

        threading.Thread(target=retry, name="provider-slot-release", daemon=True).start()

    def _take(self, *, wait_s: float, poll_s: float, lease: Lease) -> str:
        deadline = time.monotonic() + wait_s
        pause = poll_s
        while True:
            try:
                token = self.try_acquire()
                pause = poll_s
            except redis.RedisError as exc:  # our coordination is down: wait for it, bounded
                lease.note("taking a slot", exc)
                token = None
                if time.monotonic() >= deadline:
                    raise CoordinationUnavailable(
                        f"Redis did not answer within {wait_s:.0f}s to take a session slot for {self.key}"
                    ) from exc
                pause = min(max(pause * 2, 0.25), BACKOFF_MAX_S)
            if token is not None:
                return token
            if time.monotonic() >= deadline:
                raise SlotUnavailable(f"no free session slot for {self.key} within {wait_s:.0f}s")
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())) or poll_s)

    @contextmanager
    def slot(self, *, wait_s: float, poll_s: float = 0.05) -> Iterator[Lease]:
        """Hold one slot for the duration of the block; wait at most ``wait_s`` for it.

        The lease is short and renewed from a side thread while the block runs, so a holder that
        dies (SIGKILL) frees its slot within one lease, while a live one keeps it however long.
        Redis failing while the block runs never raises from here: the yielded ``Lease`` notes it.
        """
        lease = Lease()
        token = self._take(wait_s=wait_s, poll_s=poll_s, lease=lease)
        stop = threading.Event()

        def keep_alive() -> None:
            while not stop.wait(self.lease_s / 3):
                try:
                    self.renew(token)
                except redis.RedisError as exc:
                    lease.note("renewing the slot", exc)

        renewer = threading.Thread(target=keep_alive, name="provider-slot-renew", daemon=True)
        renewer.start()
        try:
            yield lease
        finally:
            stop.set()
            renewer.join(timeout=5)
            try:
                self.release(token)
            except redis.RedisError as exc:
                lease.note("releasing the slot (retried until Redis answers, else it expires)", exc)
                self._release_later(token, lease)
