"""Bounded fan-out: run one function over many targets with at most N in flight.

Probes that touch every node of a cluster go through here, so that a provider never sees more
than its politeness limit of concurrent SSH sessions from us, however many nodes it has. Results
come back in input order; a failure on one target is captured, never raised, so one dead node
cannot hide the findings of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome[T, R]:
    """What ``fn(item)`` returned, or the exception it raised."""

    item: T
    value: R | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def fan_out[T, R](
    items: Sequence[T],
    fn: Callable[[T], R],
    *,
    max_concurrency: int,
    on_done: Callable[[Outcome[T, R]], None] | None = None,
) -> list[Outcome[T, R]]:
    """Apply ``fn`` to every item with at most ``max_concurrency`` running at once."""
    if max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    if not items:
        return []
    results: list[Outcome[T, R] | None] = [None] * len(items)
    with ThreadPoolExecutor(
        max_workers=min(max_concurrency, len(items)), thread_name_prefix="fanout"
    ) as pool:
        futures = {pool.submit(fn, item): index for index, item in enumerate(items)}
        for future in as_completed(futures):
            index = futures[future]
            error = future.exception()
            outcome: Outcome[T, R] = (
                Outcome(item=items[index], error=error)
                if error is not None
                else Outcome(item=items[index], value=future.result())
            )
            results[index] = outcome
            if on_done is not None:
                on_done(outcome)
    return [r for r in results if r is not None]
