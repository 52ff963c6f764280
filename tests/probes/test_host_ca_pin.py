"""Pinning a provider's host CA (issue 18.2): an explicit admin action that shows the fingerprint
before it stores anything, write-only like the other pins, and a probe run that trusts a node
reached by direct SSH through its certificate, or reports it unverified with the reason."""

from __future__ import annotations

import datetime as dt
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from config.access import Role
from probes import services
from probes.models import ClusterAccess, Finding, HostCAPin, HostKeyPin, ProbeRun, TenantAccount
from reviews import services as review_services
from tests.factories import ClusterFactory, ProviderFactory
from tests.sshd import SSH_KEYGEN, Sshd, fingerprint, free_port, keygen

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return keygen(tmp_path_factory.mktemp("ca") / "host_ca", comment="provider-host-ca")


def _client(role: Role | None, provider=None) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    if role is not None:
        user = get_user_model().objects.create_user(username=f"u-{role}", password="pw-not-used-42")
        review_services.user_role_set(user=user, role=role, provider=provider)
        client.force_login(user)
    return client


def test_a_host_ca_is_pinned_only_after_the_analyst_saw_its_fingerprint(ca: Path) -> None:
    access = ClusterAccess.objects.create(cluster=ClusterFactory(), login_host="login.example")
    url = reverse("admin:probes_clusteraccess_pin_ca", args=[access.pk])
    analyst = _client(Role.ANALYST)
    line = ca.with_suffix(".pub").read_text()
    shown = analyst.post(url, {"public_key": line}).content.decode()
    fp = fingerprint(ca.with_suffix(".pub"))
    assert fp in shown and not HostCAPin.objects.exists()  # shown, not stored
    response = analyst.post(url, {"public_key": line, "confirm_fingerprint": fp})
    assert response.status_code == 302
    pin = HostCAPin.objects.get()
    assert (pin.access, pin.fingerprint, pin.key_type) == (access, fp, "ssh-ed25519")
    assert pin.public_key == " ".join(line.split()[:2]) and pin.recorded_by is not None
    assert analyst.get(reverse("admin:probes_hostcapin_add")).status_code == 403  # no manual pins
    change = analyst.post(reverse("admin:probes_hostcapin_change", args=[pin.pk]), {"fingerprint": "SHA256:x"})
    assert change.status_code in (302, 403) and HostCAPin.objects.get().fingerprint == fp


def test_a_confirmation_for_another_key_or_anything_but_a_public_key_stores_nothing(
    ca: Path, tmp_path: Path
) -> None:
    access = ClusterAccess.objects.create(cluster=ClusterFactory(), login_host="login.example")
    url = reverse("admin:probes_clusteraccess_pin_ca", args=[access.pk])
    analyst = _client(Role.ANALYST)
    other = keygen(tmp_path / "other_ca")
    swapped = analyst.post(
        url, {"public_key": other.with_suffix(".pub").read_text(), "confirm_fingerprint": fingerprint(ca.with_suffix(".pub"))}
    )
    assert "nothing pinned" in swapped.content.decode() and not HostCAPin.objects.exists()
    host_key = keygen(tmp_path / "hk")
    subprocess.run([SSH_KEYGEN, "-q", "-s", str(ca), "-h", "-I", "x", "-n", "node1", str(host_key) + ".pub"],
                   check=True, timeout=30)  # fmt: skip
    cert = (tmp_path / "hk-cert.pub").read_text()
    for bad in (ca.read_text(), cert, "ssh-ed25519 AAAA-not-base64", "<script>alert(1)</script>"):
        page = analyst.post(url, {"public_key": bad}).content.decode()
        assert "PRIVATE KEY" not in page and "<script>alert" not in page
    assert not HostCAPin.objects.exists()


@pytest.mark.parametrize(
    ("role", "allowed"),
    [(None, False), (Role.REVIEWER, False), (Role.PUBLISHER, False), (Role.PROVIDER, False),
     (Role.ANALYST, True), (Role.ADMIN, True)],
    ids=lambda v: str(v),
)  # fmt: skip
def test_only_runners_may_pin_a_host_ca(ca: Path, role: Role | None, allowed: bool) -> None:
    provider = ProviderFactory()
    access = ClusterAccess.objects.create(cluster=ClusterFactory(provider=provider), login_host="login.example")
    client = _client(role, provider=provider if role == Role.PROVIDER else None)
    url = reverse("admin:probes_clusteraccess_pin_ca", args=[access.pk])
    line = ca.with_suffix(".pub").read_text()
    page = client.get(url)
    client.post(url, {"public_key": line, "confirm_fingerprint": fingerprint(ca.with_suffix(".pub"))})
    assert HostCAPin.objects.exists() is allowed
    assert (page.status_code == 200) is allowed
    listing = client.get(reverse("admin:probes_hostcapin_changelist"))
    assert (listing.status_code == 200) is (role in (Role.ANALYST, Role.ADMIN, Role.PUBLISHER))


# --- a probe run over direct SSH, against real sshd ----------------------------------------------


def _node(sshd_factory: Callable[..., Sshd], tmp_path: Path, address: str, signer: Path, principal: str) -> Sshd:
    host_key = keygen(tmp_path / f"host_{address}")
    subprocess.run(
        [SSH_KEYGEN, "-q", "-s", str(signer), "-h", "-I", principal, "-n", principal, "-V", "-5m:+1h",
         str(host_key) + ".pub"],
        check=True, timeout=30,
    )  # fmt: skip
    return sshd_factory(
        host_key=host_key, listen=[(address, free_port(address))],
        extra_config=f"HostCertificate {host_key}-cert.pub\n",
    )  # fmt: skip


@pytest.mark.integration
def test_a_run_trusts_a_certified_node_and_reports_a_node_signed_by_another_ca_unverified(
    sshd_factory: Callable[..., Sshd], user_key: Path, tmp_path: Path, ca: Path, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.OPGRADE_PROBE_MAX_ATTEMPTS = 1
    rogue_ca = keygen(tmp_path / "rogue_ca")
    login = sshd_factory()
    good = _node(sshd_factory, tmp_path, "127.0.0.2", ca, "127.0.0.2")
    rogue = _node(sshd_factory, tmp_path, "127.0.0.3", rogue_ca, "127.0.0.3")
    cluster = ClusterFactory(gpu_count=0, gpu_model="")
    access = ClusterAccess.objects.create(
        cluster=cluster, login_host=login.host, login_port=login.port,
        compute_nodes=f"127.0.0.2:{good.port}\n127.0.0.3:{rogue.port}",
        inventory_source=ClusterAccess.InventorySource.LISTED, node_access=ClusterAccess.NodeAccess.SSH,
    )  # fmt: skip
    HostKeyPin.objects.create(
        cluster=cluster, host=login.host, port=login.port, key_type="ssh-ed25519", fingerprint=login.host_key_fingerprint
    )
    services.host_ca_pin(
        access=access, public_key=ca.with_suffix(".pub").read_text(), fingerprint=fingerprint(ca.with_suffix(".pub"))
    )
    services.tenant_account_set_secrets(
        account=TenantAccount(cluster=cluster, label="tenant-a", username=login.user), private_key=user_key.read_text()
    )
    (run,) = services.probe_runs_start(
        cluster=cluster, probe_ids=["ssh_reachable"], slot=dt.datetime(2026, 12, 1, tzinfo=dt.UTC), send=False
    )
    services.probe_run_execute(run_id=run.pk, worker="w1")
    run.refresh_from_db()
    by_target = {f.target: f for f in Finding.objects.filter(run=run)}
    assert run.status == ProbeRun.Status.DONE and run.flagged, (run.error_code, run.error_message)
    assert by_target[f"127.0.0.2:{good.port}"].outcome == "pass", by_target[f"127.0.0.2:{good.port}"].summary
    refused = by_target[f"127.0.0.3:{rogue.port}"]
    assert refused.outcome == "error" and refused.summary.startswith("unverified")
    assert refused.evidence == {
        "error_code": "host_key_unverified", "unverified": True, "transient": False, "reason": "untrusted_ca"
    }
    assert "userauth-request" not in rogue.log_text()  # no credential reached the rogue node
