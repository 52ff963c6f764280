"""A node's life: reserve a slot, boot its namespace and daemons (sshd, slurmd, node exporter,
a BMC-like listener), provision later, tear it down; Prometheus's target list follows."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

from testbed import configs, hostca, runtime, serving
from testbed.agent.base import HOST_ONLY, AgentBase
from testbed.errors import TestbedError


class NodeLifecycle(AgentBase):
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
        # a fresh host certificate at every boot, for the node's name and address (testbed/hostca.py)
        cert = hostca.host_cert_sign(lay.root / "ssh", hostkey, name=name, address=node["address"])
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
                    *hostca.node_sshd_options(
                        lay.root, name=name, cert=cert, restrict_to_jobs=bool(self.knobs.get("ssh", {}).get("restrict_to_jobs"))
                    ),
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
        if slot == 1 and self.knobs.get("serving", {}).get("enabled"):
            self.serving_start(name, netns, node["address"], wrap)
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
        for sock_key in (name, f"{name}-llm-proxy"):
            sock = self.bmc_sockets.pop(sock_key, None)
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
        serving.cpu_cgroups_remove(self.name, name)  # node1's serving cgroup, if it had one
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

    def serving_start(self, name: str, netns: str, address: str, wrap: dict[str, Any]) -> None:
        """node1 serves the provider's LLM endpoint (testbed/serving.py); with serving.error_rate a
        proxy on the node's address fails that share of requests in front of llama-server."""
        knobs = self.knobs["serving"]
        port = int(knobs["port"])
        rate = float(knobs["error_rate"])
        host, listen = (address, port) if rate <= 0 else ("127.0.0.1", port + serving.UPSTREAM_OFFSET)
        key = f"{name}-llm"
        quota = float(knobs.get("cpu_quota", 0))
        procs = serving.cpu_cgroup_create(self.name, name, quota) if quota > 0 else None
        with self.lock:
            self.state["nodes"][name]["pids"].append(key)
        argv = serving.in_cgroup(procs, serving.server_argv(self.knobs, host=host, port=listen))
        self.spawn(key, runtime.wrap_in_node(**wrap, argv=argv))
        if rate > 0:

            def make() -> socket.socket:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((address, port))
                s.listen(64)
                return s

            sock = runtime.in_netns(netns, make)
            self.bmc_sockets[f"{name}-llm-proxy"] = sock  # closed with the node (node_teardown)
            proxy = serving.FlakyProxy(
                listen=sock,
                upstream_port=listen,
                error_rate=rate,
                make_socket=lambda: runtime.in_netns(netns, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
            )
            threading.Thread(target=proxy.serve, name=f"llm-proxy-{name}", daemon=True).start()
        self.event("serving_started", node=name, port=port, error_rate=rate, cpu_quota=quota)

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

    def scontrol(self, args: list[str], *, check: bool = True) -> str:
        proc = runtime.run(
            ["scontrol", *args], check=check, timeout=10, env={"SLURM_CONF": str(self.lay.slurm_conf)}
        )
        return proc.stdout
