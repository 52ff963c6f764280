"""The provider API (``Authorization: Bearer <token>``, on the controller, port 8000): list,
provision and release nodes, the events, report a node faulty (break-fix), inject and clear
faults (a node lists its active ones); and the actions behind it."""

from __future__ import annotations

import hmac
import signal
import threading
import time
import traceback
from typing import Any
from urllib.parse import urlparse

from testbed import runtime
from testbed.agent.base import HOST_ONLY
from testbed.agent.jsonhttp import JsonHandler
from testbed.agent.nodes import NodeLifecycle
from testbed.errors import TestbedError

FAULT_KINDS = ("link_down", "slurmd_killed", "hung", "unhealthy", "clear")


class ProviderActions(NodeLifecycle):
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


class ApiHandler(JsonHandler):
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
