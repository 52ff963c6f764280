"""A tenant's password goes over SSH only to the login host and port it was typed for (issue 24, item 1).

Against real servers on loopback (one port = one origin): a password-only tenant is stored for login
node A (a real OpenSSH sshd); an analyst then points ``login_host``/``login_port`` at a second server
and pins its host key: a real sshd logging at DEBUG3 (every ``userauth-request``), or a paramiko
server recording the arguments of every ``check_auth_password`` (tests/ssh_listener.py). A probe
runs: the password never arrives, nothing connects at all, the run ends ``error``
(``password_not_bound``), flagged, and the pages say in words that the password must be typed again.
After it is typed again for the new host it does arrive (the positive control: the listeners would
have seen it). Also: the transport refuses an unbound password whatever the caller passes, a node
behind the login node counts as the login node's origin, and migration 0009 binds the passwords
stored before it to the login host of the day.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from config.access import Role
from probes import onboarding, services
from probes.models import ClusterAccess, Finding, HostKeyPin, ProbeRun, TenantAccount
from probes.transport import (
    AuthFailed,
    Credentials,
    Endpoint,
    HostKey,
    PasswordNotBound,
    SshPool,
    Timeouts,
    _password_origin,
    connect,
    ssh_origin,
)
from tests.factories import ClusterFactory
from tests.ssh_listener import RecordingSshServer
from tests.sshd import Sshd
from tests.workbench.builders import user

pytestmark = pytest.mark.django_db

PASSWORD = "pw-SSH-never-leaves-9931"
USERNAME = "opgrade-no-such-user"
FAST = Timeouts(connect_s=3, banner_s=5, handshake_s=5, auth_s=5)
SLOT = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _text(response) -> str:  # type: ignore[no-untyped-def]
    return html.unescape(response.content.decode())


def _pin(cluster, host: str, port: int, key_type: str, fp: str) -> None:  # type: ignore[no-untyped-def]
    HostKeyPin.objects.create(cluster=cluster, host=host, port=port, key_type=key_type, fingerprint=fp)


def _password_only_tenant_at(login: Sshd):  # type: ignore[no-untyped-def]
    cluster = ClusterFactory(gpu_count=0, gpu_model="")
    ClusterAccess.objects.create(cluster=cluster, login_host=login.host, login_port=login.port,
                                 inventory_source=ClusterAccess.InventorySource.LISTED)
    _pin(cluster, login.host, login.port, login.host_key_type, login.host_key_fingerprint)
    account = services.tenant_account_set_secrets(
        account=TenantAccount(cluster=cluster, label="tenant-a", username=USERNAME), password=PASSWORD
    )
    assert account.password_origins == [ssh_origin(login.host, login.port)]  # typed for A, bound to A
    return cluster, account


def _run(cluster) -> ProbeRun:  # type: ignore[no-untyped-def]
    # a slot of its own per run (a second start in the same slot would be the first run again)
    slot = SLOT + dt.timedelta(hours=ProbeRun.objects.filter(cluster=cluster).count())
    (run,) = services.probe_runs_start(cluster=cluster, probe_ids=["ssh_reachable"], slot=slot, send=False)
    services.probe_run_execute(run_id=run.pk, worker="w1")
    run.refresh_from_db()
    return run


def _refused_unbound(run: ProbeRun, new_origin: str) -> None:
    assert run.status == ProbeRun.Status.ERROR and run.error_code == "password_not_bound", run.error_message
    assert run.flagged, "the analyst is asked to look"
    assert f"not sent to {new_origin}" in run.error_message and "Enter it again" in run.error_message
    words = " ".join([run.error_message, *(f.summary for f in Finding.objects.filter(run=run))])
    words += json.dumps([f.evidence for f in Finding.objects.filter(run=run)])
    assert PASSWORD not in words


@pytest.mark.integration
def test_a_password_never_reaches_a_real_sshd_the_login_host_was_moved_to_until_it_is_typed_for_it(
    sshd_factory: Callable[..., Sshd],
) -> None:
    home = sshd_factory(password_auth=True)
    elsewhere = sshd_factory(password_auth=True, log_level="DEBUG3")
    cluster, account = _password_only_tenant_at(home)
    saved = onboarding.cluster_access_save(cluster=cluster, values={"login_port": elsewhere.port})
    new_origin = ssh_origin(elsewhere.host, elsewhere.port)
    assert any(f"Login node (SSH) ({new_origin}): the password of tenant-a is not offered" in n for n in saved.notes)
    account.refresh_from_db()
    assert account.password_origins == [], "the old login origin was unbound, the new one was never typed for"
    _pin(cluster, elsewhere.host, elsewhere.port, elsewhere.host_key_type, elsewhere.host_key_fingerprint)

    connects_before = elsewhere.log_text().count("Connection from")  # the fixture's own readiness probe
    _refused_unbound(_run(cluster), new_origin)
    seen = elsewhere.log_text()
    assert "userauth-request" not in seen and "password" not in seen.lower()
    assert seen.count("Connection from") == connects_before, "nothing connected to the new host"

    # positive control: typed again for the new host, the password attempt arrives there (and is refused:
    # no such user; the sshd logs every password attempt at this level)
    onboarding.tenant_password_enter_again(account=account, password=PASSWORD)
    assert new_origin in account.password_origins
    run = _run(cluster)
    assert run.error_code == "auth_failed", run.error_message
    seen = elsewhere.log_text()
    assert f"userauth-request for user {USERNAME} service ssh-connection method password" in seen
    assert "Failed password" in seen
    assert "userauth-request" not in home.log_text(), "the old host was not asked either"


@pytest.mark.integration
def test_a_recording_ssh_listener_gets_the_password_only_after_it_is_typed_for_it_admin_flow(
    sshd_factory: Callable[..., Sshd], tmp_path: Path, admin_client: Client,
) -> None:
    home = sshd_factory(password_auth=True)
    cluster, account = _password_only_tenant_at(home)
    with RecordingSshServer(tmp_path / "recorder") as recorder:
        access = ClusterAccess.objects.get(cluster=cluster)
        moved = admin_client.post(reverse("admin:probes_clusteraccess_change", args=[access.pk]), {
            "cluster": cluster.pk, "login_host": recorder.host, "login_port": recorder.port,
            "inventory_source": "listed", "node_access": "scheduler", "compute_nodes": "", "api_base_url": "",
            "api_token": "", "max_concurrency": 4, "settings": "{}",
        }, follow=True)  # fmt: skip
        new_origin = ssh_origin(recorder.host, recorder.port)
        said = _text(moved)
        assert moved.status_code == 200 and f"Login node (SSH) ({new_origin})" in said, said[-3000:]
        assert "password of tenant-a is not offered to this login host" in said and "Enter it again" in said
        tenant_page = _text(admin_client.get(reverse("admin:probes_tenantaccount_change", args=[account.pk])))
        assert f"Not offered over SSH to the login node {new_origin}" in tenant_page
        assert "Type the password again to use it there" in tenant_page and PASSWORD not in tenant_page
        _pin(cluster, recorder.host, recorder.port, recorder.host_key_type, recorder.host_key_fingerprint)

        _refused_unbound(_run(cluster), new_origin)
        assert recorder.passwords == [] and recorder.connections == 0, "nothing sent, not even a TCP connect"

        # positive control, through the tenant's admin page: the listener does record a password it is sent
        typed = admin_client.post(reverse("admin:probes_tenantaccount_change", args=[account.pk]), {
            "cluster": cluster.pk, "label": "tenant-a", "username": USERNAME, "password": PASSWORD,
            "private_key": "", "passphrase": "",
        })  # fmt: skip
        assert typed.status_code == 302, _text(typed)[-2000:]
        account.refresh_from_db()
        assert account.password_origins == [new_origin]
        run = _run(cluster)
        assert run.error_code == "auth_failed", run.error_message
        assert recorder.passwords and set(recorder.passwords) == {(USERNAME, PASSWORD)}
        assert PASSWORD not in run.error_message


@pytest.mark.integration
def test_the_tenants_step_asks_for_the_password_again_after_the_access_step_moved_the_login_node(
    sshd_factory: Callable[..., Sshd], tmp_path: Path,
) -> None:
    home = sshd_factory(password_auth=True)
    cluster, account = _password_only_tenant_at(home)
    analyst = Client()
    analyst.force_login(user("ana", Role.ANALYST))
    url = reverse("workbench:onboard_access", args=[cluster.pk])
    moved = analyst.post(url, {
        "login_host": home.host, "login_port": str(home.port + 1 if home.port < 65535 else home.port - 1),
        "inventory_source": "listed", "node_access": "scheduler", "compute_nodes": "", "api_base_url": "",
        "api_token": "", "max_concurrency": "4",
    }, follow=True)  # fmt: skip
    access = ClusterAccess.objects.get(cluster=cluster)
    new_origin = ssh_origin(access.login_host, access.login_port)
    assert access.login_port != home.port and "password of tenant-a is not offered" in _text(moved)
    tenants = reverse("workbench:onboard_tenants", args=[cluster.pk])
    page = _text(analyst.get(tenants))
    assert f"Login node (SSH) ({new_origin})" in page and "Enter it again on the tenants step" in page
    analyst.post(tenants, {"action": "password", "tenant": account.pk, "password": PASSWORD})
    page = _text(analyst.get(tenants))
    assert "Login node (SSH)" not in page and new_origin in page and PASSWORD not in page
    account.refresh_from_db()
    assert account.password_origins == [new_origin]
    # a tenant with a private key logs in with the key: the page does not ask for its password over SSH
    TenantAccount.objects.filter(pk=account.pk).update(private_key_encrypted="x", password_origins=[])
    assert "Login node (SSH)" not in _text(analyst.get(tenants))


def test_the_transport_refuses_an_unbound_password_whatever_the_caller_passes(tmp_path: Path) -> None:
    with RecordingSshServer(tmp_path / "recorder") as recorder:
        pinned = (HostKey(key_type=recorder.host_key_type, fingerprint=recorder.host_key_fingerprint),)
        target = Endpoint(host=recorder.host, port=recorder.port, host_keys=pinned)
        origin = ssh_origin(recorder.host, recorder.port)
        for bound in (frozenset(), frozenset({ssh_origin(recorder.host, recorder.port + 1)}),
                      frozenset({f"http://{recorder.host}:{recorder.port}"})):
            creds = Credentials(username=USERNAME, password=PASSWORD, password_origins=bound)
            with pytest.raises(PasswordNotBound) as refused:
                connect(target, creds, timeouts=FAST)
            assert refused.value.code == "password_not_bound" and not refused.value.transient
            assert origin in str(refused.value) and PASSWORD not in str(refused.value)
            with SshPool(credentials=creds, timeouts=FAST) as pool, pytest.raises(PasswordNotBound):
                pool.connection(target)
        assert recorder.connections == 0 and recorder.passwords == []
        assert PASSWORD not in repr(Credentials(username=USERNAME, password=PASSWORD, password_origins=frozenset()))
        # the control: bound to this origin, the password is offered (and recorded)
        with pytest.raises(AuthFailed):  # the recorder refuses every attempt, after recording it
            connect(target, Credentials(username=USERNAME, password=PASSWORD, password_origins=frozenset({origin})),
                    timeouts=FAST)
        assert recorder.passwords == [(USERNAME, PASSWORD)]


def test_a_node_behind_the_login_node_counts_as_the_login_nodes_origin_a_direct_one_as_its_own() -> None:
    login = Endpoint(host="Login.Example.", port=2222)
    assert _password_origin(login) == "ssh://login.example:2222"
    assert _password_origin(Endpoint(host="10.0.0.7", port=22, jump=login)) == "ssh://login.example:2222"
    assert _password_origin(Endpoint(host="10.0.0.7", port=22)) == "ssh://10.0.0.7:22"
    assert ssh_origin("fd00::1", 22) == "ssh://[fd00::1]:22"


@pytest.mark.django_db(transaction=True)
def test_migration_0009_binds_stored_passwords_to_the_login_host_of_the_day() -> None:
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    try:
        old = executor.migrate([("probes", "0008_secret_origins")]).apps
        cluster = ClusterFactory()
        OldAccess = old.get_model("probes", "ClusterAccess")
        OldTenant = old.get_model("probes", "TenantAccount")
        OldAccess.objects.create(cluster_id=cluster.pk, login_host="Login.Example", login_port=2200, settings={})
        OldTenant.objects.create(cluster_id=cluster.pk, label="pw", username="a", password_encrypted="enc",
                                 password_origins=["http://metrics.example:80"])
        OldTenant.objects.create(cluster_id=cluster.pk, label="key", username="b", private_key_encrypted="enc")
        MigrationExecutor(connection).migrate([("probes", "0009_ssh_password_origin")])
    finally:
        MigrationExecutor(connection).migrate(leaves)
    assert TenantAccount.objects.get(label="pw").password_origins == [
        "http://metrics.example:80", "ssh://login.example:2200"]
    assert TenantAccount.objects.get(label="key").password_origins == []
