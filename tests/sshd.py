"""Real OpenSSH servers for tests and benchmarks: Debian's /usr/sbin/sshd on loopback high ports.

Each :class:`Sshd` is one sshd process with its own generated ed25519 host key, its own
authorized_keys file, a DEBUG1 log (so tests can read what the server saw, e.g. whether any
authentication request arrived) and up to 16 listening sockets (OpenSSH's own limit,
MAX_LISTEN_SOCKS). Benchmarks put many targets on one sshd by listening on several
127.0.0.x addresses and ports; each socket is a separate target to the client.

Processes are stopped by the pid we started, never by name. Runs as root (sshd needs it to switch
users); as another user sshd still works but can only log that same user in.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
SSH_KEYGEN = "ssh-keygen"
MAX_LISTEN_SOCKS = 16


def sshd_available() -> bool:
    return Path(SSHD).exists() and shutil.which(SSH_KEYGEN) is not None


def keygen(path: Path, *, key_type: str = "ed25519", comment: str = "opgrade-test") -> Path:
    """Generate an unencrypted key pair at ``path`` (+ ``.pub``) with OpenSSH's own ssh-keygen."""
    subprocess.run(
        [SSH_KEYGEN, "-q", "-t", key_type, "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        timeout=30,
    )
    return path


def fingerprint(pub_path: Path) -> str:
    """The SHA256 fingerprint ssh-keygen prints for a public key (the analyst's view)."""
    out = subprocess.run(
        [SSH_KEYGEN, "-l", "-E", "sha256", "-f", str(pub_path)],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    return out.split()[1]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class Sshd:
    """One running sshd. Use :func:`start_sshd`; call :meth:`stop` (fixtures do) when done."""

    directory: Path
    listen: list[tuple[str, int]]
    host_key: Path
    authorized_keys: Path
    log: Path
    process: subprocess.Popen[bytes]
    user: str = field(default_factory=getpass.getuser)

    @property
    def host(self) -> str:
        return self.listen[0][0]

    @property
    def port(self) -> int:
        return self.listen[0][1]

    @property
    def host_key_type(self) -> str:
        return self.host_key.with_suffix(".pub").read_text().split()[0]

    @property
    def host_key_fingerprint(self) -> str:
        return fingerprint(self.host_key.with_suffix(".pub"))

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def cpu_seconds(self) -> float:
        """CPU of the listener and its reaped per-connection children (utime+stime+cutime+cstime)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = sum(int(x) for x in fields[11:15])
        return ticks / os.sysconf("SC_CLK_TCK")


def start_sshd(
    directory: Path,
    *,
    authorized_public_keys: list[Path],
    listen: list[tuple[str, int]] | None = None,
    host_key: Path | None = None,
    log_level: str = "DEBUG1",
    password_auth: bool = False,
    extra_config: str = "",
    ready_timeout_s: float = 15.0,
) -> Sshd:
    """Start one sshd listening on ``listen`` (default: one free port on 127.0.0.1)."""
    if not sshd_available():
        raise RuntimeError(f"{SSHD} or ssh-keygen missing: run scripts/install-bench.sh")
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    listen = listen or [("127.0.0.1", free_port())]
    if len(listen) > MAX_LISTEN_SOCKS:
        raise ValueError(f"sshd listens on at most {MAX_LISTEN_SOCKS} sockets")
    if host_key is None:
        host_key = keygen(directory / "ssh_host_ed25519_key", comment="opgrade-test-host")
    authorized = directory / "authorized_keys"
    authorized.write_text("".join(p.read_text() for p in authorized_public_keys))
    authorized.chmod(0o600)
    log = directory / "sshd.log"
    listen_lines = "\n".join(f"ListenAddress {h}:{p}" for h, p in listen)
    config = directory / "sshd_config"
    config.write_text(
        f"""{listen_lines}
HostKey {host_key}
PidFile {directory}/sshd.pid
AuthorizedKeysFile {authorized}
PubkeyAuthentication yes
PasswordAuthentication {"yes" if password_auth else "no"}
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
AllowTcpForwarding yes
MaxStartups 1000
MaxSessions 64
LogLevel {log_level}
Subsystem sftp internal-sftp
{extra_config}
"""
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    subprocess.run([SSHD, "-t", "-f", str(config)], check=True, timeout=30)
    process = subprocess.Popen([SSHD, "-D", "-f", str(config), "-E", str(log)], stdin=subprocess.DEVNULL)
    server = Sshd(
        directory=directory,
        listen=listen,
        host_key=host_key,
        authorized_keys=authorized,
        log=log,
        process=process,
    )
    try:
        _wait_until_listening(server, ready_timeout_s)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_until_listening(server: Sshd, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    pending = list(server.listen)
    while pending and time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"sshd exited with {server.process.returncode}: {server.log_text()[-2000:]}")
        host, port = pending[0]
        try:
            with socket.create_connection((host, port), timeout=1) as s:
                if s.recv(8).startswith(b"SSH-"):
                    pending.pop(0)
                    continue
        except OSError:
            pass
        time.sleep(0.05)
    if pending:
        raise RuntimeError(f"sshd did not listen on {pending} within {timeout_s}s")
