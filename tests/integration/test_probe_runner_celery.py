"""The probe runner end to end: real Celery workers on Redis, real PostgreSQL, real sshd.

Each worker is a subprocess (``tests/probes/celery_worker.py``: Celery's own CLI plus two test-only
probes) pointed at pytest-django's test database, so the tests use ``transaction=True``: the worker
must see committed rows. The broker's visibility timeout and the runner's heartbeat/stale limits
are shortened through the environment so that a killed worker's run comes back within seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.utils import timezone

from probes import services
from probes.models import ClusterAccess, Finding, HostKeyPin, ProbeRun, TenantAccount
from probes.tasks import probe_run_execute_task
from tests.factories import ClusterFactory
from tests.probes import worker_probes  # noqa: F401  (the test-only probe ids, as in the worker)
from tests.probes.conftest import sshd_factory, user_key  # noqa: F401  (fixtures)
from tests.sshd import Sshd, free_port

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
WORKER_ENV = {
    "CELERY_VISIBILITY_TIMEOUT": "6",
    "OPGRADE_PROBE_STALE_S": "3",
    "OPGRADE_PROBE_HEARTBEAT_S": "1",
    "OPGRADE_PROBE_MAX_ATTEMPTS": "2",
    "OPGRADE_PROBE_RETRY_BASE_S": "1",
}


def wait_for(predicate: Callable[[], bool], *, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    if not predicate():
        raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


class Worker:
    def __init__(self, process: subprocess.Popen[bytes], log: Path) -> None:
        self.process, self.log = process, log

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (main process and pool children)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def _purge_broker() -> None:
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete("probes", "default", "unacked", "unacked_index", "unacked_mutex")


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    _purge_broker()
    db = connection.settings_dict
    database_url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {**os.environ, **WORKER_ENV, "DATABASE_URL": database_url, "PYTHONPATH": str(ROOT)}
    workers: list[Worker] = []

    def start(name: str = "w1", concurrency: int = 1, extra_env: dict[str, str] | None = None) -> Worker:
        log = tmp_path / f"{name}.log"
        argv = [
            sys.executable, "-m", "tests.probes.celery_worker", "-A", "config", "worker",
            "-Q", "probes,default", "-c", str(concurrency), "-n", f"{name}@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info",
        ]  # fmt: skip
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv,
                env={**env, **(extra_env or {})},
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        worker = Worker(process, log)
        workers.append(worker)
        wait_for(
            lambda: " ready." in worker.text() or process.poll() is not None,
            timeout_s=90,
            what="worker ready",
        )
        assert process.poll() is None, worker.text()[-3000:]
        return worker

    yield start
    for worker in workers:
        worker.stop()
    _purge_broker()


def make_cluster(
    login: Sshd,
    nodes: list[Sshd],
    key_path: Path,
    *,
    max_concurrency: int = 2,
    provider: object = None,
    **access: object,
):  # type: ignore[no-untyped-def]
    cluster = ClusterFactory(gpu_count=0, gpu_model="", **({"provider": provider} if provider else {}))
    ClusterAccess.objects.create(
        cluster=cluster,
        login_host=login.host,
        login_port=login.port,
        compute_nodes="\n".join(f"{n.host}:{n.port}" for n in nodes),
        max_concurrency=max_concurrency,
        # plain sshd servers, no scheduler: the typed list, reached by direct SSH
        **{"inventory_source": ClusterAccess.InventorySource.LISTED, "node_access": ClusterAccess.NodeAccess.SSH,
           **access},
    )
    for server in [login, *nodes]:
        HostKeyPin.objects.create(
            cluster=cluster,
            host=server.host,
            port=server.port,
            key_type=server.host_key_type,
            fingerprint=server.host_key_fingerprint,
        )
    services.tenant_account_set_secrets(
        account=TenantAccount(cluster=cluster, label="tenant-a", username=login.user),
        private_key=key_path.read_text(),
    )
    return cluster


def run_until_terminal(run: ProbeRun, timeout_s: float = 90) -> ProbeRun:
    wait_for(
        lambda: ProbeRun.objects.get(pk=run.pk).status in ProbeRun.TERMINAL,
        timeout_s=timeout_s,
        what=f"run {run.pk} to finish",
    )
    return ProbeRun.objects.get(pk=run.pk)


def test_a_worker_killed_mid_run_has_its_run_redelivered_and_completed_once_per_target(
    start_worker: Callable[..., Worker],
    sshd_factory: Callable[..., Sshd],  # noqa: F811
    user_key: Path,  # noqa: F811
) -> None:
    login, *nodes = [sshd_factory() for _ in range(4)]
    cluster = make_cluster(login, nodes, user_key, max_concurrency=1)
    first = start_worker("first")
    (run,) = services.probe_runs_start(cluster=cluster, probe_ids=["test_slow_node"])

    wait_for(
        lambda: ProbeRun.objects.get(pk=run.pk).progress_done >= 1, timeout_s=60, what="the first target"
    )
    first.kill()
    killed = ProbeRun.objects.get(pk=run.pk)
    assert killed.status == ProbeRun.Status.RUNNING and killed.progress_done < 4

    second = start_worker("second")
    done = run_until_terminal(run, timeout_s=120)

    findings = list(Finding.objects.filter(run=run))
    assert done.status == ProbeRun.Status.DONE, (done.error_code, done.error_message, second.text()[-2000:])
    assert done.attempt == 2 and (done.progress_done, done.progress_total) == (4, 4)
    assert sorted(f.target for f in findings) == sorted(f"{s.host}:{s.port}" for s in [login, *nodes])
    assert {f.outcome for f in findings} == {"pass"}
    assert {f.attempt for f in findings} == {1, 2}  # some measured before the kill, the rest after


def test_a_duplicate_delivery_writes_nothing_twice(
    start_worker: Callable[..., Worker],
    sshd_factory: Callable[..., Sshd],  # noqa: F811
    user_key: Path,  # noqa: F811
) -> None:
    login, *nodes = [sshd_factory() for _ in range(3)]
    cluster = make_cluster(login, nodes, user_key)
    worker = start_worker("dup", concurrency=2)
    (run,) = services.probe_runs_start(cluster=cluster, probe_ids=["ssh_reachable"])
    for _ in range(2):  # the same message delivered again, while the first is running
        probe_run_execute_task.apply_async((run.pk,), queue="probes")
    done = run_until_terminal(run)
    wait_for(
        lambda: worker.text().count("probes.probe_run_execute[") >= 6,  # 3 received + 3 succeeded
        timeout_s=60,
        what="all three deliveries to be handled",
    )
    assert done.status == ProbeRun.Status.DONE and done.attempt == 1
    assert Finding.objects.filter(run=run).count() == 3
    assert worker.text().count("not_claimed") == 2


def test_a_changed_host_key_ends_the_run_as_error_flagged_and_no_credential_is_sent(
    start_worker: Callable[..., Worker],
    sshd_factory: Callable[..., Sshd],  # noqa: F811
    user_key: Path,  # noqa: F811
) -> None:
    login = sshd_factory()
    impostor = sshd_factory()  # its key is pinned for the login node's address: "the key changed"
    cluster = make_cluster(login, [], user_key)
    HostKeyPin.objects.filter(cluster=cluster).update(fingerprint=impostor.host_key_fingerprint)
    start_worker("hostkey")
    (run,) = services.probe_runs_start(cluster=cluster, probe_ids=["ssh_reachable"])
    done = run_until_terminal(run)
    assert done.status == ProbeRun.Status.ERROR and done.flagged and done.error_code == "host_key_changed"
    assert done.attempt == 1  # permanent: no retry
    (finding,) = Finding.objects.filter(run=run)
    assert finding.outcome == "error" and finding.evidence["error_code"] == "host_key_changed"
    assert "KEX done" in login.log_text() and "userauth-request" not in login.log_text()


def test_a_hung_command_is_killed_at_its_deadline_within_ten_percent(
    start_worker: Callable[..., Worker],
    sshd_factory: Callable[..., Sshd],  # noqa: F811
    user_key: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    login = sshd_factory()
    pidfile = tmp_path / "hung.pids"
    cluster = make_cluster(login, [], user_key, settings={"pidfile": str(pidfile)})
    start_worker("hung")
    (run,) = services.probe_runs_start(cluster=cluster, probe_ids=["test_hung_command"])
    done = run_until_terminal(run)
    (finding,) = Finding.objects.filter(run=run)
    deadline = 8.0  # HungCommand.timeout_s; 10% = 0.8 s
    assert done.status == ProbeRun.Status.DONE and finding.outcome == "timeout"
    assert deadline <= finding.evidence["duration_s"] <= 1.1 * deadline
    for pid in (int(x) for x in pidfile.read_text().split()):
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_an_unreachable_host_retries_with_backoff_then_ends_as_error_not_fail(
    start_worker: Callable[..., Worker],
    sshd_factory: Callable[..., Sshd],  # noqa: F811
    user_key: Path,  # noqa: F811
) -> None:
    login = sshd_factory()
    cluster = make_cluster(login, [], user_key)
    closed = free_port()
    ClusterAccess.objects.filter(cluster=cluster).update(login_port=closed)
    HostKeyPin.objects.filter(cluster=cluster).update(port=closed)
    start_worker("unreachable")
    (run,) = services.probe_runs_start(cluster=cluster, probe_ids=["ssh_reachable"])
    done = run_until_terminal(run)
    assert done.status == ProbeRun.Status.ERROR and not done.flagged
    assert done.attempt == 2 and done.error_code == "host_unreachable"
    assert list(Finding.objects.filter(run=run).values_list("outcome", flat=True)) == ["error"]


def _claimant_pid(run: ProbeRun) -> int:
    """The pid of the pool process holding the run (claimed_by is ``host:pid[:start]/token``)."""
    return int(run.claimed_by.rsplit("/", 1)[0].split(":")[1])


def test_a_killed_pool_process_has_its_run_finished_exactly_once_without_beat_or_help(
    start_worker: Callable[..., Worker],
    sshd_factory: Callable[..., Sshd],  # noqa: F811
    user_key: Path,  # noqa: F811
) -> None:
    # Only the pool child dies: the worker's main process requeues the message at once
    # (reject_on_worker_lost), a fresh pool child gets it while the dead claim's heartbeat is
    # still fresh (8 s here, so that it surely is), and no beat runs the sweeper. The
    # redelivery must come back once the claim is stale rather than be dropped.
    login, *nodes = [sshd_factory() for _ in range(4)]
    cluster = make_cluster(login, nodes, user_key, max_concurrency=1)
    worker = start_worker("poolkill", extra_env={"OPGRADE_PROBE_STALE_S": "8"})
    (run,) = services.probe_runs_start(cluster=cluster, probe_ids=["test_slow_node"])
    wait_for(
        lambda: ProbeRun.objects.get(pk=run.pk).progress_done >= 1, timeout_s=60, what="the first target"
    )
    held = ProbeRun.objects.get(pk=run.pk)
    pool_pid = _claimant_pid(held)
    assert pool_pid != worker.process.pid
    os.kill(pool_pid, signal.SIGKILL)

    done = run_until_terminal(run, timeout_s=60)  # stale after 3 s; bounded well below that

    findings = list(Finding.objects.filter(run=run))
    assert worker.process.poll() is None  # the same worker finished it: no second worker, no beat
    assert done.status == ProbeRun.Status.DONE, (done.error_code, done.error_message, worker.text()[-3000:])
    assert done.attempt == 2 and (done.progress_done, done.progress_total) == (4, 4)
    assert sorted(f.target for f in findings) == sorted(f"{s.host}:{s.port}" for s in [login, *nodes])
    assert {f.outcome for f in findings} == {"pass"}
    assert "WorkerLostError" in worker.text() and f"probe run {run.pk}: held" in worker.text()


def _max_overlap(intervals: list[tuple[datetime, datetime]]) -> int:
    """The most intervals open at one instant (an end sorts before a start at the same time)."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    most = current = 0
    for _, step in edges:
        current += step
        most = max(most, current)
    return most


def test_two_workers_on_their_own_hostnames_run_every_run_once_within_the_providers_session_limit(
    start_worker: Callable[..., Worker],
    sshd_factory: Callable[..., Sshd],  # noqa: F811
    user_key: Path,  # noqa: F811
) -> None:
    # Scale-out: two workers (as on two hosts: own -n names, own pools) share the probes queue,
    # PostgreSQL and Redis. One provider with two clusters, each limited to 2 sessions; four runs
    # of 3 targets want up to 8 sessions at once. The Redis semaphore must keep the provider at 2
    # across both workers, and every run must execute exactly once.
    limit = 2
    servers = [sshd_factory() for _ in range(6)]
    first = make_cluster(servers[0], servers[1:3], user_key, max_concurrency=limit)
    second = make_cluster(servers[3], servers[4:6], user_key, max_concurrency=limit, provider=first.provider)
    workers = [start_worker("alpha", concurrency=2), start_worker("beta", concurrency=2)]
    slot = timezone.now().replace(microsecond=0)
    runs = [
        run
        for offset in range(2)
        for cluster in (first, second)
        for run in services.probe_runs_start(
            cluster=cluster, probe_ids=["test_slow_node"], slot=slot + timedelta(seconds=offset)
        )
    ]
    assert len({r.pk for r in runs}) == 4

    done = [run_until_terminal(run, timeout_s=150) for run in runs]

    for run in done:
        targets = list(Finding.objects.filter(run=run).values_list("target", flat=True))
        assert run.status == ProbeRun.Status.DONE and run.attempt == 1, (run.error_code, run.error_message)
        assert len(targets) == len(set(targets)) == 3
    sessions = list(Finding.objects.filter(run__in=runs).values_list("started_at", "finished_at"))
    assert len(sessions) == 12
    assert _max_overlap(sessions) == limit  # reached (they contend) and never exceeded
    for worker in workers:  # both took part
        assert "probes.probe_run_execute[" in worker.text() and " succeeded in " in worker.text()
