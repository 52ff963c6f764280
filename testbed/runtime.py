"""Low-level host operations: commands, network namespaces, processes by pid.

Only the testbed's own objects are touched: links and namespaces it names (layout.py) and
processes whose pids it recorded or that live in its namespaces. Processes are identified
by pid plus their start time (field 22 of /proc/PID/stat) so a recycled pid is never
signalled. A zombie counts as gone: on machines whose init does not reap orphans, killed
daemons linger as zombies that hold no resources.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testbed.errors import TestbedError

CLONE_NEWNET = 0x40000000
REQUIRED = {
    # executable: Debian package
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "scontrol": "slurm-client",
    "sinfo": "slurm-client",
    "munged": "munge",
    "sshd": "openssh-server",
    "ssh-keygen": "openssh-client",
    "prometheus": "prometheus",
    "prometheus-node-exporter": "prometheus-node-exporter",
    "prometheus-pushgateway": "prometheus-pushgateway",
    "nginx": "nginx",
    "rsyslogd": "rsyslog",
    "ip": "iproute2",
    "nsenter": "util-linux",
    "unshare": "util-linux",
    "useradd": "passwd",
}
SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def preflight_root() -> None:
    if os.geteuid() != 0:
        raise TestbedError("the testbed must run as root (it creates network namespaces, users and daemons)")


MYSQL_SOCKET = "/run/mysqld/mysqld.sock"


def preflight(*, accounting: bool = False) -> None:
    """Raise a clear error unless we are root and every needed program is installed."""
    preflight_root()
    needed = dict(REQUIRED)
    if accounting:
        needed.update({"slurmdbd": "slurmdbd", "sacctmgr": "slurm-client", "mysql": "mariadb-client"})
    missing = sorted({pkg for exe, pkg in needed.items() if not which(exe)})
    if missing:
        raise TestbedError(
            "missing packages: " + " ".join(missing) + " (run scripts/install-testbed.sh as root)"
        )
    if accounting and not Path(MYSQL_SOCKET).exists():
        raise TestbedError(
            f"slurm.accounting needs MariaDB running ({MYSQL_SOCKET} is missing): run "
            "scripts/install-testbed.sh, or --set slurm.accounting=false"
        )
    if not Path("/proc/self/ns/net").exists():
        raise TestbedError("this kernel has no network namespaces")


def which(exe: str) -> str | None:
    return shutil.which(exe, path=SBIN_PATH)


def run(
    argv: Sequence[str],
    *,
    check: bool = True,
    timeout: float = 20,
    env: dict[str, str] | None = None,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a short command; raise TestbedError with its stderr when it fails and ``check``."""
    full_env = {**os.environ, "PATH": SBIN_PATH, **(env or {})}
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, env=full_env, input=input_text
        )
    except subprocess.TimeoutExpired as exc:
        raise TestbedError(f"timed out after {timeout}s: {' '.join(argv)}") from exc
    if check and proc.returncode != 0:
        raise TestbedError(f"failed ({proc.returncode}): {' '.join(argv)}: {proc.stderr.strip()[:500]}")
    return proc


# ---------------------------------------------------------------- links and namespaces


def links() -> set[str]:
    out = run(["ip", "-o", "link", "show"], check=False).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.add(parts[1].strip().split("@")[0])
    return names


def netns_list() -> set[str]:
    try:
        return set(os.listdir("/run/netns"))
    except FileNotFoundError:
        return set()


def bridge_create(bridge: str, addr: str) -> None:
    if bridge not in links():
        run(["ip", "link", "add", bridge, "type", "bridge"])
    run(["ip", "addr", "replace", f"{addr}/24", "dev", bridge])
    run(["ip", "link", "set", bridge, "up"])


def netns_attach(*, netns: str, veth: str, bridge: str, addr: str) -> None:
    """Create ``netns`` with an ``eth0`` at ``addr`` on ``bridge`` (host side ``veth``); no default route."""
    if netns not in netns_list():
        run(["ip", "netns", "add", netns])
    if veth not in links():
        run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns])
    run(["ip", "link", "set", veth, "master", bridge, "up"])
    batch = f"addr replace {addr}/24 dev eth0\nlink set eth0 up\nlink set lo up\n"
    run(["ip", "-n", netns, "-batch", "-"], input_text=batch)


def netns_remove(*, netns: str, veth: str | None) -> None:
    if veth and veth in links():
        run(["ip", "link", "del", veth], check=False)
    if netns in netns_list():
        run(["ip", "netns", "del", netns], check=False)


def link_delete(name: str) -> None:
    if name in links():
        run(["ip", "link", "del", name], check=False)


def link_set(name: str, up: bool) -> None:
    run(["ip", "link", "set", name, "up" if up else "down"])


def netns_inode(netns: str) -> int | None:
    try:
        return os.stat(f"/run/netns/{netns}").st_ino
    except OSError:
        return None


_libc = ctypes.CDLL(None, use_errno=True)
_setns_lock = threading.Lock()


def _setns(fd: int) -> None:
    if hasattr(os, "setns"):
        os.setns(fd, CLONE_NEWNET)
        return
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def in_netns[T](netns: str, fn: Callable[[], T]) -> T:
    """Call ``fn`` with this thread inside ``netns``; sockets it creates stay bound there."""
    with _setns_lock:
        home = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
        target = os.open(f"/run/netns/{netns}", os.O_RDONLY)
        try:
            _setns(target)
            try:
                return fn()
            finally:
                _setns(home)
        finally:
            os.close(target)
            os.close(home)


# ---------------------------------------------------------------- processes


def proc_start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def proc_alive(pid: int, start_time: int | None = None) -> bool:
    """True if ``pid`` runs (not a zombie) and, when given, started at ``start_time``."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    after = status.rsplit(")", 1)[1].split()
    if after[0] in ("Z", "X"):
        return False
    return start_time is None or int(after[19]) == start_time


def proc_record(pid: int, role: str) -> dict[str, Any]:
    return {"pid": pid, "start": proc_start_time(pid), "role": role}


def proc_signal(rec: dict[str, Any], sig: int) -> bool:
    if not proc_alive(rec["pid"], rec.get("start")):
        return False
    try:
        os.kill(rec["pid"], sig)
    except ProcessLookupError:
        return False
    return True


def procs_in(netns_inodes: set[int], path_marker: str) -> list[int]:
    """Pids living in one of ``netns_inodes`` or whose command line names ``path_marker``."""
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        try:
            if netns_inodes and os.stat(f"/proc/{pid}/ns/net").st_ino in netns_inodes:
                found.append(pid)
                continue
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if path_marker and path_marker in cmd:
            found.append(pid)
    return [p for p in found if proc_alive(p)]


def kill_all(pids: list[dict[str, Any]], *, timeout: float = 5.0) -> list[int]:
    """SIGKILL every live record in ``pids`` and wait; return the pids still alive."""
    for rec in pids:
        proc_signal(rec, signal.SIGCONT)
        proc_signal(rec, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    left = [r for r in pids if proc_alive(r["pid"], r.get("start"))]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [r for r in left if proc_alive(r["pid"], r.get("start"))]
    return [r["pid"] for r in left]


# the shared writable places a node's tenants see; private per node (and per user) with fs.private_tmp
PRIVATE_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108 - the places being made private


def wrap_in_node(
    *,
    netns: str | None,
    hostname: str | None,
    argv: Sequence[str],
    tmpfs: Sequence[str] = (),
    boot_kernels: Sequence[str] = (),
    private_tmp: str = "",
    binds: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """Command line that runs ``argv`` inside ``netns`` with its own hostname and mounts.

    Only the network namespace is entered (``nsenter --net``): ``ip netns exec`` would
    remount /sys and hide /sys/fs/cgroup, which slurmd needs. A fresh UTS namespace gives
    the hostname; a fresh, private mount namespace gets tmpfs mounts over ``tmpfs`` paths,
    over /boot (holding empty ``vmlinuz-<k>`` files for ``boot_kernels``) and over
    /lib/modules (a directory per kernel), which the host never sees. The final ``exec`` keeps the daemon's pid equal to the spawned pid.

    ``private_tmp`` (``fs.private_tmp``) mounts a fresh tmpfs (1777) over /tmp, /var/tmp and
    /dev/shm, each with a root-only ``.inst`` directory for pam_namespace's per-user instances
    (``"user"``, sshd); ``"job"`` (slurmd) makes them root's, so tenants' jobs write scratch
    data to their homes, never to a place another tenant's job shares;
    ``binds`` bind-mounts files (src, dst) over host paths, e.g. a PAM configuration. Either
    failing stops the daemon: it must never run on the host's shared /tmp or PAM stack by mistake.
    """
    if not netns:
        return list(argv)
    script = [f"hostname {shlex.quote(hostname)}"] if hostname else []
    for path in tmpfs:
        script.append(f"mount -t tmpfs -o size=1m,mode=755 opgtb {shlex.quote(path)}")
    # each file is written only if its tmpfs is mounted: a failed mount must never write to the host
    if boot_kernels and os.path.isdir("/boot"):
        files = " ".join(
            f": > /boot/vmlinuz-{shlex.quote(k)}; : > /boot/System.map-{shlex.quote(k)};"
            for k in boot_kernels
        )
        script.append(f"if mount -t tmpfs -o size=1m,mode=755 opgtb-boot /boot; then {files} fi")
    if boot_kernels and os.path.isdir("/lib/modules"):
        dirs = " ".join(f"mkdir /lib/modules/{shlex.quote(k)};" for k in boot_kernels)
        script.append(f"if mount -t tmpfs -o size=1m,mode=755 opgtb-modules /lib/modules; then {dirs} fi")
    for path in PRIVATE_TMP_DIRS if private_tmp else ():
        # under slurmd ("job") no temp dir is writable by tenants: jobs of two tenants on one node
        # would otherwise share it (Slurm 22.05's job_container/tmpfs, which gives each job its
        # own, raced under load here: "ns base mount failed", the job requeued and held)
        mode = "0755" if private_tmp == "job" else "1777"
        script.append(
            f"mount -t tmpfs -o size=64m,mode={mode} opgtb-tmp {path} && mkdir -m 000 {path}/.inst || exit 97"
        )
    for src, dst in binds:
        script.append(f"mount --bind {shlex.quote(src)} {shlex.quote(dst)} || exit 98")
    script.append('exec "$@"')
    unshare = ["unshare", "--uts"] + (["--mount"] if (tmpfs or boot_kernels or private_tmp or binds) else [])
    return ["nsenter", f"--net=/run/netns/{netns}", *unshare, "sh", "-c", "; ".join(script), "sh", *argv]


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)
