"""Red-team mutations: flaws a careless operator leaves behind that no profile knob makes.

Each :class:`Mutation` is applied by root to a running (``exemplary``) testbed after ``up`` and
reverted afterwards; it names the catalog probe that must catch it, the outcome expected, and a
``marker`` (text the probe's evidence must show, so a grouped run proves *this* flaw was seen and
not a neighbour). ``manage.py probe_matrix --red-team`` and ``tests/integration/test_red_team.py``
apply them, run the probes and count the catches.

    python -m testbed redteam --list
    python -m testbed redteam NAME MUTATION          # apply
    python -m testbed redteam NAME MUTATION --revert

Files outside the testbed directory are named after the testbed (``/srv/opgtb-NAME-...``,
``/var/log/opgtb-NAME-...``, ``/var/mail/NAME-tenant-b``) and only ever name this testbed's
tenants, so probes of other testbeds on the machine are unaffected; listeners live in this
testbed's controller namespace (``down`` kills them too). A plain Python module: no Django.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import pwd
import shutil
import signal
import stat
import struct
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from testbed import api, configs
from testbed.errors import TestbedError


@dataclass(frozen=True)
class Ctx:
    """What a mutation needs about its testbed."""

    name: str
    root: Path
    ctl_addr: str
    ctl_netns: str
    subnet_prefix: str  # "10.200.66."
    victim: str  # tenant B's Linux user
    observer: str  # tenant A's
    victim_home: Path
    victim_log_dir: Path


@dataclass(frozen=True)
class Mutation:
    name: str
    probe: str  # the catalog probe that must catch it
    description: str
    apply: Callable[[Ctx], None] = field(repr=False)
    revert: Callable[[Ctx], None] = field(repr=False)
    marker: Callable[[Ctx], str] | None = field(default=None, repr=False)  # must appear in the evidence
    group: str = ""  # mutations of one group are applied together and judged by their markers
    expect: str = "fail"
    critical: bool = True


def context(name: str) -> Ctx:
    info = api.info(name)
    root = Path(info.slurm_conf).parents[1]
    a, b = info.tenant("a"), info.tenant("b")
    return Ctx(
        name=name,
        root=root,
        ctl_addr=info.controller_addr,
        ctl_netns=f"opgtb-{name}-ctl",
        subnet_prefix=info.controller_addr.rsplit(".", 1)[0] + ".",
        victim=b.user,
        observer=a.user,
        victim_home=Path(b.home),
        victim_log_dir=Path(info.log_dir) / b.user,
    )


# -- helpers --------------------------------------------------------------------------------------


def _write(path: Path, data: str | bytes, *, mode: int = 0o644, owner: str | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    os.chmod(path, mode)
    if owner:
        pw = pwd.getpwnam(owner)
        os.chown(path, pw.pw_uid, pw.pw_gid)


def _rm(*paths: Path) -> None:
    for path in paths:
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)
        elif path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _pidfile(c: Ctx, key: str) -> Path:
    return c.root / "redteam" / f"{key}.pid"


def _listen(c: Ctx, key: str, argv: list[str]) -> None:
    """Start ``argv`` (socat) in the controller's network namespace; its pid is kept for revert."""
    _pidfile(c, key).parent.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        ["nsenter", f"--net=/run/netns/{c.ctl_netns}", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _pidfile(c, key).write_text(str(proc.pid))


_READY_PROBE = (
    "import socket, sys\n"
    "kind, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
    "if kind == 'tcp':\n"
    "    socket.create_connection((addr, port), timeout=1).close()\n"
    "else:\n"
    "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "    s.settimeout(1)\n"
    "    s.connect((addr, port))\n"
    "    s.send(b'ping')\n"
    "    s.recv(64)\n"
)


def _wait_ready(c: Ctx, kind: str, addr: str, port: int, *, within_s: float = 15.0) -> None:
    """Return once the listener answers inside the controller's namespace (bounded), so a probe run
    never starts before the flaw is live: CI's loaded machine once scanned before a responder bound."""
    deadline = time.monotonic() + within_s
    while True:
        done = subprocess.run(
            ["nsenter", f"--net=/run/netns/{c.ctl_netns}", "python3", "-c", _READY_PROBE, kind, addr, str(port)],
            capture_output=True,
            timeout=10,
            check=False,
        )
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise TestbedError(f"the red-team listener {kind} {addr}:{port} did not answer within {within_s:.0f} s")
        time.sleep(0.2)


def _unlisten(c: Ctx, key: str) -> None:
    pidfile = _pidfile(c, key)
    if pidfile.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.killpg(int(pidfile.read_text()), signal.SIGKILL)
        pidfile.unlink()


def _acl(entries: list[tuple[int, int, int]]) -> bytes:
    """A ``system.posix_acl_access`` value: version 2, then (tag, perm, id) entries."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in entries)


USER_OBJ, USER, GROUP_OBJ, MASK, OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
NO_ID = 0xFFFFFFFF


def _grant(path: Path, user: str, perm: int) -> None:
    """An ACL entry giving ``user`` ``perm`` (4 read, 1 execute) on ``path``, owner keeps rwx/rw."""
    owner = 7 if path.is_dir() else 6
    uid = pwd.getpwnam(user).pw_uid
    entries = [
        (USER_OBJ, owner, NO_ID),
        (USER, perm, uid),
        (GROUP_OBJ, 0, NO_ID),
        (MASK, perm, NO_ID),
        (OTHER, 0, NO_ID),
    ]
    os.setxattr(path, "system.posix_acl_access", _acl(entries))


def _ungrant(path: Path, mode: int) -> None:
    with contextlib.suppress(OSError):
        os.removexattr(path, "system.posix_acl_access")
    with contextlib.suppress(OSError):
        os.chmod(path, mode)


def _slurm(argv: list[str], c: Ctx) -> str:
    env = {**os.environ, "SLURM_CONF": str(c.root / "slurm" / "slurm.conf")}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=20, env=env, check=False)
    return proc.stdout if proc.returncode == 0 else ""


def _b_log_lines(c: Ctx) -> str:
    live = c.victim_log_dir / "messages.log"
    text = live.read_text(errors="replace") if live.exists() else ""
    return (
        text
        + f"2026-11-30T23:59:01 node1 {c.victim}: epoch 12 loss 0.314 checkpoint /scratch/{c.victim}/ckpt-12\n"
    )


# -- the mutations --------------------------------------------------------------------------------


def _rotated_gz(c: Ctx) -> Path:
    return c.root / "logs" / "rotated" / "messages.log.1.gz"


def _jobcomp_copy(c: Ctx) -> Path:
    return c.root / "logs" / "jobcomp.txt.1"


def _old_dir(c: Ctx) -> Path:
    return Path(f"/var/log/opgtb-{c.name}-old")


def _spool_script(c: Ctx) -> Path:
    return c.root / "slurm" / "spool" / "job-leftover.sh"


def _backup(c: Ctx) -> Path:
    return Path(f"/srv/opgtb-{c.name}-backup")


def _scratch(c: Ctx) -> Path:
    return Path(f"/srv/opgtb-{c.name}-scratch")


def _hidden(c: Ctx) -> Path:
    return Path(f"/var/opt/opgtb-{c.name}-exports")


def _links(c: Ctx) -> Path:
    return Path(f"/var/log/opgtb-{c.name}-links")


def _access_log(c: Ctx) -> Path:
    return c.root / "logs" / "daemons" / "nginx-access.log"  # where exemplary keeps it (private)


def _access_alias(c: Ctx) -> Path:
    return c.root / "logs" / "nginx-access.log.1"


def _mail(c: Ctx) -> Path:
    return Path("/var/mail") / c.victim


def _apply_rotated_gz(c: Ctx) -> None:
    _write(_rotated_gz(c), gzip.compress(_b_log_lines(c).encode()))
    os.chmod(_rotated_gz(c).parent, 0o755)  # noqa: S103 - the flaw under test


def _apply_jobcomp_copy(c: Ctx) -> None:
    live = c.root / "slurm" / "jobcomp" / "jobcomp.txt"
    text = live.read_text(errors="replace") if live.exists() else ""
    uid = pwd.getpwnam(c.victim).pw_uid
    text += f"JobId=9001 UserId={c.victim}({uid}) GroupId={c.victim}({uid}) Name=finetune JobState=COMPLETED Partition=gpu NodeList=node1\n"
    _write(_jobcomp_copy(c), text)


def _apply_old_accounting(c: Ctx) -> None:
    dump = _slurm(["sacctmgr", "-n", "-P", "show", "assoc", "format=cluster,account,user"], c)
    if c.victim not in dump:
        dump += f"{c.name}|tenant-b|{c.victim}\n"
    _write(_old_dir(c) / "sacct-assoc-2026-11.txt", dump)


def _apply_spool_script(c: Ctx) -> None:
    script = f"#!/bin/bash\n#SBATCH -J finetune\n#SBATCH -A tenant-b\npython train.py --data /data/{c.victim}/corpus --wandb-key=...\n"
    _write(_spool_script(c), script, owner=c.victim)


def _apply_backup(c: Ctx) -> None:
    dest = _backup(c) / "home" / c.victim
    _rm(_backup(c))
    shutil.copytree(c.victim_home, dest, symlinks=True)
    for base, _dirs, files in os.walk(_backup(c)):
        os.chmod(base, 0o755)  # noqa: S103 - the flaw under test
        for f in files:
            os.chmod(Path(base) / f, 0o644)


def _apply_scratch(c: Ctx) -> None:
    _scratch(c).mkdir(parents=True, exist_ok=True)
    os.chmod(_scratch(c), 0o777)  # noqa: S103 - the flaw under test


def _apply_symlink(c: Ctx) -> None:
    target = _hidden(c) / "results.csv"
    _write(target, f"owner,run,accuracy\n{c.victim},run-17,0.912\n", owner=c.victim)
    os.chmod(_hidden(c), 0o755)  # noqa: S103 - the flaw under test
    _links(c).mkdir(parents=True, exist_ok=True)
    link = _links(c) / "results.csv"
    link.unlink(missing_ok=True)
    link.symlink_to(target)


def _apply_access_alias(c: Ctx) -> None:
    live = _access_log(c)
    (c.root / "redteam").mkdir(exist_ok=True)
    (c.root / "redteam" / "access-log.mode").write_text(oct(live.stat().st_mode & 0o777))
    _access_alias(c).unlink(missing_ok=True)
    os.link(live, _access_alias(c))
    os.chmod(live, 0o644)


def _revert_access_alias(c: Ctx) -> None:
    _access_alias(c).unlink(missing_ok=True)
    saved = c.root / "redteam" / "access-log.mode"
    if saved.exists() and _access_log(c).exists():
        os.chmod(_access_log(c), int(saved.read_text(), 8))
        saved.unlink()


def _apply_mail(c: Ctx) -> None:
    body = (
        f"From slurm@ctl\nTo: {c.victim}\nSubject: Slurm Job_id=42 Name=finetune Ended, Run time 01:02:03\n\n"
    )
    _write(_mail(c), body, owner=c.victim)


def _apply_home_group(c: Ctx) -> None:
    subprocess.run(["gpasswd", "-a", c.observer, c.victim], check=True, capture_output=True)
    os.chmod(c.victim_home, 0o750)  # noqa: S103 - the flaw under test


def _revert_home_group(c: Ctx) -> None:
    subprocess.run(["gpasswd", "-d", c.observer, c.victim], check=False, capture_output=True)
    os.chmod(c.victim_home, 0o700)


def _apply_log_acl(c: Ctx) -> None:
    _grant(c.victim_log_dir, c.observer, 5)
    for f in c.victim_log_dir.iterdir():
        _grant(f, c.observer, 4)


def _revert_log_acl(c: Ctx) -> None:
    _ungrant(c.victim_log_dir, 0o700)
    for f in c.victim_log_dir.iterdir():
        _ungrant(f, 0o600)


def _forward(port: int, to: int) -> Callable[[Ctx], None]:
    def apply(c: Ctx) -> None:
        _listen(
            c,
            f"tcp{port}",
            ["socat", f"TCP-LISTEN:{port},bind={c.ctl_addr},fork,reuseaddr", f"TCP:127.0.0.1:{to}"],
        )

    return apply


def _unlisten_key(key: str) -> Callable[[Ctx], None]:
    return lambda c: _unlisten(c, key)


def _apply_udp(c: Ctx) -> None:
    _listen(c, "udp161", ["socat", "-u", f"UDP-RECV:161,bind={c.ctl_addr}", "/dev/null"])


def _apply_restd(c: Ctx) -> None:
    _listen(
        c,
        "tcp6820",
        ["socat", f"TCP-LISTEN:6820,bind={c.ctl_addr},fork,reuseaddr", "SYSTEM:echo HTTP/1.0 200 OK"],
    )


def _bmc_addr(c: Ctx) -> str:
    return f"{c.subnet_prefix}250"


def _apply_bmc(c: Ctx) -> None:
    subprocess.run(
        ["ip", "-n", c.ctl_netns, "addr", "add", f"{_bmc_addr(c)}/24", "dev", "eth0"],
        check=False,
        capture_output=True,
    )
    _listen(
        c,
        "bmc623",
        ["socat", f"TCP-LISTEN:623,bind={_bmc_addr(c)},fork,reuseaddr", "SYSTEM:echo BMC-SIM IPMI-over-LAN"],
    )
    _wait_ready(c, "tcp", _bmc_addr(c), 623)


def _revert_bmc(c: Ctx) -> None:
    _unlisten(c, "bmc623")
    subprocess.run(
        ["ip", "-n", c.ctl_netns, "addr", "del", f"{_bmc_addr(c)}/24", "dev", "eth0"],
        check=False,
        capture_output=True,
    )


def _ipmi_addr(c: Ctx) -> str:
    return f"{c.subnet_prefix}251"


def _apply_ipmi_udp(c: Ctx) -> None:
    subprocess.run(
        ["ip", "-n", c.ctl_netns, "addr", "add", f"{_ipmi_addr(c)}/24", "dev", "eth0"],
        check=False,
        capture_output=True,
    )
    # one process answering every datagram (socat's UDP fork mode drops concurrent ones)
    responder = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "s.bind((sys.argv[1], 623))\n"
        "while True:\n"
        "    _, peer = s.recvfrom(512)\n"
        "    s.sendto(b'RMCP-pong', peer)\n"
    )
    _listen(c, "ipmi623", ["python3", "-c", responder, _ipmi_addr(c)])
    _wait_ready(c, "udp", _ipmi_addr(c), 623)


def _revert_ipmi_udp(c: Ctx) -> None:
    _unlisten(c, "ipmi623")
    subprocess.run(
        ["ip", "-n", c.ctl_netns, "addr", "del", f"{_ipmi_addr(c)}/24", "dev", "eth0"],
        check=False,
        capture_output=True,
    )


# -- the host's own secrets and what root runs (host_privilege_surface) ----------------------------


def _munge_key(c: Ctx) -> Path:
    return c.root / "munge-etc" / "munge.key"  # the testbed's own munge key (munged --key-file)


def _host_key(c: Ctx) -> Path:
    return c.root / "ssh" / "host_login"  # the login node's SSH host private key (sshd -o HostKey=)


def _host_key_copy(c: Ctx) -> Path:
    # sshd refuses a group- or world-readable host key (the login would stop answering), so the
    # careless operator's way to expose it is a readable copy: a config-management backup
    return c.root / "config-backup" / "ssh" / "ssh_host_ed25519_key"


def _suid_bash(c: Ctx) -> Path:
    # not /usr/local: the testbed's nodes mount a private tmpfs there (agent.base.HOST_ONLY)
    return Path(f"/opt/opgtb-{c.name}/bin/bash")


def _epilog(c: Ctx) -> Path:
    return c.root / "bin" / "epilog.sh"


def _cron_file(c: Ctx) -> Path:
    return Path(f"/etc/cron.d/opgtb-{c.name}-cleanup")


def _cron_job(c: Ctx) -> Path:
    return Path(f"/etc/cron.d/opgtb-{c.name}-rotate")


def _cron_script(c: Ctx) -> Path:
    return Path(f"/srv/opgtb-{c.name}-rotate.sh")


def _apply_cron_script(c: Ctx) -> None:
    _write(_cron_script(c), f"#!/bin/sh\n# log rotation of testbed {c.name} (red team)\nexit 0\n")
    os.chmod(_cron_script(c), 0o777)  # noqa: S103 - the flaw under test
    # a root-owned 0644 cron file, as it should be; February 31st never comes, so cron never runs it
    _write(_cron_job(c), f"0 0 31 2 * root {_cron_script(c)}\n")


def _dbd_conf(c: Ctx) -> Path:
    return c.root / "slurm" / "slurmdbd.conf"


def _docker_sock(c: Ctx) -> Path:
    return Path(f"/run/opgtb-{c.name}/docker.sock")


def _tools_dir(c: Ctx) -> Path:
    return Path(f"/srv/opgtb-{c.name}-tools")


def _healthcheck(c: Ctx) -> Path:
    return c.root / "bin" / "healthcheck.sh"


def _kmsg(c: Ctx) -> Path:
    return Path(f"/dev/opgtb-{c.name}-kmsg")


def _saved(c: Ctx, key: str) -> Path:
    return c.root / "redteam" / f"{key}.saved"


def _apply_modes(*changes: tuple[Callable[[Ctx], Path], int]) -> Callable[[Ctx], None]:
    """chmod each path, remembering its mode for the revert."""

    def apply(c: Ctx) -> None:
        (c.root / "redteam").mkdir(exist_ok=True)
        for where, mode in changes:
            path = where(c)
            saved = _saved(c, path.name + ("-dir" if path.is_dir() else ""))
            if not saved.exists():
                saved.write_text(oct(path.stat().st_mode & 0o7777))
            os.chmod(path, mode)

    return apply


def _revert_modes(*changes: tuple[Callable[[Ctx], Path], int]) -> Callable[[Ctx], None]:
    def revert(c: Ctx) -> None:
        for where, _mode in changes:
            path = where(c)
            saved = _saved(c, path.name + ("-dir" if path.is_dir() else ""))
            if saved.exists() and path.exists():
                os.chmod(path, int(saved.read_text(), 8))
                saved.unlink()

    return revert


_MUNGE_OPEN = ((lambda c: _munge_key(c).parent, 0o755), (_munge_key, 0o644))


def _apply_host_key_copy(c: Ctx) -> None:
    _write(_host_key_copy(c), _host_key(c).read_bytes(), mode=0o644)
    for d in (_host_key_copy(c).parent, _host_key_copy(c).parent.parent):
        os.chmod(d, 0o755)  # noqa: S103 - the flaw under test


def _apply_suid_bash(c: Ctx) -> None:
    _suid_bash(c).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2("/bin/bash", _suid_bash(c))
    os.chmod(_suid_bash(c), 0o4755)  # noqa: S103 - the flaw under test


def _reconfigure(c: Ctx) -> None:
    env = {**os.environ, "SLURM_CONF": str(c.root / "slurm" / "slurm.conf")}
    subprocess.run(["scontrol", "reconfigure"], env=env, capture_output=True, timeout=30, check=False)


def _apply_epilog(c: Ctx) -> None:
    _write(
        _epilog(c),
        f"#!/bin/sh\n# Epilog of testbed {c.name} (red team): cleans the job's scratch\nexit 0\n",
        mode=0o777,
    )
    os.chmod(_epilog(c), 0o777)  # noqa: S103 - the flaw under test (umask would drop the w bits)
    conf = c.root / "slurm" / "slurm.conf"
    text = conf.read_text()
    if f"Epilog={_epilog(c)}" not in text:
        conf.write_text(text + f"Epilog={_epilog(c)}\n")
    _reconfigure(c)


def _revert_epilog(c: Ctx) -> None:
    conf = c.root / "slurm" / "slurm.conf"
    line = f"Epilog={_epilog(c)}\n"
    if line in conf.read_text():
        conf.write_text(conf.read_text().replace(line, ""))
        _reconfigure(c)
    _rm(_epilog(c))


def _apply_cron(c: Ctx) -> None:
    _write(_cron_file(c), f"# cleanup of testbed {c.name} (red team; no job is scheduled)\n")
    os.chmod(_cron_file(c), 0o666)  # noqa: S103 - the flaw under test


def _apply_docker_sock(c: Ctx) -> None:
    _docker_sock(c).parent.mkdir(parents=True, exist_ok=True)
    os.chmod(_docker_sock(c).parent, 0o755)  # noqa: S103 - like /run
    server = (
        "import os, socket, sys, time\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(8)\n"
        "while True:\n"
        "    conn, _ = s.accept(); conn.close()\n"
    )
    _listen(c, "dockersock", ["python3", "-c", server, str(_docker_sock(c))])
    for _ in range(50):
        if _docker_sock(c).exists():
            break
        time.sleep(0.1)


def _revert_docker_sock(c: Ctx) -> None:
    _unlisten(c, "dockersock")
    _rm(_docker_sock(c).parent)


def _apply_tools_path(c: Ctx) -> None:
    _tools_dir(c).mkdir(parents=True, exist_ok=True)
    os.chmod(_tools_dir(c), 0o777)  # noqa: S103 - the flaw under test
    script = _healthcheck(c)
    saved = _saved(c, "healthcheck.sh")
    saved.parent.mkdir(exist_ok=True)
    if not saved.exists():
        saved.write_text(script.read_text())
    lines = saved.read_text().splitlines(keepends=True)
    lines.insert(1, f"PATH={_tools_dir(c)}:/usr/sbin:/usr/bin:/sbin:/bin; export PATH  # site tools first\n")
    script.write_text("".join(lines))


def _revert_tools_path(c: Ctx) -> None:
    saved = _saved(c, "healthcheck.sh")
    if saved.exists():
        _healthcheck(c).write_text(saved.read_text())
        saved.unlink()
    _rm(_tools_dir(c))


def _apply_kmsg(c: Ctx) -> None:
    _kmsg(c).unlink(missing_ok=True)
    os.mknod(_kmsg(c), 0o666 | stat.S_IFCHR, os.makedev(1, 11))  # /dev/kmsg: forge kernel log lines
    os.chmod(_kmsg(c), 0o666)  # noqa: S103 - the flaw under test


# -- the metrics proxy (tenant_metric_isolation) ------------------------------------------------


def _nginx_conf(c: Ctx) -> Path:
    return c.root / "nginx" / "nginx.conf"


def _nginx_live(c: Ctx, key: str) -> bool:
    """Whether nginx serves the running config with ``key``'s block (its unauthenticated marker path)."""
    try:
        with urllib.request.urlopen(f"http://{c.ctl_addr}:{configs.NGINX_PORT}/opgrade-redteam/{key}", timeout=2) as r:
            return r.status == 200 and r.read().decode().strip() == key
    except (OSError, urllib.error.URLError):
        return False


def _nginx_reload(c: Ctx, key: str, *, want: bool, within_s: float = 15.0) -> None:
    pid = int((c.root / "run" / "nginx.pid").read_text().strip())
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + within_s
    while _nginx_live(c, key) != want:
        if time.monotonic() > deadline:
            raise TestbedError(f"nginx did not {'load' if want else 'drop'} the red-team block {key} within {within_s:.0f} s")
        time.sleep(0.2)


def _nginx_route(key: str, location: str, upstream: Callable[[Ctx], str]) -> tuple[Callable[[Ctx], None], Callable[[Ctx], None]]:
    """A route an operator added to the tenants' metrics proxy, sending ``location`` (exact match) to
    ``upstream`` for every tenant, with a marker path that shows when nginx runs it."""
    begin, end = f"        # red-team {key} begin\n", f"        # red-team {key} end\n"

    def apply(c: Ctx) -> None:
        conf = _nginx_conf(c).read_text()
        if begin in conf:
            return
        block = (
            f"{begin}"
            f"        location = /opgrade-redteam/{key} {{ auth_basic off; return 200 \"{key}\\n\"; }}\n"
            f"        location = {location} {{ proxy_pass http://{upstream(c)}; }}\n"
            f"{end}"
        )
        anchor = "        location /prometheus/ {"
        _nginx_conf(c).write_text(conf.replace(anchor, block + anchor, 1))
        _nginx_reload(c, key, want=True)

    def revert(c: Ctx) -> None:
        conf = _nginx_conf(c).read_text()
        if begin not in conf:
            return
        head, rest = conf.split(begin, 1)
        _nginx_conf(c).write_text(head + rest.split(end, 1)[1])
        _nginx_reload(c, key, want=False)

    return apply, revert


_QUERY_RANGE = _nginx_route(
    "query-range",
    "/prometheus/api/v1/query_range",
    lambda c: f"127.0.0.1:{configs.prom_port(1)}/api/v1/query_range",
)
_PUSH_PAGE = _nginx_route(
    "push-page", "/pushgateway/metrics", lambda c: f"127.0.0.1:{configs.push_port(1)}/metrics"
)


FILES, NET = "files", "net"
EXPOSURE, LISTENERS = "tenant_data_exposure", "provider_listeners"
PRIVILEGE, HOST = "host_privilege_surface", "host"

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "rotated_log_gz_readable",
        EXPOSURE,
        "a rotated, gzipped copy of tenant B's syslog file left world-readable in the log directory",
        _apply_rotated_gz,
        lambda c: _rm(_rotated_gz(c).parent),
        lambda c: str(_rotated_gz(c)),
        FILES,
    ),
    Mutation(
        "jobcomp_copy_readable",
        EXPOSURE,
        "a world-readable copy of Slurm's job completion log (every user's jobs) next to the live one",
        _apply_jobcomp_copy,
        lambda c: _rm(_jobcomp_copy(c)),
        lambda c: str(_jobcomp_copy(c)),
        FILES,
    ),
    Mutation(
        "accounting_dump_in_old_logs",
        EXPOSURE,
        "an old accounting dump (sacctmgr associations: accounts and users) in /var/log/<old>",
        _apply_old_accounting,
        lambda c: _rm(_old_dir(c)),
        lambda c: str(_old_dir(c)),
        FILES,
    ),
    Mutation(
        "job_script_left_in_spool",
        EXPOSURE,
        "tenant B's job script left readable in the slurmd spool directory",
        _apply_spool_script,
        lambda c: _rm(_spool_script(c)),
        lambda c: str(_spool_script(c)),
        FILES,
    ),
    Mutation(
        "home_backup_in_srv",
        EXPOSURE,
        "a copy of tenant B's home in /srv made readable by everyone (rsync -a + chmod -R a+rX)",
        _apply_backup,
        lambda c: _rm(_backup(c)),
        lambda c: str(_backup(c)),
        FILES,
    ),
    Mutation(
        "world_writable_shared_dir",
        EXPOSURE,
        "a world-writable shared scratch directory without the sticky bit or per-tenant subdirectories",
        _apply_scratch,
        lambda c: _rm(_scratch(c)),
        lambda c: str(_scratch(c)),
        FILES,
    ),
    Mutation(
        "symlink_to_exported_results",
        EXPOSURE,
        "a symlink in a log directory to tenant B's results exported outside every scanned location",
        _apply_symlink,
        lambda c: _rm(_links(c), _hidden(c)),
        lambda c: str(_links(c) / "results.csv"),
        FILES,
    ),
    Mutation(
        "access_log_hardlink_readable",
        EXPOSURE,
        "a hard link to the private nginx access log (every request URL and login) made world-readable",
        _apply_access_alias,
        _revert_access_alias,
        lambda c: str(_access_alias(c)),
        FILES,
    ),
    Mutation(
        "prometheus_data_readable",
        EXPOSURE,
        "the Prometheus directory (per-tenant TSDBs and configurations) opened to everyone (chmod 755)",
        lambda c: os.chmod(c.root / "prometheus", 0o755),  # noqa: S103 - the flaw under test
        lambda c: os.chmod(c.root / "prometheus", 0o700),
        lambda c: str(c.root / "prometheus" / f"{c.victim}.yml"),
        FILES,
    ),
    Mutation(
        "mail_spool_readable",
        EXPOSURE,
        "tenant B's mail spool (Slurm job notifications) world-readable",
        _apply_mail,
        lambda c: _rm(_mail(c)),
        lambda c: str(_mail(c)),
        FILES,
    ),
    Mutation(
        "home_acl_for_other_tenant",
        "home_isolation",
        "an ACL on tenant B's home granting tenant A r-x (mode still 0700)",
        lambda c: _grant(c.victim_home, c.observer, 5),
        lambda c: _ungrant(c.victim_home, 0o700),
        group="home-acl",
    ),
    Mutation(
        "home_group_with_other_tenant",
        "home_isolation",
        "tenant A added to tenant B's group and B's home made 0750",
        _apply_home_group,
        _revert_home_group,
        group="home-group",
    ),
    Mutation(
        "tenant_log_dir_acl",
        "tenant_log_isolation",
        "ACLs on tenant B's log directory and files granting tenant A read (modes still 0700/0600)",
        _apply_log_acl,
        _revert_log_acl,
        group="log-acl",
    ),
    Mutation(
        "metrics_query_range_to_one_tenant",
        "tenant_metric_isolation",
        "a dashboard route on the metrics proxy sends every tenant's query_range to tenant B's Prometheus",
        *_QUERY_RANGE,
        lambda c: '"path": "query_range nonce=~.+"',
    ),
    Mutation(
        "pushgateway_page_of_one_tenant",
        "tenant_metric_isolation",
        "a debugging route shows tenant B's Pushgateway status page (every pushed group) at every tenant's /pushgateway/metrics",
        *_PUSH_PAGE,
        lambda c: '"path": "pushgateway metrics page"',
    ),
    Mutation(
        "prometheus_port_without_auth",
        LISTENERS,
        "tenant B's Prometheus (query API, /federate) forwarded on the controller's :9090, no auth",
        _forward(9090, configs.prom_port(1)),
        _unlisten_key("tcp9090"),
        lambda c: f"{c.ctl_addr}:9090/tcp",
        NET,
    ),
    Mutation(
        "pushgateway_port_without_auth",
        LISTENERS,
        "tenant B's Pushgateway (metrics endpoint) on the controller's :9091, no auth",
        _forward(9091, configs.push_port(1)),
        _unlisten_key("tcp9091"),
        lambda c: f"{c.ctl_addr}:9091/tcp",
        NET,
    ),
    Mutation(
        "udp_listener_on_controller",
        LISTENERS,
        "a silent UDP service (SNMP port 161) on the controller",
        _apply_udp,
        _unlisten_key("udp161"),
        lambda c: f"{c.ctl_addr}:161/udp",
        NET,
    ),
    Mutation(
        "rest_api_on_controller",
        LISTENERS,
        "an unauthenticated HTTP service on slurmrestd's port 6820 of the controller",
        _apply_restd,
        _unlisten_key("tcp6820"),
        lambda c: f"{c.ctl_addr}:6820/tcp",
        NET,
    ),
    Mutation(
        "bmc_on_another_address",
        "bmc_reachable",
        "a BMC-like IPMI listener on another address of the cluster network (.250), not a node",
        _apply_bmc,
        _revert_bmc,
        lambda c: f"tcp {_bmc_addr(c)} 623 open",
        "bmc",
    ),
    Mutation(
        "ipmi_udp_on_another_address",
        "bmc_reachable",
        "an IPMI-over-LAN (UDP 623, answers RMCP pings) service on another address of the cluster network (.251)",
        _apply_ipmi_udp,
        _revert_ipmi_udp,
        lambda c: f"udp {_ipmi_addr(c)} 623 open",
        "bmc",
    ),
    Mutation(
        "munge_key_readable",
        PRIVILEGE,
        "the munge key (forges any user's Slurm credential) left 0644 in an opened directory",
        _apply_modes(*_MUNGE_OPEN),
        _revert_modes(*_MUNGE_OPEN),
        lambda c: str(_munge_key(c)),
        HOST,
    ),
    Mutation(
        "ssh_host_key_readable",
        PRIVILEGE,
        "a backup copy of the login node's SSH host private key left 0644 (impersonate the login node)",
        _apply_host_key_copy,
        lambda c: _rm(_host_key_copy(c).parent.parent),
        lambda c: str(_host_key_copy(c)),
        HOST,
    ),
    Mutation(
        "setuid_bash_in_opt",
        PRIVILEGE,
        "a setuid-root copy of bash left in a vendor tools directory (no package owns it): root for every tenant",
        _apply_suid_bash,
        lambda c: _rm(_suid_bash(c).parent.parent),
        lambda c: str(_suid_bash(c)),
        HOST,
    ),
    Mutation(
        "world_writable_epilog",
        PRIVILEGE,
        "an Epilog script that slurm.conf names (slurmd runs it as root after every job), mode 0777",
        _apply_epilog,
        _revert_epilog,
        lambda c: str(_epilog(c)),
        HOST,
    ),
    Mutation(
        "world_writable_cron_file",
        PRIVILEGE,
        "a world-writable file in /etc/cron.d (cron runs what it says, as the user it names)",
        _apply_cron,
        lambda c: _rm(_cron_file(c)),
        lambda c: str(_cron_file(c)),
        HOST,
    ),
    Mutation(
        "cron_job_runs_world_writable_script",
        PRIVILEGE,
        "a proper root cron job (0644) whose script is world-writable: root runs what any tenant writes",
        _apply_cron_script,
        lambda c: _rm(_cron_job(c), _cron_script(c)),
        lambda c: str(_cron_script(c)),
        HOST,
    ),
    Mutation(
        "slurmdbd_conf_readable",
        PRIVILEGE,
        "slurmdbd.conf (StoragePass: the accounting database) made world-readable",
        _apply_modes((_dbd_conf, 0o644)),
        _revert_modes((_dbd_conf, 0o644)),
        lambda c: str(_dbd_conf(c)),
        HOST,
    ),
    Mutation(
        "docker_socket_world_writable",
        PRIVILEGE,
        "a container runtime's control socket (docker.sock) 0666 and listening: root through the runtime",
        _apply_docker_sock,
        _revert_docker_sock,
        lambda c: str(_docker_sock(c)),
        HOST,
    ),
    Mutation(
        "writable_dir_first_in_slurmd_path",
        PRIVILEGE,
        "the HealthCheckProgram slurmd runs as root puts a world-writable directory first in its PATH",
        _apply_tools_path,
        _revert_tools_path,
        lambda c: str(_tools_dir(c)),
        HOST,
    ),
    Mutation(
        "world_writable_device_node",
        PRIVILEGE,
        "a kernel-log device node (/dev/kmsg's numbers) created 0666 under /dev",
        _apply_kmsg,
        lambda c: _kmsg(c).unlink(missing_ok=True),
        lambda c: str(_kmsg(c)),
        HOST,
    ),
)


def mutation_get(name: str) -> Mutation:
    for m in MUTATIONS:
        if m.name == name:
            return m
    raise TestbedError(f"unknown mutation {name!r} (python -m testbed redteam --list)")


def groups(mutations: tuple[Mutation, ...] = MUTATIONS) -> dict[str, list[Mutation]]:
    """Mutations by group (applied together, one probe run per group), in catalog order."""
    out: dict[str, list[Mutation]] = {}
    for m in mutations:
        out.setdefault(m.group or m.name, []).append(m)
    return out


def apply(name: str, mutation: str) -> None:
    mutation_get(mutation).apply(context(name))


def revert(name: str, mutation: str) -> None:
    mutation_get(mutation).revert(context(name))


@contextlib.contextmanager
def applied(name: str, mutations: list[Mutation]) -> Iterator[Ctx]:
    """Apply ``mutations`` to testbed ``name`` and revert every one of them afterwards."""
    c = context(name)
    done: list[Mutation] = []
    try:
        for m in mutations:
            done.append(m)
            m.apply(c)
        yield c
    finally:
        for m in reversed(done):
            with contextlib.suppress(Exception):
                m.revert(c)
