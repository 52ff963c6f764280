"""The operator loops: the operator applies the profile's remediation policy (drain on a
break-fix ticket; replace after ``replace_after_s``, or never), the flaky loop drops node
links at the profile's rate."""

from __future__ import annotations

import random
import re
import threading
import time

from testbed import runtime
from testbed.agent.nodes import NodeLifecycle

BAD_FLAGS = ("DOWN", "DRAIN", "FAIL", "NOT_RESPONDING")


def slurm_state_is_bad(state: str) -> bool:
    flags = state.replace("*", "+NOT_RESPONDING").split("+")
    return any(f in BAD_FLAGS for f in flags)


class OperatorLoops(NodeLifecycle):
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
