"""The agent's state and bookkeeping: the state file, the event log, and the children it spawns."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import threading
import time
from http.server import ThreadingHTTPServer
from typing import Any

from testbed import runtime
from testbed.errors import TestbedError
from testbed.layout import Layout, state_read, state_write

# The host's own software that a tenant of the testbed must not see (an empty tmpfs over it on the
# login and compute nodes): /usr/local holds the host's CUDA toolkit, which would otherwise be
# judged as the testbed's (a CPU-only cluster has none).
HOST_ONLY = ["/usr/local"]


def kernel_newer(release: str) -> str:
    """A release that sorts after ``release``: 6.1.0-18-amd64 -> 6.1.1-18-amd64."""
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)(.*)$", release)
    if not m:
        return release + ".1"
    return f"{m[1]}.{m[2]}.{int(m[3]) + 1}{m[4]}"


class AgentBase:
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
