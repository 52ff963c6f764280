"""Outages of our own coordination lose no work: Redis stopped 20 s, PostgreSQL stopped 15 s.

Each test starts its own redis-server and its own PostgreSQL (tests/private_servers.py; never
the shared 6379 / 5432 ones), a real Celery worker (prefork, Redis broker, acks_late) and a
driver process (tests/integration/outage_driver.py) that plays the analyst through the workbench
and the API, all pointed at those servers. While probe runs are in flight (a test-only probe that
takes its time per node and talks to no host), the server is stopped, the workbench's "Run
missing probes" and the API's start are tried, and the server comes back. Then every run must
finish exactly once (one "done" per run in the worker's log, no ``error``), with exactly one
finding per node and no error finding, and no request may have answered 500.

The PostgreSQL cluster is made and migrated once per module (about a minute) and copied for each
test (a second). The whole module takes about three minutes.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.private_servers import PrivatePostgres, PrivateRedis

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
DB_NAME = "opgrade_outage"
NODES, CLUSTERS, PAUSE_S = 6, 3, 1.5
TARGETS = NODES + 1  # a node-scope probe measures the login node too
REDIS_OUTAGE_S, POSTGRES_OUTAGE_S = 20, 15
ENV = {
    "OPGRADE_DEBUG": "1",  # the driver's client reports a 500 as its status, debug page or not
    "CELERY_VISIBILITY_TIMEOUT": "20",  # a message whose ack the outage lost comes back, and is dropped
    "OPGRADE_PROBE_HEARTBEAT_S": "2",
    "OPGRADE_PROBE_STALE_S": "40",  # longer than either outage: a live run must not look dead
    "OPGRADE_PROBE_RETRY_BASE_S": "1",
    "OPGRADE_PROBE_RESEND_PENDING_S": "20",
    "OPGRADE_COORDINATION_RETRY_S": "60",
}


def wait_for(predicate: Callable[[], bool], *, timeout_s: float, what: str, every_s: float = 0.5) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


class Driver:
    """The driver subprocess: one JSON command in, one JSON answer out, each bounded in time."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.outage_driver"], env=env, cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, start_new_session=True,
        )  # fmt: skip
        self.answers: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.answers.put(line.decode())

    def __call__(self, command: str, *, timeout_s: float = 60, **args: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.poll() is None
        self.process.stdin.write((json.dumps({"command": command, **args}) + "\n").encode())
        self.process.stdin.flush()
        try:
            return json.loads(self.answers.get(timeout=timeout_s))
        except queue.Empty:
            raise AssertionError(f"the driver did not answer {command} within {timeout_s}s") from None

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.log.close()


@dataclass
class World:
    postgres: PrivatePostgres
    redis: PrivateRedis
    driver: Driver
    worker_log: Path
    requests: list[dict[str, Any]] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        answer = self.driver("state")
        assert "error" not in answer, answer
        return answer

    def request(self, command: str, **args: Any) -> dict[str, Any]:
        answer = self.driver(command, **args)
        self.requests.append({"command": command, **answer})
        return answer


@pytest.fixture(scope="module")
def migrated_postgres() -> Iterator[PrivatePostgres]:
    """A private PostgreSQL whose database is migrated once; each test runs on a copy of it."""
    postgres = PrivatePostgres()
    try:
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DB_NAME}")
        env = {**os.environ, **ENV, "DATABASE_URL": postgres.url(DB_NAME), "REDIS_URL": "redis://127.0.0.1:1/0"}
        done = subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=400)
        assert done.returncode == 0, done.stderr[-3000:]
        yield postgres
    finally:
        postgres.close()


@pytest.fixture
def world(migrated_postgres: PrivatePostgres, tmp_path: Path) -> Iterator[World]:
    postgres = PrivatePostgres(copy_of=migrated_postgres)
    redis_server = PrivateRedis()
    env = {
        **os.environ, **ENV, "PYTHONPATH": str(ROOT),
        "DATABASE_URL": postgres.url(DB_NAME), "REDIS_URL": redis_server.url(0),
    }  # fmt: skip
    worker_log = tmp_path / "worker.log"
    worker = driver = None
    try:
        with worker_log.open("wb") as out:
            worker = subprocess.Popen(
                [sys.executable, "-m", "tests.probes.celery_worker", "-A", "config", "worker", "-Q", "probes,default",
                 "-c", str(CLUSTERS), "-n", "outage@%h", "--without-gossip", "--without-mingle",
                 "--without-heartbeat", "-l", "info"],
                env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        wait_for(lambda: " ready." in worker_log.read_text(errors="replace") or worker.poll() is not None,
                 timeout_s=90, what="the Celery worker")
        assert worker.poll() is None, worker_log.read_text(errors="replace")[-3000:]
        driver = Driver(env, tmp_path / "driver.log")
        yield World(postgres, redis_server, driver, worker_log)
    finally:
        for process in (worker, driver.process if driver else None):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)
        if driver is not None:
            driver.close()
        redis_server.close()
        postgres.close()


def _start_in_flight(world: World) -> tuple[list[int], list[int]]:
    made = world.driver("setup", clusters=CLUSTERS, nodes=NODES, pause_s=PAUSE_S, concurrency=1)
    assert "error" not in made, made
    runs = []
    for cluster in made["clusters"]:
        answer = world.driver("start_runs", cluster=cluster)
        assert "error" not in answer, answer
        runs += answer["runs"]

    def measuring() -> bool:
        state = world.state()
        return all(r["status"] == "running" and r["progress"][0] >= 1 for r in state["runs"])

    wait_for(measuring, timeout_s=60, what="every run to have measured a node")
    return runs, made["clusters"]


def _all_finished(world: World, *, expected_runs: int, timeout_s: float) -> dict[str, Any]:
    """Wait for every run to end; the sweeper's minute (beat, in production) is played every 10 s."""
    last_sweep = time.monotonic()

    def finished() -> bool:
        nonlocal last_sweep
        if time.monotonic() - last_sweep > 10:
            world.driver("sweep")
            last_sweep = time.monotonic()
        state = world.state()
        return len(state["runs"]) == expected_runs and all(
            r["status"] in ("done", "error", "cancelled") for r in state["runs"]
        )

    wait_for(finished, timeout_s=timeout_s, what=f"{expected_runs} runs to finish", every_s=1)
    return world.state()


def _assert_each_run_done_once_with_one_finding_per_node(world: World, state: dict[str, Any]) -> None:
    log = world.worker_log.read_text(errors="replace")
    for run in state["runs"]:
        assert run["status"] == "done", (run, log[-4000:])
        assert run["progress"] == [TARGETS, TARGETS], run
        assert run["attempt"] == 1, run  # the outage cost no attempt: nothing counted against the provider
        dones = re.findall(rf"probe run {run['id']}: done \(", log)
        assert len(dones) == 1, (run, dones)
        assert not re.search(rf"probe run {run['id']}: error", log), run
    per_run = Counter((f["run"], f["target"], f["metric"]) for f in state["findings"])
    assert set(per_run.values()) == {1}, "a finding was written twice"
    assert Counter(f["run"] for f in state["findings"]) == {r["id"]: TARGETS for r in state["runs"]}
    assert {f["outcome"] for f in state["findings"]} == {"pass"}, "a measurement turned into an error"
    assert all(r["status"] != 500 for r in world.requests if "status" in r), world.requests


def test_redis_stopped_20s_loses_no_measurement_and_starts_nothing_halfway(world: World) -> None:
    in_flight, clusters = _start_in_flight(world)
    world.redis.stop()
    stopped_at = time.monotonic()
    page = world.request("workbench_run_missing", cycle="outage")
    api = world.request("api_start", cluster=clusters[0])
    during = world.state()
    time.sleep(max(0.0, REDIS_OUTAGE_S - (time.monotonic() - stopped_at)))
    world.redis.start()

    # the page said so, and nothing was written while the queue was down
    assert page["status"] == 302, page
    assert any("queue is unavailable, nothing was started" in m for m in page["messages"]), page
    assert api["status"] == 503 and api["body"]["code"] == "queue_unavailable", api
    assert "the queue is unavailable, nothing was started" in api["body"]["detail"], api
    assert sorted(r["id"] for r in during["runs"]) == sorted(in_flight), "a run was written while the queue was down"

    # the queue is back: the workbench starts the cycle's runs, all of them
    again = world.request("workbench_run_missing", cycle="outage")
    assert again["status"] == 302 and any("Started 3 probe runs" in m for m in again["messages"]), again
    state = _all_finished(world, expected_runs=2 * CLUSTERS, timeout_s=150)
    _assert_each_run_done_once_with_one_finding_per_node(world, state)
    hit = [r for r in state["runs"] if r["id"] in in_flight]
    # the outage met measurements in flight, and the record says it was ours, not the provider's
    assert any(r["error_code"] == "coordination_fault" for r in hit) or any(
        f["coordination_fault"] for f in state["findings"] if f["run"] in in_flight
    ), hit


def test_postgres_stopped_15s_loses_no_measurement_and_answers_503_not_500(world: World) -> None:
    in_flight, clusters = _start_in_flight(world)
    world.postgres.stop()
    stopped_at = time.monotonic()
    page = world.request("workbench_run_missing", cycle="outage")
    api = world.request("api_start", cluster=clusters[0])
    time.sleep(max(0.0, POSTGRES_OUTAGE_S - (time.monotonic() - stopped_at)))
    world.postgres.start()

    assert page["status"] == 503, page
    assert api["status"] == 503 and isinstance(api["body"], dict), api
    during_runs = {r["id"] for r in world.state()["runs"]}
    assert during_runs == set(in_flight), "a run was written while the database was down"

    again = world.request("workbench_run_missing", cycle="outage")
    assert again["status"] == 302 and any("Started 3 probe runs" in m for m in again["messages"]), again
    state = _all_finished(world, expected_runs=2 * CLUSTERS, timeout_s=150)
    _assert_each_run_done_once_with_one_finding_per_node(world, state)
