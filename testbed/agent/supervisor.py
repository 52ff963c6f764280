"""The supervisor: builds the network, starts the controller's daemons and the initial nodes,
serves the two HTTP services, runs the main loop (reap, operator, flaky) and shuts down;
``main`` is ``python -m testbed.agent NAME``."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from testbed import configs, runtime, serving
from testbed.agent.base import HOST_ONLY
from testbed.agent.log_service import LogHandler
from testbed.agent.operator_loops import OperatorLoops
from testbed.agent.provider_api import ApiHandler, ProviderActions
from testbed.errors import TestbedError
from testbed.layout import state_update

TICK_S = 1.0


class Agent(ProviderActions, OperatorLoops):
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
        serving.cpu_cgroups_remove(self.name)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m testbed.agent NAME", file=sys.stderr)
        return 2
    with state_update(argv[0]) as st:
        st["agent_pid"] = os.getpid()
    Agent(argv[0]).run()
    return 0
