"""The probe runner's services with a fake transport: claim, resume, retries, errors, findings."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.immutability import ImmutableError
from probes import services
from probes.models import ClusterAccess, Finding, HostKeyPin, ProbeRun, TenantAccount
from probes.transport import AuthFailed, CommandResult, HostKey, HostKeyChanged, HostUnreachable
from tests.factories import ClusterFactory
from tests.probes.fakes import FakeTransport, ok

pytestmark = pytest.mark.django_db

KEY = HostKey("ssh-ed25519", "SHA256:login")
INVENTORY = (
    '===os\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n===kernel\nLinux 6.1.0\n===cpus\n8\n'
    "===meminfo\nMemTotal:       16384000 kB\n===slurm\nslurm-wlm 22.05.8\n===gpus\nNO_NVIDIA_SMI\n"
)


@pytest.fixture
def cluster(settings):  # type: ignore[no-untyped-def]
    settings.OPGRADE_PROBE_MAX_ATTEMPTS = 2
    settings.OPGRADE_PROBE_RETRY_BASE_S = 1
    cluster = ClusterFactory(gpu_count=0, gpu_model="")
    ClusterAccess.objects.create(
        cluster=cluster, login_host="login", compute_nodes="node1\nnode2:2222", max_concurrency=2,
        inventory_source=ClusterAccess.InventorySource.LISTED, node_access=ClusterAccess.NodeAccess.SSH,
    )
    HostKeyPin.objects.create(
        cluster=cluster, host="login", port=22, key_type=KEY.key_type, fingerprint=KEY.fingerprint
    )
    account = TenantAccount(cluster=cluster, label="tenant-a", username="alice")
    services.tenant_account_set_secrets(account=account, password="s3cret-pw")
    return cluster


def start(cluster, probe_id: str) -> ProbeRun:  # type: ignore[no-untyped-def]
    (run,) = services.probe_runs_start(
        cluster=cluster, probe_ids=[probe_id], slot=dt.datetime(2026, 11, 30, 11, 0, tzinfo=dt.UTC)
    )
    return run


def test_it_measures_every_node_once_and_records_progress(cluster) -> None:  # type: ignore[no-untyped-def]
    fake = FakeTransport(lambda ep, cmd: ok(duration_s=0.02))
    run = start(cluster, "ssh_reachable")
    result = services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    run.refresh_from_db()
    assert result.status == "done" and run.status == ProbeRun.Status.DONE
    assert (run.progress_done, run.progress_total, run.attempt) == (3, 3, 1)
    findings = Finding.objects.filter(run=run)
    assert sorted(f.target for f in findings) == ["login", "node1", "node2:2222"]
    assert {f.outcome for f in findings} == {"pass"} and all(f.value == pytest.approx(70.0) for f in findings)
    assert {cmd for _, cmd in fake.log} == {"true"}
    # Compute nodes are reached through the login node.
    assert all(p.closed for p in fake.pools)


def test_a_duplicate_delivery_is_not_claimed_and_writes_nothing(cluster) -> None:  # type: ignore[no-untyped-def]
    fake = FakeTransport(lambda ep, cmd: ok())
    run = start(cluster, "ssh_reachable")
    services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    before = Finding.objects.count()
    again = services.probe_run_execute(run_id=run.pk, worker="w2", pool_factory=fake.pool)
    assert again.status == "not_claimed" and Finding.objects.count() == before


def test_starting_the_same_slot_twice_creates_one_run(cluster) -> None:  # type: ignore[no-untyped-def]
    assert start(cluster, "ssh_reachable").pk == start(cluster, "ssh_reachable").pk
    assert ProbeRun.objects.count() == 1


def test_a_live_claim_is_not_stolen_but_a_stale_one_is(cluster, settings) -> None:  # type: ignore[no-untyped-def]
    run = start(cluster, "ssh_reachable")
    assert services.probe_run_claim(run_id=run.pk, worker="w1") is not None
    assert services.probe_run_claim(run_id=run.pk, worker="w2") is None
    ProbeRun.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now() - dt.timedelta(seconds=settings.OPGRADE_PROBE_STALE_S + 1)
    )
    stolen = services.probe_run_claim(run_id=run.pk, worker="w2")
    assert stolen is not None and stolen.attempt == 2 and stolen.claimed_by.startswith("w2/")


def test_a_resumed_run_measures_only_the_targets_without_findings(cluster, settings) -> None:  # type: ignore[no-untyped-def]
    fake = FakeTransport(lambda ep, cmd: ok())
    run = start(cluster, "ssh_reachable")
    claimed = services.probe_run_claim(run_id=run.pk, worker="dead")
    now = timezone.now()
    services.finding_record(
        run=claimed,
        draft=services.FindingDraft(target="login", outcome="pass", metric="latency_ms", value=1.0),
        started_at=now,
        finished_at=now,
    )
    ProbeRun.objects.filter(pk=run.pk).update(
        heartbeat_at=now - dt.timedelta(seconds=settings.OPGRADE_PROBE_STALE_S + 1)
    )
    services.probe_run_execute(run_id=run.pk, worker="w2", pool_factory=fake.pool)
    assert sorted(h for h, _ in fake.log) == ["node1", "node2"]
    assert Finding.objects.filter(run=run).count() == 3


def test_an_unreachable_host_retries_then_ends_as_error_not_fail(cluster) -> None:  # type: ignore[no-untyped-def]
    fake = FakeTransport(lambda ep, cmd: ok(), connect_errors={"login": HostUnreachable("login:22: refused")})
    run = start(cluster, "ssh_reachable")
    first = services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    run.refresh_from_db()
    assert first.status == "retry" and first.retry_in == 1 and run.status == ProbeRun.Status.PENDING
    assert run.error_code == "host_unreachable"
    # The nodes behind the login node were unreachable too; nothing was written yet.
    assert not Finding.objects.filter(run=run).exists()
    second = services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    run.refresh_from_db()
    assert second.status == "error" and run.status == ProbeRun.Status.ERROR and run.attempt == 2
    assert set(Finding.objects.filter(run=run).values_list("outcome", flat=True)) == {"error"}
    assert not run.flagged


def test_a_changed_host_key_ends_the_run_at_once_flagged(cluster) -> None:  # type: ignore[no-untyped-def]
    changed = HostKeyChanged(
        endpoint="login:22", offered=HostKey("ssh-ed25519", "SHA256:evil"), pinned=(KEY,)
    )
    fake = FakeTransport(lambda ep, cmd: ok(), connect_errors={"login": changed})
    run = start(cluster, "ssh_reachable")
    result = services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    run.refresh_from_db()
    assert result.status == "error" and run.attempt == 1  # no retry
    assert run.flagged and run.error_code == "host_key_changed"
    assert Finding.objects.filter(run=run, outcome="error").count() == 3


def test_refused_credentials_are_permanent(cluster) -> None:  # type: ignore[no-untyped-def]
    fake = FakeTransport(lambda ep, cmd: ok(), connect_errors={"node1": AuthFailed("refused")})
    run = start(cluster, "ssh_reachable")
    services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    run.refresh_from_db()
    assert run.status == ProbeRun.Status.ERROR and run.flagged and run.error_code == "auth_failed"
    outcomes = dict(Finding.objects.filter(run=run).values_list("target", "outcome"))
    assert outcomes == {"login": "pass", "node1": "error", "node2:2222": "pass"}


def test_access_the_provider_withholds_is_declined_without_touching_hosts(cluster) -> None:  # type: ignore[no-untyped-def]
    TenantAccount.objects.all().delete()
    fake = FakeTransport(lambda ep, cmd: ok())
    run = start(cluster, "ssh_reachable")
    services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    (finding,) = Finding.objects.filter(run=run)
    assert finding.outcome == "declined" and "ssh" in finding.summary and fake.log == []


def test_node_inventory_reports_the_node_and_no_gpu_as_not_applicable(cluster) -> None:  # type: ignore[no-untyped-def]
    fake = FakeTransport(lambda ep, cmd: ok(INVENTORY))
    run = start(cluster, "node_inventory")
    services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    rows = {(f.target, f.metric): f for f in Finding.objects.filter(run=run)}
    assert len(rows) == 6
    assert rows[("node1", "")].outcome == "pass" and rows[("node1", "")].evidence["inventory"]["cpus"] == 8
    assert rows[("node1", "")].evidence["inventory"]["slurm_version"] == "22.05.8"
    assert rows[("node1", "gpu_count")].outcome == "not_applicable"


def test_a_timed_out_command_is_a_timeout_finding(cluster) -> None:  # type: ignore[no-untyped-def]
    hung = CommandResult(
        command="true", exit_code=None, stdout="", stderr="", duration_s=30.0, timed_out=True
    )
    fake = FakeTransport(lambda ep, cmd: hung)
    run = start(cluster, "ssh_reachable")
    services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    assert set(Finding.objects.filter(run=run).values_list("outcome", flat=True)) == {"timeout"}


def test_findings_are_immutable_in_the_model_and_in_the_database(cluster) -> None:  # type: ignore[no-untyped-def]
    fake = FakeTransport(lambda ep, cmd: ok())
    run = start(cluster, "ssh_reachable")
    services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    finding = Finding.objects.filter(run=run).first()
    finding.outcome = "fail"
    with pytest.raises(ImmutableError):
        finding.save()
    with pytest.raises(ImmutableError):
        finding.delete()
    with pytest.raises(IntegrityError), transaction.atomic():
        Finding.objects.filter(pk=finding.pk).update(outcome="fail")
    with pytest.raises(IntegrityError), transaction.atomic():
        Finding.objects.filter(pk=finding.pk).delete()
    finding.refresh_from_db()
    assert finding.outcome == "pass"


def test_a_finding_is_never_written_twice_for_the_same_target_and_metric(cluster) -> None:  # type: ignore[no-untyped-def]
    run = start(cluster, "ssh_reachable")
    now = timezone.now()
    draft = services.FindingDraft(target="login", outcome="pass", metric="latency_ms", value=1.0)
    assert services.finding_record(run=run, draft=draft, started_at=now, finished_at=now) is not None
    assert services.finding_record(run=run, draft=draft, started_at=now, finished_at=now) is None
    assert Finding.objects.filter(run=run).count() == 1


def test_secrets_are_encrypted_at_rest(cluster) -> None:  # type: ignore[no-untyped-def]
    account = TenantAccount.objects.get(cluster=cluster)
    assert "s3cret-pw" not in account.password_encrypted and account.password_encrypted
    ctx = services.probe_context_build(cluster=cluster)
    assert ctx.tenant().credentials.password == "s3cret-pw"
    assert ctx.redact("the password is s3cret-pw") == "the password is ***"


def test_an_unreadable_private_key_is_refused_and_nothing_is_stored(cluster) -> None:  # type: ignore[no-untyped-def]
    account = TenantAccount(cluster=cluster, label="tenant-b", username="bob")
    with pytest.raises(services.ProbeRunError):
        services.tenant_account_set_secrets(account=account, private_key="not a key")
    assert not TenantAccount.objects.filter(label="tenant-b").exists()


def test_the_sweeper_resends_runs_of_dead_workers_and_lost_messages(
    cluster, settings, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    stuck = start(cluster, "ssh_reachable")
    lost = start(cluster, "node_inventory")
    fresh = services.probe_runs_start(cluster=cluster, probe_ids=["ssh_reachable"])[0]
    services.probe_run_claim(run_id=stuck.pk, worker="dead")
    old = timezone.now() - dt.timedelta(
        seconds=settings.OPGRADE_PROBE_RESEND_PENDING_S + settings.OPGRADE_PROBE_STALE_S + 5
    )
    ProbeRun.objects.filter(pk=stuck.pk).update(heartbeat_at=old)
    ProbeRun.objects.filter(pk=lost.pk).update(sent_at=old)
    with django_capture_on_commit_callbacks() as callbacks:
        resent = services.probe_runs_sweep()
    assert sorted(resent) == sorted([stuck.pk, lost.pk]) and fresh.pk not in resent
    assert len(callbacks) == 2


def test_fan_out_never_exceeds_the_providers_session_limit(cluster) -> None:  # type: ignore[no-untyped-def]
    import threading
    import time

    ClusterAccess.objects.filter(cluster=cluster).update(max_concurrency=1)
    lock, state = threading.Lock(), {"now": 0, "peak": 0}

    def slow(ep, cmd):  # type: ignore[no-untyped-def]
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return ok()

    run = start(cluster, "ssh_reachable")
    services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=FakeTransport(slow).pool)
    assert state["peak"] == 1 and Finding.objects.filter(run=run).count() == 3


def test_runs_are_sent_after_commit_to_the_probes_queue_with_time_limits_above_the_timeout(
    cluster, monkeypatch, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    sent: list[tuple[tuple, dict]] = []

    def send_task(name: str, *, args: tuple, **kw: object) -> None:
        assert name == "probes.probe_run_execute"  # sent by name: services never import probes.tasks
        sent.append((args, kw))

    monkeypatch.setattr(services.current_app, "send_task", send_task)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = start(cluster, "node_inventory")
        assert sent == []  # nothing leaves before the transaction commits
    for callback in callbacks:
        callback()
    ((args, options),) = sent
    assert args == (run.pk,) and options["queue"] == "probes"
    # 3 hosts at concurrency 2: two waves of the 60 s probe timeout, doubled, plus a margin.
    assert options["soft_time_limit"] > 60 * 2 and options["time_limit"] > options["soft_time_limit"]


def test_compute_nodes_are_read_from_the_scheduler_and_the_listed_ones_are_only_a_hint(cluster) -> None:  # type: ignore[no-untyped-def]
    ClusterAccess.objects.filter(cluster=cluster).update(
        inventory_source=ClusterAccess.InventorySource.SCHEDULER, compute_nodes="node1\nstale9"
    )

    def answer(ep, cmd):  # type: ignore[no-untyped-def]
        return ok("node1|node1|idle|none\nnode7|node7|idle|none\nnode7|node7|idle|none\n") if cmd.startswith("sinfo") else ok()

    fake = FakeTransport(answer)
    for node in ("node1", "node7"):
        HostKeyPin.objects.create(cluster=cluster, host=node, port=22, key_type=KEY.key_type, fingerprint=KEY.fingerprint)
    run = start(cluster, "ssh_reachable")
    services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    assert sorted(Finding.objects.filter(run=run).values_list("target", flat=True)) == [
        "login",
        "node1",
        "node7",
    ]
    assert ("login", "sinfo -N -h -o '%N|%o|%T|%E'") in fake.log


def test_a_disruptive_probe_runs_only_where_the_cluster_opted_in(cluster) -> None:  # type: ignore[no-untyped-def]
    from tests.probes import worker_probes  # noqa: F401  (registers test_disruptive)

    fake = FakeTransport(lambda ep, cmd: ok())
    run = start(cluster, "test_disruptive")
    services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    (finding,) = Finding.objects.filter(run=run)
    assert finding.outcome == "declined" and "opted in" in finding.summary and fake.log == []

    ClusterAccess.objects.filter(cluster=cluster).update(disruptive_opt_in=True)
    (again,) = services.probe_runs_start(cluster=cluster, probe_ids=["test_disruptive"])
    services.probe_run_execute(run_id=again.pk, worker="w1", pool_factory=fake.pool)
    assert Finding.objects.get(run=again).outcome == "pass"


def _dead_pid() -> int:
    import subprocess

    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _held_by(run: ProbeRun, claimant: str) -> None:
    """The run as a claimant left it: running, heartbeat just now, claimed by ``claimant``."""
    ProbeRun.objects.filter(pk=run.pk).update(
        status=ProbeRun.Status.RUNNING,
        attempt=1,
        heartbeat_at=timezone.now(),
        claimed_by=f"{claimant}/abc123",
    )


def test_a_redelivery_held_by_a_dead_process_on_this_host_retries_once_the_claim_is_stale(
    cluster, settings
) -> None:  # type: ignore[no-untyped-def]
    import socket

    settings.OPGRADE_PROBE_STALE_S = 30
    run = start(cluster, "ssh_reachable")
    _held_by(run, f"{socket.gethostname()}:{_dead_pid()}:0")
    fake = FakeTransport(lambda ep, cmd: ok())
    result = services.probe_run_execute(run_id=run.pk, worker="w2", pool_factory=fake.pool)
    run.refresh_from_db()
    assert result.status == "held" and 30 <= result.retry_in <= 31.5
    assert run.status == ProbeRun.Status.RUNNING and run.attempt == 1 and not fake.log


def test_a_redelivery_held_on_another_host_retries_once_the_claim_is_stale(cluster) -> None:  # type: ignore[no-untyped-def]
    run = start(cluster, "ssh_reachable")
    _held_by(run, "some-other-host:4242:99")
    result = services.probe_run_execute(run_id=run.pk, worker="w2", pool_factory=FakeTransport(ok).pool)
    assert result.status == "held" and result.retry_in is not None and result.retry_in >= 1


def test_a_redelivery_held_by_a_live_process_on_this_host_is_dropped(cluster) -> None:  # type: ignore[no-untyped-def]
    import socket
    import subprocess

    holder = subprocess.Popen(["sleep", "30"])
    try:
        run = start(cluster, "ssh_reachable")
        _held_by(run, f"{socket.gethostname()}:{holder.pid}:{services._process_start(holder.pid)}")
        result = services.probe_run_execute(run_id=run.pk, worker="w2", pool_factory=FakeTransport(ok).pool)
        assert result.status == "not_claimed" and result.retry_in is None
    finally:
        holder.kill()
        holder.wait()


def test_a_reused_pid_does_not_pass_for_the_claimant(cluster) -> None:  # type: ignore[no-untyped-def]
    import socket
    import subprocess

    other = subprocess.Popen(["sleep", "30"])
    try:
        run = start(cluster, "ssh_reachable")
        start_ticks = services._process_start(other.pid)
        _held_by(run, f"{socket.gethostname()}:{other.pid}:{start_ticks - 1}")  # same pid, older process
        result = services.probe_run_execute(run_id=run.pk, worker="w2", pool_factory=FakeTransport(ok).pool)
        assert result.status == "held"
    finally:
        other.kill()
        other.wait()
