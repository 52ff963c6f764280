"""Faults of our own coordination (Redis, the broker) never cost a measurement or half-start runs.

The semaphore tests stop and start a redis-server of their own (tests/private_servers.py),
never the shared one. The end-to-end outages, with a real worker and PostgreSQL stopped too,
are in tests/integration/test_coordination_outages.py.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import redis
from django.test import Client
from django.urls import reverse
from kombu.exceptions import OperationalError as KombuOperationalError

import tests.probes.worker_probes  # noqa: F401  (registers test_paused_node)
from config.access import Role
from probes import services
from probes.models import ClusterAccess, Finding, ProbeRun
from probes.politeness import CoordinationUnavailable, ProviderSlots
from tests.factories import AreaFactory, ClusterFactory, CriterionFactory, CycleFactory, ProviderFactory
from tests.private_servers import PrivateRedis
from tests.sshd import free_port
from tests.workbench.builders import user
from workbench.services import cycle_probes_run

PROBE = "test_paused_node"


@pytest.fixture
def own_redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    try:
        yield server
    finally:
        server.close()


def _slots(server: PrivateRedis, *, lease_s: float, limit: int = 1) -> ProviderSlots:
    client = redis.Redis.from_url(server.url(), socket_timeout=2, socket_connect_timeout=2)
    return ProviderSlots(client=client, provider_key=uuid.uuid4().hex, limit=limit, lease_s=lease_s)


# --- the semaphore ------------------------------------------------------------------------------


def test_redis_stopping_while_a_slot_is_held_raises_nothing_and_the_slot_expires_by_itself(
    own_redis: PrivateRedis,
) -> None:
    slots = _slots(own_redis, lease_s=2)
    with slots.slot(wait_s=5) as lease:
        own_redis.stop()  # saves the held slot, as a service stop does
    assert any("releasing" in f for f in lease.faults), lease.faults
    own_redis.start()
    probe = redis.Redis.from_url(own_redis.url())
    assert probe.zcard(slots.key) in (0, 1) and probe.pttl(slots.key) != -1  # never a key without a TTL
    time.sleep(2.5)
    assert slots.in_use() == 0  # released once Redis answered, or expired with its lease: never leaked


def test_a_held_slot_outlives_its_first_lease_because_renewing_extends_the_key_too(
    own_redis: PrivateRedis,
) -> None:
    slots = _slots(own_redis, lease_s=0.9)
    other = _slots(own_redis, lease_s=0.9)
    other.key = slots.key  # another worker, same provider
    with slots.slot(wait_s=2):
        time.sleep(3)  # three leases: the key's TTL set at acquire would be long gone
        assert other.try_acquire() is None  # still held: the limit of one holds
        assert redis.Redis.from_url(own_redis.url()).pttl(slots.key) > 0


def test_taking_a_slot_waits_for_redis_to_come_back(own_redis: PrivateRedis) -> None:
    slots = _slots(own_redis, lease_s=5)
    own_redis.stop()
    restart = threading.Timer(1.5, own_redis.start)
    restart.start()
    try:
        with slots.slot(wait_s=15) as lease:
            assert slots.in_use() == 1
    finally:
        restart.join(timeout=20)
    assert any("taking" in f for f in lease.faults)


def test_redis_that_stays_away_is_our_coordination_fault_not_the_providers(own_redis: PrivateRedis) -> None:
    slots = _slots(own_redis, lease_s=5)
    own_redis.stop()
    started = time.monotonic()
    with pytest.raises(CoordinationUnavailable) as raised, slots.slot(wait_s=1):
        pass
    assert time.monotonic() - started < 10
    assert raised.value.transient and raised.value.code == "coordination_unavailable"


# --- the runner ---------------------------------------------------------------------------------


@pytest.fixture
def cluster(db, settings):  # type: ignore[no-untyped-def]
    settings.OPGRADE_PROBE_MAX_ATTEMPTS = 2
    settings.OPGRADE_PROBE_RETRY_BASE_S = 1
    cluster = ClusterFactory(gpu_count=0, gpu_model="")
    ClusterAccess.objects.create(
        cluster=cluster, login_host="127.0.0.1", compute_nodes="127.0.0.1:20001\n127.0.0.1:20002",
        max_concurrency=2, settings={"pause_s": 0},
        inventory_source=ClusterAccess.InventorySource.LISTED, node_access=ClusterAccess.NodeAccess.SSH,
    )
    return cluster


def _run(cluster) -> ProbeRun:  # type: ignore[no-untyped-def]
    (run,) = services.probe_runs_start(
        cluster=cluster, probe_ids=[PROBE], slot=dt.datetime(2026, 11, 30, 11, 0, tzinfo=dt.UTC), send=False
    )
    return run


def test_a_slot_release_that_fails_keeps_the_measurement_and_says_our_coordination_faltered(
    cluster, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    real_release, failed = ProviderSlots.release, set()

    def release(self, token):  # type: ignore[no-untyped-def]
        if token not in failed:  # Redis is away at the first try, back for the retry
            failed.add(token)
            raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        real_release(self, token)

    monkeypatch.setattr(ProviderSlots, "release", release)
    run = _run(cluster)
    result = services.probe_run_execute(run_id=run.pk, worker="w1")
    run.refresh_from_db()
    findings = list(Finding.objects.filter(run=run))
    assert result.status == "done" and run.status == ProbeRun.Status.DONE and run.attempt == 1
    assert {f.outcome for f in findings} == {"pass"} and len(findings) == 3
    assert all("releasing the slot" in f.evidence["coordination_fault"][0] for f in findings)
    assert run.error_code == services.COORDINATION_FAULT and "not" not in run.error_code
    assert "coordination faltered, measurements kept" in run.error_message and not run.flagged


def test_targets_redis_kept_from_running_are_retried_beyond_the_providers_attempts(
    cluster, monkeypatch, settings
) -> None:  # type: ignore[no-untyped-def]
    def take(self, **kw):  # type: ignore[no-untyped-def]
        raise CoordinationUnavailable("Redis did not answer")

    monkeypatch.setattr(ProviderSlots, "_take", take)
    run = _run(cluster)
    for attempt in range(1, settings.OPGRADE_PROBE_MAX_ATTEMPTS + 2):
        result = services.probe_run_execute(run_id=run.pk, worker=f"w{attempt}")
        assert result.status == "retry" and result.retry_in <= services.RETRY_DELAY_MAX_S, attempt
    run.refresh_from_db()
    assert run.status == ProbeRun.Status.PENDING and run.error_code == "coordination_unavailable"
    assert not Finding.objects.filter(run=run).exists()  # no error finding counts against the provider


# --- starting runs: all or nothing --------------------------------------------------------------


@pytest.fixture
def broker_down(settings):  # type: ignore[no-untyped-def]
    """The Celery broker points at a port where nothing listens."""
    app = services.current_app
    before = app.conf.broker_url
    app.conf.broker_url = f"redis://127.0.0.1:{free_port()}/0"
    try:
        yield
    finally:
        app.conf.broker_url = before


@pytest.fixture
def cycle(cluster):  # type: ignore[no-untyped-def]
    area = AreaFactory(key="faults")
    CriterionFactory(area=area, key="c-paused", evidence_kinds=["probe"], probe_id=PROBE)
    CriterionFactory(area=area, key="c-reach", evidence_kinds=["probe"], probe_id="ssh_reachable", position=1)
    second = ClusterFactory(provider=ProviderFactory(slug="second"), gpu_count=0, gpu_model="")
    ClusterAccess.objects.create(cluster=second, login_host="127.0.0.1", inventory_source="listed", node_access="ssh")
    return CycleFactory(rubric_version=area.rubric_version, slug="faults", providers=[cluster.provider, second.provider])


def test_the_workbench_starts_nothing_while_the_queue_is_down_and_says_so(cycle, broker_down) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user("analyst", Role.ANALYST))
    response = client.post(reverse("workbench:probes_run", args=[cycle.slug]), follow=True)
    assert response.status_code == 200
    assert "The queue is unavailable, nothing was started." in response.content.decode()
    assert not ProbeRun.objects.exists()
    with pytest.raises(services.QueueUnavailable):
        cycle_probes_run(cycle=cycle)
    assert not ProbeRun.objects.exists()


def test_the_api_answers_503_with_a_clear_body_and_writes_nothing(cluster, broker_down) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user("analyst", Role.ANALYST))
    response = client.post("/api/v1/probe-runs/start/", {"cluster": cluster.pk, "probes": [PROBE]},
                           content_type="application/json")
    assert response.status_code == 503, response.content
    assert response.json() == {"detail": "the queue is unavailable, nothing was started", "code": "queue_unavailable"}
    assert not ProbeRun.objects.exists()


def test_a_broker_that_fails_after_the_commit_leaves_the_runs_to_the_sweeper(
    cycle, monkeypatch, django_capture_on_commit_callbacks, settings
) -> None:  # type: ignore[no-untyped-def]
    def send_task(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise KombuOperationalError("Error 111 connecting: Connection refused")

    monkeypatch.setattr(services.current_app, "send_task", send_task)
    with django_capture_on_commit_callbacks(execute=True):
        plan = cycle_probes_run(cycle=cycle)  # the broker answered the check, then failed the send
    runs = list(ProbeRun.objects.all())
    assert len(runs) == len(plan.started) == 4  # every run of the plan was written, none half
    assert all(r.status == ProbeRun.Status.PENDING and r.sent_at is None for r in runs)
    later = max(r.created_at for r in runs) + dt.timedelta(seconds=settings.OPGRADE_PROBE_RESEND_PENDING_S + 1)
    monkeypatch.undo()
    sent = []
    monkeypatch.setattr(services.current_app, "send_task", lambda name, *, args, **kw: sent.append(args[0]))
    with django_capture_on_commit_callbacks(execute=True):
        resent = services.probe_runs_sweep(now=later)
    assert sorted(resent) == sorted(sent) == sorted(r.pk for r in runs)
