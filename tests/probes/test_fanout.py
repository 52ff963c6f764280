"""Bounded fan-out keeps order, captures failures and never exceeds its concurrency."""

from __future__ import annotations

import threading
import time

import pytest

from probes.fanout import fan_out


def test_it_never_runs_more_than_the_limit_at_once() -> None:
    lock = threading.Lock()
    running = peak = 0

    def work(i: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.01)
        with lock:
            running -= 1
        return i * 2

    seen: list[int] = []
    results = fan_out(list(range(40)), work, max_concurrency=4, on_done=lambda o: seen.append(o.item))
    assert [r.value for r in results] == [i * 2 for i in range(40)]
    assert peak <= 4 and peak >= 2
    assert sorted(seen) == list(range(40))


def test_one_failure_is_captured_and_the_rest_still_complete() -> None:
    def work(i: int) -> int:
        if i == 3:
            raise RuntimeError("node 3 is down")
        return i

    results = fan_out(list(range(6)), work, max_concurrency=2)
    assert [r.ok for r in results] == [True, True, True, False, True, True]
    assert str(results[3].error) == "node 3 is down"


def test_a_zero_limit_is_refused() -> None:
    with pytest.raises(ValueError):
        fan_out([1], lambda i: i, max_concurrency=0)
