"""Private Redis and PostgreSQL servers that a fault test starts, stops and restarts at will.

Outage tests must never stop the shared 6379 / 5432 servers other tests use, so each one starts
its own: ``redis-server`` on a free loopback port, and a PostgreSQL cluster made with the
distribution's ``initdb`` in a temporary directory, run as the ``postgres`` user (PostgreSQL
refuses to run as root) on a free port. ``stop()`` is the outage: Redis saves its data set on
shutdown and loads it on start, as a service restart does, and PostgreSQL stops with
``pg_ctl -m fast`` (clients are disconnected) and starts on the same port and data.

Processes are ended by the pid we started, with time bounds everywhere; ``close()`` removes the
temporary directory.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.sshd import free_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _wait_port(port: int, *, up: bool, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.5)
            listening = s.connect_ex(("127.0.0.1", port)) == 0
        if listening == up:
            return
        time.sleep(0.1)
    raise TimeoutError(f"port {port} not {'up' if up else 'down'} within {timeout_s}s")


def _missing(what: str) -> RuntimeError:
    return RuntimeError(f"the fault tests need {what} (scripts/install-all.sh installs it)")


class PrivateRedis:
    """One redis-server of our own; ``url(db)`` for clients, ``stop()``/``start()`` for an outage."""

    def __init__(self) -> None:
        if not Path(REDIS_SERVER).exists():
            raise _missing("redis-server")
        self.dir = Path(tempfile.mkdtemp(prefix="opgrade-redis-"))
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        argv = [
            REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
            "--save", "3600 1", "--appendonly", "no", "--protected-mode", "yes", "--logfile", "redis.log",
        ]  # fmt: skip
        self.process = subprocess.Popen(argv, cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_port(self.port, up=True, timeout_s=15)

    def stop(self) -> None:
        """SIGTERM: Redis saves its data set and exits, as ``systemctl stop`` would have it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None
        _wait_port(self.port, up=False, timeout_s=5)

    def close(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class PrivatePostgres:
    """One PostgreSQL cluster of our own, in a temporary directory, run as ``postgres``."""

    def __init__(self, *, copy_of: PrivatePostgres | None = None) -> None:
        """A new cluster made by initdb, or a copy of ``copy_of``'s data (its databases already
        migrated, so a test gets a server of its own in a second instead of a minute)."""
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            raise _missing("PostgreSQL's initdb (/usr/lib/postgresql/*/bin/initdb)")
        self.bin = Path(found[-1]).parent
        try:
            self.user = pwd.getpwnam("postgres")
        except KeyError as exc:
            raise _missing("the postgres user") from exc
        self.dir = Path(tempfile.mkdtemp(prefix="opgrade-pg-"))
        self.data = self.dir / "data"
        self.socket_dir = self.dir / "sock"
        self.socket_dir.mkdir()
        os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        os.chown(self.socket_dir, self.user.pw_uid, self.user.pw_gid)
        self.port = free_port()
        if copy_of is not None:
            copy_of.stop()
            try:
                shutil.copytree(copy_of.data, self.data, symlinks=True)
            finally:
                copy_of.start()
            for path in [self.data, *self.data.rglob("*")]:
                os.lchown(path, self.user.pw_uid, self.user.pw_gid)
            (self.data / "postmaster.pid").unlink(missing_ok=True)
        else:
            self._as_postgres([
                str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                "--no-sync", "--no-instructions",
            ], timeout_s=120)  # fmt: skip
        with (self.data / "postgresql.conf").open("a") as conf:  # the last setting of a name wins
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.socket_dir}'\nfsync = off\nsynchronous_commit = off\n"
                "full_page_writes = off\nmax_connections = 60\nshared_buffers = 32MB\n"
            )
        self.start()

    def _as_postgres(self, argv: list[str], *, timeout_s: float) -> None:
        def demote() -> None:
            os.setgid(self.user.pw_gid)
            os.setuid(self.user.pw_uid)

        preexec = demote if os.geteuid() == 0 else None
        subprocess.run(argv, check=True, timeout=timeout_s, preexec_fn=preexec, cwd=self.dir,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin", "LANG": "C"})

    def url(self, name: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        self._as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "pg.log"),
                           "-w", "-t", "60", "start"], timeout_s=90)
        _wait_port(self.port, up=True, timeout_s=30)

    def stop(self) -> None:
        """``pg_ctl stop -m fast``: connected clients are cut off, as in a database restart."""
        if (self.data / "postmaster.pid").exists():
            self._as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "-t", "60",
                               "stop"], timeout_s=90)
        _wait_port(self.port, up=False, timeout_s=10)

    def postmaster_pid(self) -> int | None:
        pidfile = self.data / "postmaster.pid"
        try:
            return int(pidfile.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        try:
            self.stop()
        except (subprocess.SubprocessError, TimeoutError, OSError):
            pid = self.postmaster_pid()  # the one we started: end it by its pid
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
