"""Python API of the testbed: ``up``, ``down``, ``info``, ``status``, ``inject_fault``, ``provider_call``.

``up`` does the slow-changing preparation (tenant users and keys, config files, secrets,
the state file) and starts the agent (testbed/agent/), which builds the network and starts the
daemons; ``up`` returns when the agent reports every initial node idle in Slurm.
``down`` undoes everything from the state file, and also sweeps anything left in the
testbed's namespaces or naming its directory, so it works after a crash.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from testbed import configs, hostca, runtime, serving
from testbed.errors import TestbedError
from testbed.layout import (
    BASE_DIR,
    NETNS_PREFIX,
    TENANT_IDS,
    Layout,
    global_lock,
    name_validate,
    octet_allocate,
    state_lock,
    state_read,
    state_write,
    testbed_names,
)
from testbed.profiles import knob_differences, profile_resolve

UP_TIMEOUT_S = 60


@dataclass(frozen=True)
class Tenant:
    id: str
    user: str
    home: str
    private_key: str
    public_key: str
    http_user: str
    http_password: str


@dataclass(frozen=True)
class TestbedInfo:
    """Everything a client (Opgrade's probes, a test) needs to use a running testbed."""

    __test__ = False

    name: str
    profile: str
    overrides: list[str]
    phase: str
    subnet: str
    host_addr: str
    controller_addr: str
    login_addr: str
    ssh_port: int
    login_host_key: str
    api_url: str
    api_token: str
    metrics_url: str
    pushgateway_url: str
    logs_url: str
    syslog_addr: str
    slurm_conf: str
    jobcomp_log: str
    log_dir: str
    bmc_port: int
    tenants: list[Tenant]
    nodes: dict[str, dict[str, Any]]
    knobs: dict[str, Any] = field(default_factory=dict)
    # the testbed's SSH host CA (public key line): every compute node presents a host certificate
    # it signed, replacements included (testbed/hostca.py)
    host_ca_public_key: str = ""
    # the provider's OpenAI-compatible LLM endpoint (serving.enabled), "" when it runs none
    serving_url: str = ""

    def tenant(self, tenant_id: str) -> Tenant:
        return next(t for t in self.tenants if t.id == tenant_id)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------ up


def up(
    profile: str,
    *,
    name: str,
    nodes: int | None = None,
    overrides: dict[str, Any] | None = None,
    timeout: float = UP_TIMEOUT_S,
) -> TestbedInfo:
    """Bring testbed ``name`` up with ``profile`` (idempotent) and return its info."""
    name_validate(name)
    knobs = profile_resolve(profile=profile, overrides=overrides)
    if nodes is not None:
        knobs["nodes"]["count"] = int(nodes)
        if not 1 <= nodes <= knobs["nodes"]["pool_size"]:
            raise TestbedError(f"--nodes must be 1..{knobs['nodes']['pool_size']} (nodes.pool_size)")
    runtime.preflight(accounting=knobs["slurm"]["accounting"])
    if knobs["serving"]["enabled"]:
        serving.server_files()  # the built server and model, or a clear error before anything starts
    existing = _settled_state(name, timeout)
    if existing is not None:
        agent_rec = existing.get("agent") or {}
        alive = runtime.proc_alive(agent_rec.get("pid", -1), agent_rec.get("start"))
        if alive and existing.get("phase") == "ready":
            if existing["knobs"] == knobs:
                return info(name)
            raise TestbedError(
                f"testbed {name!r} is up with other knobs (profile {existing['knobs']['name']}); "
                f"run `down {name}` first"
            )
        down(name)  # a crashed or half-built testbed: clean it, then build afresh
    with global_lock():
        if state_read(name) is not None:  # another `up` of this name got here first
            racing = True
        else:
            racing = False
            lay = Layout(name, octet_allocate(name, runtime.links()))
            _prepare(lay, knobs)
            agent = _agent_start(lay)
    if racing:
        return up(profile, name=name, nodes=nodes, overrides=overrides, timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = state_read(name) or {}
        if st.get("phase") == "ready":
            return info(name)
        if st.get("phase") == "failed" or not runtime.proc_alive(agent.pid):
            break
        time.sleep(0.2)
    st = state_read(name) or {}
    log_tail = _tail(lay.logs / "agent.log", 15)
    down(name)
    raise TestbedError(f"testbed {name} failed to come up: {st.get('error', 'timeout')}\n{log_tail}")


def _settled_state(name: str, timeout: float) -> dict[str, Any] | None:
    """The state of ``name`` once no other ``up`` is building it (bounded by ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        st = state_read(name)
        agent_rec = (st or {}).get("agent") or {}
        building = (
            st is not None
            and st.get("phase") == "starting"
            and runtime.proc_alive(agent_rec.get("pid", -1), agent_rec.get("start"))
        )
        if not building or time.monotonic() > deadline:
            return st
        time.sleep(0.2)


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _prepare(lay: Layout, knobs: dict[str, Any]) -> None:
    root = lay.root
    if root.exists():
        shutil.rmtree(root)
    for sub, mode in [
        ("", 0o755),
        ("secrets", 0o700),
        ("home", 0o755),
        ("logs", 0o755),
        ("logs/daemons", 0o700),
        ("logs/system", 0o750),
        ("logs/tenants", 0o755),
        ("slurm", 0o755),
        ("slurm/ctld", 0o700),
        ("slurm/spool", 0o755),
        ("run", 0o755),
        ("run/nginx", 0o755),
        ("run/rsyslog", 0o700),
        ("noderun", 0o755),
        ("bin", 0o755),
        ("ssh", 0o700),
        ("nginx", 0o750),
        ("prometheus", 0o700),  # each tenant's TSDB (series, labels, pushed values) is root's
        ("rsyslog", 0o700),  # its configuration names every tenant
        ("faults", 0o755),
        ("munge-etc", 0o700),
        ("munge-run", 0o755),
    ]:
        path = root / sub
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, mode)
    munge = pwd.getpwnam("munge")
    for sub in ("munge-etc", "munge-run"):
        os.chown(root / sub, munge.pw_uid, munge.pw_gid)
    key = root / "munge-etc" / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    os.chown(key, munge.pw_uid, munge.pw_gid)
    os.chmod(key, 0o400)

    tenants = []
    for tid in TENANT_IDS:
        user = lay.tenant_user(tid)
        home = lay.home(user)
        _user_create(user, home, knobs["homes"]["mode"])
        keyfile = lay.secrets / f"{user}_ed25519"
        runtime.run(
            [
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                f"{user}@opgrade-testbed",
                "-f",
                str(keyfile),
            ]
        )
        pub = Path(f"{keyfile}.pub")
        pw = pwd.getpwnam(user)
        sshdir = home / ".ssh"
        sshdir.mkdir(mode=0o700, exist_ok=True)
        (sshdir / "authorized_keys").write_text(pub.read_text())
        os.chmod(sshdir / "authorized_keys", 0o600)
        for p in (sshdir, sshdir / "authorized_keys"):
            os.chown(p, pw.pw_uid, pw.pw_gid)
        logdir = lay.tenant_log_dir(user)
        logdir.mkdir(parents=True, exist_ok=True)
        logfile = logdir / "messages.log"
        logfile.touch()
        readable = knobs["logs"]["shared_dir_readable"]
        os.chmod(logdir, 0o755 if readable else 0o700)
        os.chmod(logfile, 0o644 if readable else 0o600)
        os.chown(logdir, pw.pw_uid, pw.pw_gid)
        os.chown(logfile, pw.pw_uid, pw.pw_gid)
        tenants.append(
            {
                "id": tid,
                "user": user,
                "uid": pw.pw_uid,
                "home": str(home),
                "private_key": str(keyfile),
                "public_key": pub.read_text().strip(),
                "http_password": secrets.token_urlsafe(18),
            }
        )

    runtime.run(
        [
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            f"login.{lay.name}",
            "-f",
            str(root / "ssh" / "host_login"),
        ]
    )
    hostca.ca_create(root / "ssh", lay.name)
    hostca.job_check_write(root, lay.slurm_conf)
    private_tmp = knobs["fs"]["private_tmp"]
    (root / "ssh" / "sshd_config").write_text(
        configs.sshd_config(lay, [t["user"] for t in tenants], pam=private_tmp)
    )
    if private_tmp:
        (root / "ssh" / "pam-sshd").write_text(configs.pam_sshd())
        (root / "ssh" / "namespace.conf").write_text(configs.pam_namespace_conf())
    lay.slurm_conf.write_text(configs.slurm_conf(lay, knobs))
    if knobs["slurm"]["accounting"]:
        dbd = lay.slurm_conf.parent / "slurmdbd.conf"  # found next to SLURM_CONF
        dbd.write_text(configs.slurmdbd_conf(lay, knobs))
        os.chmod(dbd, 0o600)
    # slurmctld makes the job completion log 0644 itself: its directory decides who reads it
    (root / "slurm" / "jobcomp").mkdir()
    os.chmod(root / "slurm" / "jobcomp", 0o700 if knobs["slurm"]["private_data"] else 0o755)
    hc = root / "bin" / "healthcheck.sh"
    hc.write_text(configs.healthcheck_script(lay))
    os.chmod(hc, 0o755)  # noqa: S103 - slurmd executes it
    proxy_secret = secrets.token_urlsafe(24)
    (root / "nginx" / "nginx.conf").write_text(configs.nginx_conf(lay, knobs, tenants, proxy_secret))
    www = grp.getgrnam("www-data").gr_gid
    os.chown(root / "nginx", 0, www)
    htpasswd = root / "nginx" / "htpasswd"
    htpasswd.write_text(
        "".join(
            configs.htpasswd_line(t["user"], t["http_password"], secrets.token_bytes(8)) + "\n"
            for t in tenants
        )
    )
    os.chown(htpasswd, 0, www)
    os.chmod(htpasswd, 0o640)
    if knobs["metrics"]["isolation"]:
        for i, t in enumerate(tenants):
            (root / "prometheus" / f"{t['user']}.yml").write_text(
                configs.prometheus_yml(lay, knobs, push=configs.push_port(i), tenant=t["user"])
            )
    else:
        (root / "prometheus" / "shared.yml").write_text(
            configs.prometheus_yml(lay, knobs, push=configs.push_port(None), tenant=None)
        )
    (root / "prometheus" / "nodes.json").write_text("[]")
    (root / "rsyslog" / "rsyslog.conf").write_text(configs.rsyslog_conf(lay, tenants))
    (lay.logs / "system" / "messages.log").touch()
    state = {
        "name": lay.name,
        "octet": lay.octet,
        "knobs": knobs,
        "phase": "starting",
        "created_at": time.time(),
        "initial_nodes": knobs["nodes"]["count"],
        "tenants": tenants,
        "api_token": secrets.token_urlsafe(24),
        "proxy_secret": proxy_secret,
        "processes": {},
        "nodes": {},
        "events": [],
        "links": [lay.bridge, lay.veth_ctl, lay.veth_login],
        "users": [t["user"] for t in tenants],
    }
    state_write(lay.name, state)


def _user_create(user: str, home: Path, mode: str) -> None:
    try:
        pwd.getpwnam(user)
    except KeyError:
        runtime.run(
            [
                "useradd",
                "--no-create-home",
                "--home-dir",
                str(home),
                "--shell",
                "/bin/bash",
                "--user-group",
                "--password",
                "*",
                "--comment",
                "opgrade testbed tenant",
                user,
            ]
        )
    pw = pwd.getpwnam(user)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    os.chmod(home, int(mode, 8))


def _agent_start(lay: Layout) -> subprocess.Popen[bytes]:
    pkg_parent = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": pkg_parent, "PATH": runtime.SBIN_PATH}
    with open(lay.logs / "agent.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "testbed.agent", lay.name],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            cwd=pkg_parent,
        )
    with state_lock(lay.name):
        st = state_read(lay.name) or {}
        st["agent"] = runtime.proc_record(proc.pid, "agent")
        state_write(lay.name, st)
    return proc


# ------------------------------------------------------------------ down


def down(name: str) -> dict[str, Any]:
    """Remove testbed ``name``: processes, namespaces, links, users and files. Safe to repeat."""
    name_validate(name)
    runtime.preflight_root()
    st = state_read(name) or {}
    lay = Layout(name, int(st["octet"])) if "octet" in st else None
    agent = st.get("agent")
    if agent and runtime.proc_signal(agent, signal.SIGTERM):
        deadline = time.monotonic() + 8
        while runtime.proc_alive(agent["pid"], agent.get("start")) and time.monotonic() < deadline:
            time.sleep(0.05)
    st = state_read(name) or st  # the agent may have written its last pids
    recs = list(st.get("processes", {}).values()) + ([agent] if agent else [])
    ours = sorted(ns for ns in runtime.netns_list() if ns.startswith(f"{NETNS_PREFIX}{name}-"))
    inodes = {i for i in (runtime.netns_inode(ns) for ns in ours) if i}
    marker = str(BASE_DIR / name) + "/"
    stray = runtime.procs_in(inodes, marker)
    left = runtime.kill_all(recs + [{"pid": p} for p in stray], timeout=8)
    if left:
        raise TestbedError(f"could not stop processes {left} of testbed {name}")
    serving.cpu_cgroups_remove(name)  # node1's serving cgroup (its server is stopped above)
    link_names = set(st.get("links", []))
    if lay:
        for node in st.get("nodes", {}).values():
            link_names.add(lay.veth_node(node["slot"]))
    existing = runtime.links()
    for link in sorted(link_names & existing, key=lambda n: n.startswith("tbr")):
        runtime.link_delete(link)
    for ns in ours:
        runtime.netns_remove(netns=ns, veth=None)
    for user in st.get("users", [f"{name}-tenant-{t}" for t in TENANT_IDS]):
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        runtime.run(["userdel", user], check=False)
    if st.get("knobs", {}).get("slurm", {}).get("accounting") and lay:
        db = configs.accounting_db(lay)
        runtime.run(["mysql", "-e", f"DROP DATABASE IF EXISTS `{db}`"], check=False)
    shutil.rmtree(BASE_DIR / name, ignore_errors=True)
    (BASE_DIR / f".{name}.lock").unlink(missing_ok=True)
    return leftovers(name, links=link_names)


def leftovers(name: str, *, links: set[str] | None = None) -> dict[str, Any]:
    """What of testbed ``name`` still exists (empty lists when it is fully gone)."""
    ns = sorted(n for n in runtime.netns_list() if n.startswith(f"{NETNS_PREFIX}{name}-"))
    marker = str(BASE_DIR / name) + "/"
    return {
        "netns": ns,
        "links": sorted((links or set()) & runtime.links()),
        "processes": runtime.procs_in(set(), marker),
        "files": (BASE_DIR / name).exists(),
        "cgroups": [str(g) for g in serving.cpu_cgroups_of(name)],
    }


# ------------------------------------------------------------------ info and status


def info(name: str) -> TestbedInfo:
    st = state_read(name)
    if st is None:
        raise TestbedError(f"no testbed named {name!r} (see `python -m testbed status`)")
    lay = Layout(name, int(st["octet"]))
    knobs = st["knobs"]
    hostkey = lay.root / "ssh" / "host_login.pub"
    tenants = [
        Tenant(
            id=t["id"],
            user=t["user"],
            home=t["home"],
            private_key=t["private_key"],
            public_key=t["public_key"],
            http_user=t["user"],
            http_password=t["http_password"],
        )
        for t in st["tenants"]
    ]
    nodes = {
        n: {
            "address": d["address"],
            "status": d["status"],
            "slurm_state": d.get("slurm_state", ""),
            "host_key": _read(lay.root / "ssh" / f"host_{n}.pub"),
        }
        for n, d in st.get("nodes", {}).items()
        if d["status"] not in ("released", "replaced")
    }
    base = f"http://{lay.ctl_addr}:{configs.NGINX_PORT}"
    return TestbedInfo(
        name=name,
        profile=knobs["name"],
        overrides=knob_differences(knobs),
        phase=st.get("phase", "?"),
        subnet=lay.subnet,
        host_addr=lay.host_addr,
        controller_addr=lay.ctl_addr,
        login_addr=lay.login_addr,
        ssh_port=22,
        login_host_key=_read(hostkey),
        api_url=f"http://{lay.ctl_addr}:{configs.API_PORT}",
        api_token=st["api_token"],
        metrics_url=f"{base}/prometheus",
        pushgateway_url=f"{base}/pushgateway",
        logs_url=f"{base}/logs",
        syslog_addr=f"{lay.ctl_addr}:514",
        slurm_conf=str(lay.slurm_conf),
        jobcomp_log=str(lay.root / "slurm" / "jobcomp" / "jobcomp.txt"),
        log_dir=str(lay.logs / "tenants"),
        bmc_port=int(knobs["bmc"]["port"]),
        tenants=tenants,
        nodes=nodes,
        knobs=knobs,
        host_ca_public_key=hostca.ca_public_key(lay.root / "ssh"),
        serving_url=(
            f"http://{lay.node_addr(1)}:{int(knobs['serving']['port'])}"
            if knobs.get("serving", {}).get("enabled")
            else ""
        ),
    )


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def status() -> list[dict[str, Any]]:
    out = []
    for name in testbed_names():
        st = state_read(name)
        if not st:
            continue
        agent = st.get("agent") or {}
        procs = st.get("processes", {}).values()
        out.append(
            {
                "name": name,
                "profile": st["knobs"]["name"],
                "overrides": knob_differences(st["knobs"]),
                "phase": st.get("phase"),
                "agent_alive": runtime.proc_alive(agent.get("pid", -1), agent.get("start")),
                "subnet": Layout(name, int(st["octet"])).subnet,
                "nodes": {
                    n: d["status"]
                    for n, d in st.get("nodes", {}).items()
                    if d["status"] not in ("released", "replaced")
                },
                "processes_alive": sum(runtime.proc_alive(p["pid"], p.get("start")) for p in procs),
            }
        )
    return out


def memory_rss_kib(name: str) -> int:
    """Sum of the resident memory of every live process of testbed ``name`` (agent included)."""
    st = state_read(name) or {}
    recs = [*st.get("processes", {}).values(), st.get("agent") or {}]
    ours = [ns for ns in runtime.netns_list() if ns.startswith(f"{NETNS_PREFIX}{name}-")]
    inodes = {i for i in (runtime.netns_inode(ns) for ns in ours) if i}
    pids = {r["pid"] for r in recs if r and runtime.proc_alive(r["pid"], r.get("start"))}
    pids |= set(runtime.procs_in(inodes, str(BASE_DIR / name) + "/"))
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


# ------------------------------------------------------------------ provider API client


def provider_call(
    name: str, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 10
) -> tuple[int, dict[str, Any]]:
    """Call the provider API of ``name`` as the provider's customer would (bearer token)."""
    i = info(name)
    req = urllib.request.Request(  # noqa: S310 - an http URL we built
        i.api_url + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {i.api_token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - http URL we built
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def inject_fault(name: str, node: str, kind: str) -> dict[str, Any]:
    code, data = provider_call(name, "POST", f"/v1/nodes/{node}/faults", {"kind": kind})
    if code != 200:
        raise TestbedError(f"inject-fault failed ({code}): {data.get('error')}")
    return data


def creds(name: str, out_dir: str | None = None) -> dict[str, Any]:
    """Credentials for Opgrade: SSH keys, API token, nginx logins; copies keys to ``out_dir``."""
    i = info(name)
    tenants = []
    for t in i.tenants:
        key = t.private_key
        if out_dir:
            dest = Path(out_dir)
            dest.mkdir(parents=True, exist_ok=True)
            target = dest / Path(key).name
            shutil.copyfile(key, target)
            os.chmod(target, 0o600)
            key = str(target)
        tenants.append(
            {
                "id": t.id,
                "ssh_user": t.user,
                "ssh_private_key": key,
                "http_user": t.http_user,
                "http_password": t.http_password,
            }
        )
    return {
        "name": i.name,
        "login": f"{i.login_addr}:{i.ssh_port}",
        "login_host_key": i.login_host_key,
        "api_url": i.api_url,
        "api_token": i.api_token,
        "metrics_url": i.metrics_url,
        "pushgateway_url": i.pushgateway_url,
        "logs_url": i.logs_url,
        "tenants": tenants,
    }
