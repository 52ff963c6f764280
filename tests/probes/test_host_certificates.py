"""Host certificates against real OpenSSH sshd: a node no analyst pinned is trusted only through
an OpenSSH HOST certificate signed by a host CA the analyst pinned, naming the node (issue 18).

Each refusal happens after the key exchange and before any authentication request, with its
own reason, so a report can tell an expired certificate from a forged one.

OpenSSH's sshd checks its own certificate's signature when it loads it (a tampered one is not
served: the test shows that too), so the forged-signature case is served by a small SSH server
built on paramiko's server mode, which presents whatever certificate blob it is given, as a
hostile or broken non-OpenSSH server would. It completes a real key exchange with the
certified key.
"""

from __future__ import annotations

import base64
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import paramiko
import pytest

from probes.transport import (
    Command,
    Credentials,
    Endpoint,
    HostKey,
    HostKeyNotPinned,
    HostKeyUnverified,
    SshPool,
    Timeouts,
    connect,
    host_ca_parse,
)
from tests.sshd import SSH_KEYGEN, Sshd, fingerprint, keygen, start_sshd

pytestmark = pytest.mark.integration

FAST = Timeouts(connect_s=3, banner_s=2, handshake_s=5, auth_s=5, channel_open_s=5, keepalive_s=5)
NODE = "node8"


def creds(user_key: Path, user: str) -> Credentials:
    return Credentials(username=user, private_key=user_key.read_text())


def sign(ca: Path, host_key: Path, *, principals: str = NODE, validity: str = "-5m:+1h", host: bool = True) -> Path:
    """Sign ``host_key``.pub with ssh-keygen -s (as a provider's CA would); returns the cert path."""
    argv = [SSH_KEYGEN, "-q", "-s", str(ca), "-I", f"{principals}-host", "-V", validity]
    if principals:
        argv += ["-n", principals]
    if host:
        argv.append("-h")
    subprocess.run([*argv, str(host_key.with_suffix(".pub"))], check=True, timeout=30)
    return host_key.parent / f"{host_key.name}-cert.pub"


def serve_cert(
    sshd_factory: Callable[..., Sshd], tmp_path: Path, ca: Path, **signing: object
) -> Sshd:
    """An sshd presenting a certificate for its host key, signed by ``ca``."""
    directory = tmp_path / f"hk{len(list(tmp_path.glob('hk*')))}"
    directory.mkdir()
    host_key = keygen(directory / "host_key")
    cert = sign(ca, host_key, **signing)  # type: ignore[arg-type]
    return sshd_factory(host_key=host_key, extra_config=f"HostCertificate {cert}\n")


class _CertHostKey(paramiko.Ed25519Key):
    """A host key that presents an arbitrary certificate blob in the key exchange (and signs the
    exchange with its own private key, so the proof of possession holds)."""

    def __init__(self, path: Path, cert_line: str) -> None:
        super().__init__(filename=str(path))
        self._cert = base64.b64decode(cert_line.split()[1])

    def asbytes(self) -> bytes:
        return self._cert

    def get_name(self) -> str:
        return "ssh-ed25519-cert-v01@openssh.com"


class _NoAuth(paramiko.ServerInterface):
    def __init__(self) -> None:
        self.auth_attempts = 0

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        self.auth_attempts += 1
        return paramiko.AUTH_FAILED


def _forged_cert_server(host_key: Path, cert_line: str) -> tuple[int, _NoAuth, threading.Thread]:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    interface = _NoAuth()

    def serve() -> None:
        conn, _ = listener.accept()
        listener.close()
        transport = paramiko.Transport(conn)
        transport.add_server_key(_CertHostKey(host_key, cert_line))
        try:
            transport.start_server(server=interface)
            transport.accept(timeout=5)
        except (paramiko.SSHException, EOFError, OSError):
            pass
        finally:
            transport.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return port, interface, thread


def auth_requests(server: Sshd) -> int:
    return server.log_text().count("userauth-request for user")


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return keygen(tmp_path_factory.mktemp("ca") / "host_ca", comment="provider-host-ca")


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return keygen(tmp_path_factory.mktemp("ca2") / "host_ca", comment="someone-else")


def trusting(server: Sshd, ca: Path, *, principal: str = NODE, jump: Endpoint | None = None) -> Endpoint:
    return Endpoint(
        host=server.host, port=server.port, host_cas=(ca.with_suffix(".pub").read_text(),),
        principal=principal, jump=jump,
    )  # fmt: skip


def test_a_good_host_certificate_from_the_pinned_ca_is_accepted_behind_the_login_node(
    sshd_factory: Callable[..., Sshd], user_key: Path, tmp_path: Path, ca: Path
) -> None:
    login = sshd_factory()
    node = serve_cert(sshd_factory, tmp_path, ca)
    login_ep = Endpoint(
        host=login.host, port=login.port, host_keys=(HostKey(login.host_key_type, login.host_key_fingerprint),)
    )
    with SshPool(credentials=creds(user_key, login.user), timeouts=FAST) as pool:
        conn = pool.connection(trusting(node, ca, jump=login_ep))
        result = conn.run(Command("echo {w}", w="through-cert"), timeout_s=10)
    assert result.stdout == "through-cert\n"
    # the key the host proved in the key exchange is the certified one (the plain host key's fingerprint)
    assert conn.host_key.fingerprint == node.host_key_fingerprint
    ca_fp = host_ca_parse(ca.with_suffix(".pub").read_text()).fingerprint
    assert ca_fp == fingerprint(ca.with_suffix(".pub"))
    assert conn.verified_by == f"certificate '{NODE}-host' for {NODE} signed by {ca_fp}"


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("wrong_ca", "untrusted_ca"),
        ("expired", "expired"),
        ("not_yet_valid", "not_yet_valid"),
        ("wrong_principal", "wrong_principal"),
        ("no_principal", "wrong_principal"),
        ("user_cert", "not_host_certificate"),
        ("plain_key", "no_certificate"),
    ],
)
def test_anything_but_a_valid_host_certificate_is_refused_with_its_reason_before_authentication(
    sshd_factory: Callable[..., Sshd], user_key: Path, tmp_path: Path, ca: Path, other_ca: Path,
    case: str, reason: str,
) -> None:  # fmt: skip
    server = {
        "wrong_ca": lambda: serve_cert(sshd_factory, tmp_path, other_ca),
        "expired": lambda: serve_cert(sshd_factory, tmp_path, ca, validity="20200101:20200102"),
        "not_yet_valid": lambda: serve_cert(sshd_factory, tmp_path, ca, validity="+1d:+2d"),
        "wrong_principal": lambda: serve_cert(sshd_factory, tmp_path, ca, principals="node2,login"),
        "no_principal": lambda: serve_cert(sshd_factory, tmp_path, ca, principals=""),
        "user_cert": lambda: serve_cert(sshd_factory, tmp_path, ca, host=False),
        "plain_key": lambda: sshd_factory(),
    }[case]()
    with pytest.raises(HostKeyUnverified) as caught:
        connect(trusting(server, ca), creds(user_key, server.user), timeouts=FAST)
    assert caught.value.reason == reason, str(caught.value)
    assert caught.value.code == "host_key_unverified" and not caught.value.transient
    assert caught.value.offered.fingerprint == server.host_key_fingerprint
    assert auth_requests(server) == 0  # refused before any credential was offered


def test_a_certificate_whose_ca_signature_was_tampered_with_is_refused_as_bad_signature(
    user_key: Path, tmp_path: Path, ca: Path
) -> None:
    host_key = keygen(tmp_path / "host_key")
    cert = sign(ca, host_key)
    kind, blob, *_ = cert.read_text().split()
    raw = bytearray(base64.b64decode(blob))
    raw[-1] ^= 0x01  # the last byte of the CA's signature
    forged = f"{kind} {base64.b64encode(bytes(raw)).decode()}"
    # stock sshd will not even serve it: it checks its certificate's signature at load
    cert.write_text(forged + "\n")
    stock = start_sshd(
        tmp_path / "stock", authorized_public_keys=[user_key.with_suffix(".pub")], host_key=host_key,
        extra_config=f"HostCertificate {cert}\n", log_level="ERROR",
    )  # fmt: skip
    stock.stop()
    assert "Could not load host certificate" in stock.log_text()

    port, interface, thread = _forged_cert_server(host_key, forged)
    endpoint = Endpoint(host="127.0.0.1", port=port, host_cas=(ca.with_suffix(".pub").read_text(),), principal=NODE)
    with pytest.raises(HostKeyUnverified) as caught:
        connect(endpoint, creds(user_key, "tenant"), timeouts=FAST)
    thread.join(10)
    assert caught.value.reason == "bad_signature", str(caught.value)
    assert caught.value.offered.fingerprint == fingerprint(host_key.with_suffix(".pub"))
    assert interface.auth_attempts == 0
    # control: the same server with the untouched certificate passes every check but the login
    port, interface, thread = _forged_cert_server(host_key, f"{kind} {blob}")
    with pytest.raises(Exception) as control:
        connect(Endpoint(host="127.0.0.1", port=port, host_cas=endpoint.host_cas, principal=NODE),
                creds(user_key, "tenant"), timeouts=FAST)  # fmt: skip
    thread.join(10)
    assert type(control.value).__name__ == "AuthFailed" and interface.auth_attempts == 1


def test_a_pinned_plain_key_still_wins_over_a_certificate_check(
    sshd_factory: Callable[..., Sshd], user_key: Path, ca: Path, other_ca: Path, tmp_path: Path
) -> None:
    server = serve_cert(sshd_factory, tmp_path, other_ca)  # a cert we do not trust, but a key we pinned
    endpoint = Endpoint(
        host=server.host, port=server.port, host_keys=(HostKey("ssh-ed25519", server.host_key_fingerprint),),
        host_cas=(ca.with_suffix(".pub").read_text(),), principal=NODE,
    )  # fmt: skip
    conn = connect(endpoint, creds(user_key, server.user), timeouts=FAST)
    assert conn.verified_by == "pinned key"
    conn.close()


def test_an_endpoint_with_neither_pin_nor_ca_is_refused_as_not_pinned(
    sshd_factory: Callable[..., Sshd], user_key: Path, tmp_path: Path, ca: Path
) -> None:
    server = serve_cert(sshd_factory, tmp_path, ca)
    with pytest.raises(HostKeyNotPinned):
        connect(Endpoint(host=server.host, port=server.port), creds(user_key, server.user), timeouts=FAST)


def test_a_host_ca_to_pin_is_one_plain_public_key(ca: Path, tmp_path: Path) -> None:
    line = ca.with_suffix(".pub").read_text()
    assert host_ca_parse(line) == HostKey("ssh-ed25519", fingerprint(ca.with_suffix(".pub")))
    host_key = keygen(tmp_path / "hk")
    cert = sign(ca, host_key).read_text()
    for bad in ("", "ssh-ed25519", "ssh-ed25519 !!!notbase64", cert, ca.read_text(), line + line):
        with pytest.raises(ValueError):
            host_ca_parse(bad)
    with pytest.raises(ValueError, match="principal"):
        Endpoint(host="10.0.0.1", host_cas=(line,))


def test_a_pooled_connection_verified_for_one_principal_is_not_reused_for_another(
    sshd_factory: Callable[..., Sshd], user_key: Path, tmp_path: Path, ca: Path
) -> None:
    server = serve_cert(sshd_factory, tmp_path, ca)
    with SshPool(credentials=creds(user_key, server.user), timeouts=FAST) as pool:
        assert pool.connection(trusting(server, ca)).run(Command("true"), timeout_s=10).ok
        with pytest.raises(HostKeyUnverified) as caught:
            pool.connection(trusting(server, ca, principal="node2"))
        assert caught.value.reason == "wrong_principal" and pool.connects == 1
