"""The testbed's supervisor: one long-running process per testbed (``python -m testbed.agent NAME``).

``up`` prepares users, keys and config files and starts this agent; the agent then builds
the network, starts every daemon (as its own children, so it reaps them), and runs:

- the provider API (token auth) on the controller, port 8000: list / provision / release
  nodes, report a node faulty (break-fix), inject faults;
- the log query service on the controller's loopback, port 3100, reached only through nginx;
- the operator loop, which applies the profile's remediation policy;
- the flaky loop, which drops node links at the profile's rate;
- BMC-like listeners when the profile makes them reachable.

Every pid it starts is written to the state file, so ``down`` can remove them even if the
agent dies. The agent's own sockets are created inside the controller's (or a node's)
network namespace with setns(2) on one thread, so it serves there while it runs in the
host namespace, where it can manage links.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from testbed import configs, runtime
from testbed.errors import TestbedError
from testbed.layout import Layout, state_read, state_update, state_write

# The host's own software that a tenant of the testbed must not see (an empty tmpfs over it on the
# login and compute nodes): /usr/local holds the host's CUDA toolkit, which would otherwise be
# judged as the testbed's (a CPU-only cluster has none).
HOST_ONLY = ["/usr/local"]
FAULT_KINDS = ("link_down", "slurmd_killed", "hung", "unhealthy", "clear")
BAD_FLAGS = ("DOWN", "DRAIN", "FAIL", "NOT_RESPONDING")
TICK_S = 1.0


def kernel_newer(release: str) -> str:
    """A release that sorts after ``release``: 6.1.0-18-amd64 -> 6.1.1-18-amd64."""
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)(.*)$", release)
    if not m:
        return release + ".1"
    return f"{m[1]}.{m[2]}.{int(m[3]) + 1}{m[4]}"


def slurm_state_is_bad(state: str) -> bool:
    flags = state.replace("*", "+NOT_RESPONDING").split("+")
    return any(f in BAD_FLAGS for f in flags)


class Agent:
    def __init__(self, name: str) -> None:
        state = state_read(name)
        if state is None:
            raise TestbedError(f"no state for {name}")
        self.state = state
        self.name = name
        self.lay = Layout(name, int(state["octet"]))
        self.knobs: dict[str, Any] = state["knobs"]
        self.lock = threading.RLock()
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.stopping = threading.Event()
        self.bmc_sockets: dict[str, socket.socket] = {}
        self.servers: list[ThreadingHTTPServer] = []
        release = os.uname().release
        self.boot_kernels = [release] + (
            [kernel_newer(release)] if self.knobs["kernel"]["pending_reboot"] else []
        )
        self.ticket_seq = 0
        # fs.private_tmp (a state written before the knob existed reads as the old shared /tmp)
        self.private_tmp = bool(self.knobs.get("fs", {}).get("private_tmp", False))

    # ------------------------------------------------------------ bookkeeping

    def save(self) -> None:
        with self.lock:
            state_write(self.name, self.state)

    def event(self, what: str, /, **data: Any) -> None:
        with self.lock:
            ev = {"t": round(time.time(), 3), "event": what, **data}
            self.state.setdefault("events", []).append(ev)
            del self.state["events"][:-300]
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} opgtb-agent: {json.dumps(ev)}\n"
        with open(self.lay.logs / "system" / "events.log", "a") as fh:
            fh.write(line)

    def spawn(self, key: str, argv: list[str], *, user: str | None = None) -> int:
        env = {"PATH": runtime.SBIN_PATH, "SLURM_CONF": str(self.lay.slurm_conf), "LANG": "C.UTF-8"}
        with open(self.lay.logs / "daemons" / f"{key}.log", "ab") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                user=user,
                cwd="/",
            )
        with self.lock:
            self.children[key] = proc
            self.state["processes"][key] = runtime.proc_record(proc.pid, key)
        return proc.pid

    def stop_process(self, key: str) -> None:
        with self.lock:
            rec = self.state["processes"].pop(key, None)
            proc = self.children.pop(key, None)
        if rec:
            runtime.kill_all([rec], timeout=3)
        if proc:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)

    def reap(self) -> None:
        with self.lock:
            for key, proc in list(self.children.items()):
                if proc.poll() is not None:
                    self.children.pop(key)
                    if not self.stopping.is_set():
                        self.event("process_exit", process=key, code=proc.returncode)

    # ------------------------------------------------------------ controller

    def start_controller(self) -> None:
        lay = self.lay
        runtime.bridge_create(lay.bridge, lay.host_addr)
        runtime.netns_attach(netns=lay.netns_ctl, veth=lay.veth_ctl, bridge=lay.bridge, addr=lay.ctl_addr)
        runtime.netns_attach(
            netns=lay.netns_login, veth=lay.veth_login, bridge=lay.bridge, addr=lay.login_addr
        )
        root = str(lay.root)
        # munge: a key of its own per testbed, socket given to Slurm with AuthInfo
        self.spawn(
            "munged",
            [
                "munged",
                "-F",
                f"--socket={lay.munge_socket}",
                f"--key-file={root}/munge-etc/munge.key",
                f"--pid-file={root}/munge-run/munged.pid",
                f"--log-file={root}/logs/munged.log",
                f"--seed-file={root}/munge-run/seed",
                "--num-threads=2",
            ],
            user="munge",
        )
        ctl = lay.netns_ctl
        if self.knobs["slurm"]["accounting"]:
            self.accounting_start()
        self.spawn(
            "slurmctld",
            runtime.wrap_in_node(
                netns=ctl, hostname="ctl", argv=["slurmctld", "-D", "-f", str(lay.slurm_conf)]
            ),
        )
        self.spawn(
            "rsyslogd",
            runtime.wrap_in_node(
                netns=ctl,
                hostname="ctl",
                argv=[
                    "rsyslogd",
                    "-n",
                    "-f",
                    f"{root}/rsyslog/rsyslog.conf",
                    "-i",
                    f"{root}/run/rsyslogd.pid",
                ],
            ),
        )
        instances: list[tuple[str, int | None]] = (
            [(t["user"], i) for i, t in enumerate(self.state["tenants"])]
            if self.knobs["metrics"]["isolation"]
            else [("shared", None)]
        )
        for label, index in instances:
            self.spawn(
                f"pushgateway-{label}",
                runtime.wrap_in_node(
                    netns=ctl,
                    hostname="ctl",
                    argv=[
                        "prometheus-pushgateway",
                        f"--web.listen-address=127.0.0.1:{configs.push_port(index)}",
                        "--log.level=warn",
                    ],
                ),
            )
            self.spawn(
                f"prometheus-{label}",
                runtime.wrap_in_node(
                    netns=ctl,
                    hostname="ctl",
                    argv=[
                        "prometheus",
                        f"--config.file={root}/prometheus/{label}.yml",
                        f"--storage.tsdb.path={root}/prometheus/data-{label}",
                        f"--web.listen-address=127.0.0.1:{configs.prom_port(index)}",
                        f"--storage.tsdb.retention.time={self.knobs['metrics']['retention']}",
                        "--log.level=warn",
                    ],
                ),
            )
        self.spawn(
            "nginx",
            runtime.wrap_in_node(
                netns=ctl,
                hostname="ctl",
                argv=[
                    "nginx",
                    "-c",
                    f"{root}/nginx/nginx.conf",
                    "-e",
                    f"{configs.nginx_log_dir(lay, self.knobs)}/nginx-error.log",
                ],
            ),
        )
        self.spawn(
            "sshd-login",
            runtime.wrap_in_node(
                netns=lay.netns_login,
                hostname="login",
                tmpfs=HOST_ONLY,
                boot_kernels=self.boot_kernels,
                **self.sshd_mounts(),
                argv=[
                    "/usr/sbin/sshd",
                    "-D",
                    "-e",
                    "-f",
                    f"{root}/ssh/sshd_config",
                    "-o",
                    f"HostKey={root}/ssh/host_login",
                    "-o",
                    f"ListenAddress={lay.login_addr}",
                ],
            ),
        )
        self.serve(ctl, (lay.ctl_addr, configs.API_PORT), ApiHandler)
        self.serve(ctl, ("127.0.0.1", configs.LOG_PORT), LogHandler)

    def accounting_start(self) -> None:
        """slurmdbd on its own database, then the cluster, one account per tenant and its user."""
        lay = self.lay
        db = configs.accounting_db(lay)
        runtime.run(["mysql", "-e", f"DROP DATABASE IF EXISTS `{db}`; CREATE DATABASE `{db}`"])
        self.spawn(
            "slurmdbd",
            runtime.wrap_in_node(netns=lay.netns_ctl, hostname="ctl", argv=["slurmdbd", "-D"]),
        )
        self.wait_port(lay.netns_ctl, lay.ctl_addr, configs.SLURMDBD_PORT, timeout=30)
        mgr = ["sacctmgr", "-i"]
        self.sacctmgr([*mgr, "add", "cluster", self.name])
        for t in self.state["tenants"]:
            account = f"tenant-{t['id']}"
            self.sacctmgr(
                [*mgr, "add", "account", account, f"cluster={self.name}", f"description={t['user']}"]
            )
            self.sacctmgr([*mgr, "add", "user", t["user"], f"account={account}", f"cluster={self.name}"])

    def sacctmgr(self, argv: list[str]) -> None:
        env = {"SLURM_CONF": str(self.lay.slurm_conf)}
        last = ""
        for _ in range(20):  # slurmdbd may still be creating its tables
            proc = runtime.run(argv, check=False, timeout=20, env=env)
            if proc.returncode == 0:
                return
            last = (proc.stderr or proc.stdout).strip()
            time.sleep(0.5)
        raise TestbedError(f"{' '.join(argv)} failed: {last[:300]}")

    def serve(self, netns: str, addr: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        agent = self

        class Bound(handler):  # type: ignore[misc, valid-type]
            pass

        Bound.agent = agent  # type: ignore[attr-defined]
        ThreadingHTTPServer.allow_reuse_address = True
        server = runtime.in_netns(netns, lambda: ThreadingHTTPServer(addr, Bound))
        server.daemon_threads = True
        self.servers.append(server)
        threading.Thread(target=server.serve_forever, name=f"http-{addr[1]}", daemon=True).start()

    # ------------------------------------------------------------ nodes

    def free_slots(self) -> list[int]:
        used = {
            n["slot"] for n in self.state["nodes"].values() if n["status"] not in ("released", "replaced")
        }
        never = [
            s
            for s in range(1, self.knobs["nodes"]["pool_size"] + 1)
            if self.lay.node_name(s) not in self.state["nodes"]
        ]
        again = sorted(
            n["slot"]
            for n in self.state["nodes"].values()
            if n["status"] in ("released", "replaced") and n["slot"] not in used
        )
        return never + [s for s in again if s not in never]

    def nodes_reserve(self, count: int, *, reason: str) -> list[str]:
        with self.lock:
            slots = self.free_slots()
            if count > len(slots):
                raise TestbedError(
                    f"only {len(slots)} node slots free (pool_size {self.knobs['nodes']['pool_size']})"
                )
            names = []
            for slot in slots[:count]:
                name = self.lay.node_name(slot)
                self.state["nodes"][name] = {
                    "slot": slot,
                    "address": self.lay.node_addr(slot),
                    "status": "provisioning",
                    "requested_at": time.time(),
                    "ready_at": None,
                    "reported_faulty": False,
                    "bad_since": None,
                    "reason": reason,
                }
                names.append(name)
            self.save()
        for name in names:
            self.event("node_requested", node=name, reason=reason)
        return names

    def sshd_mounts(self) -> dict[str, Any]:
        """With ``fs.private_tmp``: the node's own temp dirs, and the testbed's PAM stack
        (pam_namespace: one instance per user) over the host's, in the sshd's namespace only."""
        if not self.private_tmp:
            return {}
        ssh = self.lay.root / "ssh"
        return {
            "private_tmp": "user",
            "binds": [
                (str(ssh / "pam-sshd"), "/etc/pam.d/sshd"),
                (str(ssh / "namespace.conf"), "/etc/security/namespace.conf"),
            ],
        }

    def node_boot(self, name: str) -> None:
        """Create the namespace of ``name`` and start its sshd, slurmd and node exporter."""
        lay = self.lay
        with self.lock:
            node = self.state["nodes"][name]
            if node["status"] != "provisioning":
                return
            slot = node["slot"]
        netns, veth = lay.netns_node(slot), lay.veth_node(slot)
        runtime.netns_attach(netns=netns, veth=veth, bridge=lay.bridge, addr=node["address"])
        hostkey = lay.root / "ssh" / f"host_{name}"
        if not hostkey.exists():
            runtime.run(
                [
                    "ssh-keygen",
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    f"{name}.{self.name}",
                    "-f",
                    str(hostkey),
                ]
            )
        (lay.faults / f"{name}.unhealthy").unlink(missing_ok=True)
        root = str(lay.root)
        wrap: dict[str, Any] = {
            "netns": netns,
            "hostname": name,
            "tmpfs": [f"{root}/noderun", *HOST_ONLY],
            "boot_kernels": self.boot_kernels,
            "private_tmp": "job" if self.private_tmp else "",
        }
        with self.lock:
            node.update(netns=netns, veth=veth, status="booting", booted_at=time.time())
            node["pids"] = [f"{name}-sshd", f"{name}-slurmd", f"{name}-exporter"]
        self.spawn(
            f"{name}-sshd",
            runtime.wrap_in_node(
                **{**wrap, **self.sshd_mounts()},
                argv=[
                    "/usr/sbin/sshd",
                    "-D",
                    "-e",
                    "-f",
                    f"{root}/ssh/sshd_config",
                    "-o",
                    f"HostKey={hostkey}",
                    "-o",
                    f"ListenAddress={node['address']}",
                ],
            ),
        )
        self.spawn(
            f"{name}-slurmd",
            runtime.wrap_in_node(**wrap, argv=["slurmd", "-D", "-f", str(lay.slurm_conf), "-N", name]),
        )
        self.spawn(
            f"{name}-exporter",
            runtime.wrap_in_node(
                **wrap,
                argv=[
                    "prometheus-node-exporter",
                    f"--web.listen-address={node['address']}:{configs.NODE_EXPORTER_PORT}",
                    "--collector.disable-defaults",
                    "--collector.cpu",
                    # the node's own interface (per network namespace), unlike the shared host CPUs
                    "--collector.netdev",
                    "--collector.meminfo",
                    "--collector.loadavg",
                    "--collector.uname",
                    "--collector.time",
                    "--log.level=warn",
                ],
            ),
        )
        if self.knobs["bmc"]["reachable"]:
            self.bmc_listen(name, netns, node["address"])
        self.targets_write()
        self.save()
        self.event("node_booting", node=name)

    def node_provision_later(self, names: list[str], delay: float) -> None:
        def work() -> None:
            if self.stopping.wait(delay):
                return
            for name in names:
                try:
                    self.node_boot(name)
                except Exception as exc:
                    self.event("node_boot_failed", node=name, error=str(exc)[:300])

        threading.Thread(target=work, daemon=True).start()

    def node_teardown(self, name: str, status: str) -> None:
        """Stop the processes of ``name``, remove its namespace and hide it from Slurm."""
        with self.lock:
            node = self.state["nodes"].get(name)
            if not node or node["status"] in ("released", "replaced"):
                return
            node["status"] = status
            node["ended_at"] = time.time()
            keys = node.get("pids", [])
        sock = self.bmc_sockets.pop(name, None)
        if sock:
            sock.close()
        recs = []
        with self.lock:
            for key in keys:
                rec = self.state["processes"].get(key)
                if rec:
                    recs.append(rec)
        inode = runtime.netns_inode(self.lay.netns_node(node["slot"]))
        extra = runtime.procs_in({inode}, "") if inode else []
        runtime.kill_all(recs + [{"pid": p} for p in extra], timeout=3)
        for key in keys:
            self.stop_process(key)
        runtime.netns_remove(netns=self.lay.netns_node(node["slot"]), veth=self.lay.veth_node(node["slot"]))
        (self.lay.faults / f"{name}.unhealthy").unlink(missing_ok=True)
        self.scontrol(["update", f"nodename={name}", "state=future"], check=False)
        self.targets_write()
        self.save()
        self.event(f"node_{status}", node=name)

    def targets_write(self) -> None:
        path = self.lay.root / "prometheus" / "nodes.json"
        tmp = path.with_suffix(".tmp")
        with self.lock:
            tmp.write_text(
                configs.node_targets(
                    self.lay, self.state["nodes"], scrape_all=self.knobs["metrics"]["scrape_all_nodes"]
                )
            )
        os.replace(tmp, path)

    def bmc_listen(self, name: str, netns: str, address: str) -> None:
        port = int(self.knobs["bmc"]["port"])

        def make() -> socket.socket:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((address, port))
            s.listen(8)
            return s

        sock = runtime.in_netns(netns, make)
        self.bmc_sockets[name] = sock

        def loop() -> None:
            while True:
                try:
                    conn, _ = sock.accept()
                except OSError:
                    return
                try:
                    conn.sendall(b"BMC-SIM IPMI-over-LAN (testbed)\r\n")
                finally:
                    conn.close()

        threading.Thread(target=loop, daemon=True).start()

    # ------------------------------------------------------------ faults

    def fault_inject(self, name: str, kind: str) -> dict[str, Any]:
        if kind not in FAULT_KINDS:
            raise TestbedError(f"unknown fault kind {kind!r} (known: {', '.join(FAULT_KINDS)})")
        with self.lock:
            node = self.state["nodes"].get(name)
            if not node or node["status"] not in ("booting", "ready", "faulty"):
                raise TestbedError(f"no running node {name!r}")
            procs = {k: self.state["processes"].get(k) for k in node.get("pids", [])}
        with self.lock:  # the API lists a node's injected faults until a "clear"
            active = [] if kind == "clear" else [*node.get("faults", []), kind]
            node["faults"] = list(dict.fromkeys(active))
        veth = self.lay.veth_node(node["slot"])
        if kind == "link_down":
            runtime.link_set(veth, False)
        elif kind == "slurmd_killed":
            rec = procs.get(f"{name}-slurmd")
            if rec:
                runtime.proc_signal(rec, signal.SIGKILL)
        elif kind == "hung":
            for rec in procs.values():
                if rec:
                    runtime.proc_signal(rec, signal.SIGSTOP)
        elif kind == "unhealthy":
            (self.lay.faults / f"{name}.unhealthy").write_text("simulated GPU XID 79 (fell off the bus)\n")
        elif kind == "clear":
            with self.lock:
                node["reported_faulty"] = False
            runtime.link_set(veth, True)
            (self.lay.faults / f"{name}.unhealthy").unlink(missing_ok=True)
            for rec in procs.values():
                if rec:
                    runtime.proc_signal(rec, signal.SIGCONT)
            rec = procs.get(f"{name}-slurmd")
            if not rec or not runtime.proc_alive(rec["pid"], rec.get("start")):
                self.spawn(
                    f"{name}-slurmd",
                    runtime.wrap_in_node(
                        netns=node["netns"],
                        hostname=name,
                        tmpfs=[f"{self.lay.root}/noderun", *HOST_ONLY],
                        boot_kernels=self.boot_kernels,
                        private_tmp="job" if self.private_tmp else "",
                        argv=["slurmd", "-D", "-f", str(self.lay.slurm_conf), "-N", name],
                    ),
                )
        self.event("fault_injected", node=name, kind=kind)
        self.save()
        return {"node": name, "kind": kind}

    def report_faulty(self, name: str, reason: str) -> dict[str, Any]:
        with self.lock:
            node = self.state["nodes"].get(name)
            if not node or node["status"] not in ("booting", "ready", "faulty"):
                raise TestbedError(f"no running node {name!r}")
            self.ticket_seq += 1
            ticket = {"id": f"T{self.ticket_seq}", "node": name, "reason": reason[:200], "at": time.time()}
            node["reported_faulty"] = True
            self.state.setdefault("tickets", []).append(ticket)
        self.event("node_reported_faulty", node=name, ticket=ticket["id"])
        self.save()
        return ticket

    # ------------------------------------------------------------ slurm and loops

    def scontrol(self, args: list[str], *, check: bool = True) -> str:
        proc = runtime.run(
            ["scontrol", *args], check=check, timeout=10, env={"SLURM_CONF": str(self.lay.slurm_conf)}
        )
        return proc.stdout

    def slurm_states(self) -> dict[str, str]:
        out = self.scontrol(["show", "node", "-o"], check=False)
        states = {}
        for line in out.splitlines():
            m_name = re.search(r"NodeName=(\S+)", line)
            m_state = re.search(r"\bState=(\S+)", line)
            if m_name and m_state:
                states[m_name[1]] = m_state[1]
        return states

    def operator_tick(self) -> None:
        states = self.slurm_states()
        policy = self.knobs["remediation"]["policy"]
        now = time.time()
        changed = False
        with self.lock:
            nodes = list(self.state["nodes"].items())
        for name, node in nodes:
            st = states.get(name, "")
            node["slurm_state"] = st
            if node["status"] == "booting" and st and not slurm_state_is_bad(st) and "FUTURE" not in st:
                node["status"], node["ready_at"] = "ready", now
                changed = True
                self.event("node_ready", node=name, seconds=round(now - node["requested_at"], 2))
                continue
            if node["status"] not in ("ready", "faulty"):
                continue
            bad = slurm_state_is_bad(st) or node["reported_faulty"]
            if bad and node["bad_since"] is None:
                node["bad_since"] = now
                node["status"] = "faulty"
                changed = True
                self.event("node_bad", node=name, slurm_state=st, reported=node["reported_faulty"])
            elif not bad and node["bad_since"] is not None:
                node["bad_since"], node["status"] = None, "ready"
                changed = True
                self.event("node_recovered", node=name, slurm_state=st)
            if not bad or policy == "never":
                continue
            if node["reported_faulty"] and "DRAIN" not in st:
                self.scontrol(
                    ["update", f"nodename={name}", "state=drain", "reason=operator: break-fix ticket"],
                    check=False,
                )
            if (
                policy == "replace"
                and now - node["bad_since"] >= self.knobs["remediation"]["replace_after_s"]
            ):
                self.node_teardown(name, "replaced")
                new = self.nodes_reserve(1, reason=f"replaces {name}")
                self.event("node_replacing", node=name, replacement=new[0])
                self.node_provision_later(new, self.knobs["provisioning"]["delay_s"])
                changed = True
        if changed:
            self.save()

    def flaky_tick(self, dt: float) -> None:
        rate = self.knobs["faults"]["drop_rate_per_hour"]
        if rate <= 0:
            return
        p = rate / 3600.0 * dt
        with self.lock:
            nodes = [(n, d) for n, d in self.state["nodes"].items() if d["status"] == "ready"]
        for name, node in nodes:
            if random.random() < p:  # noqa: S311 - a simulation, not a secret
                veth = self.lay.veth_node(node["slot"])
                runtime.link_set(veth, False)
                self.event("node_dropped", node=name)
                duration = self.knobs["faults"]["drop_duration_s"]

                def restore(v: str = veth, n: str = name, duration: float = duration) -> None:
                    if not self.stopping.wait(duration) and v in runtime.links():
                        runtime.link_set(v, True)
                        self.event("node_link_restored", node=n)

                threading.Thread(target=restore, daemon=True).start()

    def run(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: self.stopping.set())
        signal.signal(signal.SIGINT, lambda *_: self.stopping.set())
        try:
            self.start_controller()
            names = self.nodes_reserve(int(self.state["initial_nodes"]), reason="initial")
            for name in names:
                self.node_boot(name)
            deadline = time.monotonic() + 45
            while time.monotonic() < deadline and not self.stopping.is_set():
                self.operator_tick()
                if all(self.state["nodes"][n]["status"] == "ready" for n in names):
                    break
                time.sleep(0.25)
            self.wait_port(self.lay.netns_ctl, self.lay.ctl_addr, configs.NGINX_PORT)
            self.wait_port(self.lay.netns_login, self.lay.login_addr, 22)
            not_ready = [n for n in names if self.state["nodes"][n]["status"] != "ready"]
            with self.lock:
                if not_ready:
                    self.state["phase"], self.state["error"] = (
                        "failed",
                        f"nodes not idle in time: {not_ready}",
                    )
                else:
                    self.state["phase"], self.state["ready_at"] = "ready", time.time()
            self.save()
            self.event("testbed_" + self.state["phase"])
        except Exception as exc:
            with self.lock:
                self.state["phase"], self.state["error"] = "failed", f"{exc}"
            self.save()
            traceback.print_exc()
        last = time.monotonic()
        while not self.stopping.wait(TICK_S):
            try:
                self.reap()
                self.operator_tick()
                now = time.monotonic()
                self.flaky_tick(now - last)
                last = now
            except Exception:
                traceback.print_exc()
        self.shutdown()

    def wait_port(self, netns: str, addr: str, port: int, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                runtime.in_netns(netns, lambda: socket.create_connection((addr, port), timeout=1)).close()
                return
            except OSError:
                time.sleep(0.1)
        raise TestbedError(f"{addr}:{port} in {netns} did not open within {timeout}s")

    def shutdown(self) -> None:
        for server in self.servers:
            server.server_close()
        for sock in self.bmc_sockets.values():
            sock.close()
        with self.lock:
            recs = list(self.state["processes"].values())
        runtime.kill_all(recs, timeout=5)
        for proc in list(self.children.values()):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)


# ---------------------------------------------------------------- HTTP


class _Json(BaseHTTPRequestHandler):
    agent: Agent
    server_version = "opgtb/1"

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet: one line per request is noise
        return

    def reply(self, code: int, body: Any) -> None:
        data = (json.dumps(body, indent=1) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > 65536:
            raise TestbedError("request body too large")
        raw = self.rfile.read(length) if length else b""
        try:
            data = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            raise TestbedError(f"body is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise TestbedError("body must be a JSON object")
        return data


class ApiHandler(_Json):
    """Provider API: ``Authorization: Bearer <token>`` on every call."""

    def authorised(self) -> bool:
        given = self.headers.get("Authorization", "")
        want = "Bearer " + self.agent.state["api_token"]
        if hmac.compare_digest(given.encode(), want.encode()):
            return True
        self.reply(401, {"error": "missing or wrong bearer token"})
        return False

    def nodes(self) -> list[dict[str, Any]]:
        with self.agent.lock:
            return [
                {
                    "name": n,
                    "address": d["address"],
                    "status": d["status"],
                    "slurm_state": d.get("slurm_state", ""),
                    "reported_faulty": d["reported_faulty"],
                    "faults": list(d.get("faults", [])),  # injected through this API, not yet cleared
                    "ssh_port": 22,
                }
                for n, d in sorted(self.agent.state["nodes"].items(), key=lambda kv: kv[1]["slot"])
                if d["status"] not in ("released", "replaced")
            ]

    def handle_any(self, method: str) -> None:
        if not self.authorised():
            return
        parts = [p for p in urlparse(self.path).path.split("/") if p]
        agent = self.agent
        try:
            if method == "GET" and parts == ["v1", "nodes"]:
                return self.reply(200, {"nodes": self.nodes()})
            if method == "GET" and parts == ["v1", "events"]:
                with agent.lock:
                    return self.reply(200, {"events": list(agent.state.get("events", []))})
            if method == "POST" and parts == ["v1", "nodes"]:
                count = self.body().get("count", 1)
                if not isinstance(count, int) or not 1 <= count <= 16:
                    return self.reply(400, {"error": "count must be an integer 1..16"})
                try:
                    names = agent.nodes_reserve(count, reason="api")
                except TestbedError as exc:
                    return self.reply(409, {"error": str(exc)})
                agent.node_provision_later(names, agent.knobs["provisioning"]["delay_s"])
                return self.reply(202, {"nodes": names, "delay_s": agent.knobs["provisioning"]["delay_s"]})
            if len(parts) >= 3 and parts[:2] == ["v1", "nodes"]:
                name = parts[2]
                if name not in agent.state["nodes"]:
                    return self.reply(404, {"error": f"no node {name}"})
                if method == "DELETE" and len(parts) == 3:
                    threading.Thread(target=agent.node_teardown, args=(name, "released"), daemon=True).start()
                    return self.reply(202, {"node": name, "status": "releasing"})
                if method == "POST" and parts[3:] == ["report-faulty"]:
                    reason = str(self.body().get("reason", ""))
                    return self.reply(202, agent.report_faulty(name, reason))
                if method == "POST" and parts[3:] == ["faults"]:
                    kind = str(self.body().get("kind", ""))
                    return self.reply(200, agent.fault_inject(name, kind))
            return self.reply(404, {"error": "no such endpoint"})
        except TestbedError as exc:
            return self.reply(400, {"error": str(exc)})
        except Exception as exc:  # answer, and keep the trace in agent.log
            traceback.print_exc()
            return self.reply(500, {"error": f"internal error: {type(exc).__name__}"})

    def do_GET(self) -> None:
        self.handle_any("GET")

    def do_POST(self) -> None:
        self.handle_any("POST")

    def do_DELETE(self) -> None:
        self.handle_any("DELETE")


class LogHandler(_Json):
    """Loki-like log query: ``GET /logs/query?contains=TEXT&limit=N``.

    The tenant is the ``X-Scope-OrgID`` header, which nginx sets from the login. With
    ``logs.isolation`` on, a request must carry nginx's proxy secret and a known tenant
    (missing or unknown: refused), and only that tenant's file is read. With it off, the
    header is taken as given and a request without one gets every tenant's lines.
    With ``logs.ingest_delay_s`` a line is returned only that many seconds after rsyslog
    received it (by its ``timegenerated`` stamp): an indexing pipeline that lags behind.
    """

    def do_GET(self) -> None:
        agent = self.agent
        url = urlparse(self.path)
        if url.path.rstrip("/") != "/logs/query":
            return self.reply(404, {"error": "use /logs/query"})
        q = parse_qs(url.query)
        contains = (q.get("contains") or [""])[0]
        try:
            limit = max(1, min(1000, int((q.get("limit") or ["100"])[0])))
        except ValueError:
            return self.reply(400, {"error": "limit must be an integer"})
        users = [t["user"] for t in agent.state["tenants"]]
        tenant = self.headers.get("X-Scope-OrgID", "").strip()
        if agent.knobs["logs"]["isolation"]:
            secret = agent.state["proxy_secret"]
            if not hmac.compare_digest(self.headers.get("X-Testbed-Proxy", "").encode(), secret.encode()):
                return self.reply(403, {"error": "only reachable through the nginx proxy"})
            if tenant not in users:
                return self.reply(401, {"error": "missing or unknown tenant"})
            sources = [tenant]
        else:
            sources = [tenant] if tenant in users else users
        delay = float(agent.knobs["logs"]["ingest_delay_s"])
        cutoff = time.time() - delay
        lines: list[str] = []
        for user in sources:
            path = agent.lay.tenant_log_dir(user) / "messages.log"
            try:
                for line in path.read_text(errors="replace").splitlines():
                    if contains in line and (not delay or received_at(line) <= cutoff):
                        lines.append(line)
            except FileNotFoundError:
                continue
        return self.reply(200, {"tenant": tenant or None, "lines": lines[-limit:]})


def received_at(line: str) -> float:
    """When rsyslog received ``line`` (its first field, ``timegenerated`` in RFC 3339), as a Unix
    time; a line without a readable stamp counts as just received (so a lag hides it too)."""
    try:
        return datetime.fromisoformat(line.split(" ", 1)[0]).timestamp()
    except ValueError:
        return time.time()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m testbed.agent NAME", file=sys.stderr)
        return 2
    with state_update(argv[0]) as st:
        st["agent_pid"] = os.getpid()
    Agent(argv[0]).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
