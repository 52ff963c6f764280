"""probes.transport against real OpenSSH sshd processes on loopback."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from probes.transport import (
    AuthFailed,
    Command,
    Credentials,
    Endpoint,
    HandshakeFailed,
    HostKey,
    HostKeyChanged,
    HostKeyNotPinned,
    HostUnreachable,
    Limits,
    SshPool,
    Timeouts,
    connect,
    host_key_fetch,
)
from tests.sshd import Sshd, fingerprint, free_port, keygen

pytestmark = pytest.mark.integration

FAST = Timeouts(connect_s=3, banner_s=2, handshake_s=5, auth_s=5, channel_open_s=5, keepalive_s=5)


def creds(user_key: Path, user: str) -> Credentials:
    return Credentials(username=user, private_key=user_key.read_text())


def pinned(
    server: Sshd, *, host: str | None = None, port: int | None = None, jump: Endpoint | None = None
) -> Endpoint:
    key = HostKey(key_type=server.host_key_type, fingerprint=server.host_key_fingerprint)
    return Endpoint(host=host or server.host, port=port or server.port, host_keys=(key,), jump=jump)


def auth_requests(server: Sshd) -> int:
    return server.log_text().count("userauth-request for user")


def wait_for(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_it_runs_commands_over_one_reused_connection(sshd: Sshd, user_key: Path) -> None:
    with SshPool(credentials=creds(user_key, sshd.user), timeouts=FAST) as pool:
        conn = pool.connection(pinned(sshd))
        first = conn.run(Command("echo {word}; echo err >&2; exit 3", word="a b;c"), timeout_s=10)
        second = pool.connection(pinned(sshd)).run(Command("uname -s"), timeout_s=10)
        third = pool.connection(pinned(sshd)).run(Command("true"), timeout_s=10)
    assert first.stdout == "a b;c\n"  # the value was one quoted word, not shell syntax
    assert first.stderr == "err\n"  # our PGID marker line is not part of the output
    assert first.exit_code == 3 and not first.ok and not first.timed_out
    assert second.stdout.strip() == "Linux" and third.ok
    assert pool.connects == 1
    assert sshd.log_text().count("Accepted publickey") == 1


def test_it_refuses_a_changed_host_key_before_sending_any_credential(
    sshd: Sshd, user_key: Path, tmp_path: Path
) -> None:
    impostor = keygen(tmp_path / "other_host_key")
    wrong_pin = HostKey(key_type="ssh-ed25519", fingerprint=fingerprint(impostor.with_suffix(".pub")))
    endpoint = Endpoint(host=sshd.host, port=sshd.port, host_keys=(wrong_pin,))

    with pytest.raises(HostKeyChanged) as caught:
        connect(endpoint, creds(user_key, sshd.user), timeouts=FAST)

    assert caught.value.offered.fingerprint == sshd.host_key_fingerprint
    assert not caught.value.transient
    # sshd saw the key exchange and the disconnect, but no authentication request at all.
    assert wait_for(
        lambda: "KEX done" in sshd.log_text() and "[preauth]" in sshd.log_text().split("KEX done")[1], 5
    )
    assert wait_for(
        lambda: "Connection reset by" in sshd.log_text() or "Connection closed by" in sshd.log_text(), 5
    )
    assert auth_requests(sshd) == 0
    # Control: with the right pin the same server does log our authentication.
    connect(pinned(sshd), creds(user_key, sshd.user), timeouts=FAST).close()
    assert wait_for(lambda: auth_requests(sshd) >= 1, 5)


def test_it_refuses_an_unpinned_host_without_authenticating(sshd: Sshd, user_key: Path) -> None:
    with pytest.raises(HostKeyNotPinned):
        connect(Endpoint(host=sshd.host, port=sshd.port), creds(user_key, sshd.user), timeouts=FAST)
    assert auth_requests(sshd) == 0


def test_fetching_a_host_key_reads_the_fingerprint_and_sends_no_credential(sshd: Sshd) -> None:
    key = host_key_fetch(host=sshd.host, port=sshd.port, timeouts=FAST)
    assert key == HostKey(key_type="ssh-ed25519", fingerprint=sshd.host_key_fingerprint)
    time.sleep(0.3)
    assert auth_requests(sshd) == 0


@pytest.mark.parametrize("remote_backstop", [True, False], ids=["with-remote-timeout", "client-kill-only"])
def test_a_hung_command_is_killed_with_its_process_group_at_the_deadline(
    sshd: Sshd, user_key: Path, tmp_path: Path, remote_backstop: bool
) -> None:
    pidfile = tmp_path / "pids"
    deadline_s = 8.0
    slack_s = 2.0  # room for the kill round trip on a loaded 2-core box (CI saw 0.82 s at load 9)
    hung = Command(
        "echo $$ > {pidfile}; sleep 300 & echo $! >> {pidfile}; sleep 301; echo never",
        pidfile=str(pidfile),
    )
    timeouts = dataclasses.replace(FAST, remote_backstop=remote_backstop)
    with SshPool(credentials=creds(user_key, sshd.user), timeouts=timeouts) as pool:
        conn = pool.connection(pinned(sshd))
        started = time.monotonic()
        result = conn.run(hung, timeout_s=deadline_s)
        pids = [int(line) for line in pidfile.read_text().split()]
        assert len(pids) == 2
        gone = wait_for(
            lambda: not any(pid_alive(p) for p in pids),
            max(0.0, deadline_s + slack_s - (time.monotonic() - started)),
        )
        elapsed = time.monotonic() - started
        # The connection is still good for the next command.
        after = conn.run(Command("echo alive"), timeout_s=5)

    assert result.timed_out and result.exit_code is None and "never" not in result.stdout
    assert deadline_s <= result.duration_s <= deadline_s + slack_s
    assert gone, f"remote processes {pids} survived the deadline"
    assert elapsed <= deadline_s + slack_s
    assert after.stdout == "alive\n"


def test_output_is_capped_and_flagged_truncated(sshd: Sshd, user_key: Path) -> None:
    with SshPool(
        credentials=creds(user_key, sshd.user), timeouts=FAST, limits=Limits(max_output_bytes=1000)
    ) as pool:
        conn = pool.connection(pinned(sshd))
        big = conn.run(Command("head -c {n} /dev/zero | tr '\\0' x; echo done >&2", n=200_000), timeout_s=10)
        small = conn.run(Command("echo ok"), timeout_s=10)
    assert big.exit_code == 0 and big.stdout_truncated and not big.stderr_truncated
    assert big.stdout == "x" * 1000 and big.stderr == "done\n"
    assert not small.truncated and small.stdout == "ok\n"


def test_an_unreachable_host_is_a_transient_error(user_key: Path) -> None:
    closed_port = free_port()
    with pytest.raises(HostUnreachable) as caught:
        connect(
            Endpoint(host="127.0.0.1", port=closed_port, host_keys=(HostKey("ssh-ed25519", "SHA256:x"),)),
            Credentials(username="nobody", private_key=user_key.read_text()),
            timeouts=FAST,
        )
    assert caught.value.transient


def test_a_silent_server_times_out_at_the_banner_deadline(user_key: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
    thread.start()
    endpoint = Endpoint(
        host="127.0.0.1", port=listener.getsockname()[1], host_keys=(HostKey("ssh-ed25519", "SHA256:x"),)
    )
    started = time.monotonic()
    try:
        with pytest.raises(HandshakeFailed) as caught:
            connect(
                endpoint,
                Credentials(username="nobody", private_key=user_key.read_text()),
                timeouts=Timeouts(connect_s=2, banner_s=1, handshake_s=1),
            )
    finally:
        thread.join(timeout=5)
        for s in accepted:
            s.close()
        listener.close()
    assert caught.value.transient
    assert time.monotonic() - started < 4


def test_wrong_credentials_are_a_permanent_auth_failure(sshd: Sshd, tmp_path: Path) -> None:
    stranger = keygen(tmp_path / "stranger")
    with pytest.raises(AuthFailed) as caught:
        connect(
            pinned(sshd), Credentials(username=sshd.user, private_key=stranger.read_text()), timeouts=FAST
        )
    assert not caught.value.transient


def test_compute_nodes_are_reached_through_the_login_node_as_a_jump_host(
    sshd_factory: Callable[..., Sshd], user_key: Path
) -> None:
    login = sshd_factory()
    node = sshd_factory()
    with SshPool(credentials=creds(user_key, login.user), timeouts=FAST) as pool:
        login_ep = pinned(login)
        node_ep = pinned(node, jump=login_ep)
        result = pool.connection(node_ep).run(Command("echo from-node"), timeout_s=10)
        again = pool.connection(pinned(node, jump=login_ep)).run(Command("true"), timeout_s=10)
        assert pool.connects == 2  # the login node once, the compute node once
    assert result.stdout == "from-node\n" and again.ok
    # The login sshd opened the forwarded TCP connection to the node on our behalf.
    assert f"connected to 127.0.0.1 port {node.port}" in login.log_text()


def test_a_changed_host_key_behind_the_jump_host_is_refused_too(
    sshd_factory: Callable[..., Sshd], user_key: Path
) -> None:
    login = sshd_factory()
    node = sshd_factory()
    bad = Endpoint(
        host=node.host,
        port=node.port,
        host_keys=(HostKey("ssh-ed25519", login.host_key_fingerprint),),
        jump=pinned(login),
    )
    with (
        SshPool(credentials=creds(user_key, login.user), timeouts=FAST) as pool,
        pytest.raises(HostKeyChanged),
    ):
        pool.connection(bad)
    assert auth_requests(node) == 0


def test_files_go_up_and_come_back_over_sftp(sshd: Sshd, user_key: Path, tmp_path: Path) -> None:
    payload = os.urandom(300_000)
    remote = tmp_path / "remote" / "helper.bin"
    remote.parent.mkdir()
    with SshPool(credentials=creds(user_key, sshd.user), timeouts=FAST) as pool:
        conn = pool.connection(pinned(sshd))
        assert conn.put(payload, str(remote), mode=0o700) == len(payload)
        back, truncated = conn.get(str(remote), max_bytes=1_000_000)
        head, cut = conn.get(str(remote), max_bytes=1000)
    assert remote.read_bytes() == payload and remote.stat().st_mode & 0o777 == 0o700
    assert back == payload and not truncated
    assert head == payload[:1000] and cut


def test_the_pool_tries_a_timed_out_handshake_once_more_and_no_more(user_key: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(4)
    accepted: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            for _ in range(3):
                accepted.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    endpoint = Endpoint(
        host="127.0.0.1", port=listener.getsockname()[1], host_keys=(HostKey("ssh-ed25519", "SHA256:x"),)
    )
    pool = SshPool(
        credentials=Credentials(username="nobody", private_key=user_key.read_text()),
        timeouts=Timeouts(connect_s=2, banner_s=1, handshake_s=1),
    )
    started = time.monotonic()
    try:
        with pytest.raises(HandshakeFailed) as caught:
            pool.connection(endpoint)
    finally:
        listener.close()
        thread.join(timeout=15)
        for s in accepted:
            s.close()
    assert "banner" in str(caught.value) and caught.value.transient
    assert len(accepted) == 2 and pool.handshake_retries == 1 and pool.connects == 0  # two tries, no third
    assert time.monotonic() - started < 9
