"""pytest support for tests that need a running testbed.

Use it from any test package's ``conftest.py``::

    pytest_plugins = ["testbed.pytest_helpers"]

which gives two session-scoped fixtures, ``testbed_exemplary`` and ``testbed_leaky``
(testbeds ``ptex`` and ``ptlk``, two compute nodes each; the ``pt`` prefix comes from
``OPGRADE_TESTBED_PREFIX``), returning
:class:`testbed.api.TestbedInfo`. Each is brought up once per session, on first use, and
removed at the end (set ``OPGRADE_TESTBED_KEEP=1`` to keep them). Treat them as shared
and read-only: submit jobs, query metrics, but do not inject faults or release nodes;
bring up your own with :func:`running_testbed` for that.

Tests that use them fail, naming what is missing, when not run as root or when a package is
missing (``make test`` installs the packages; deselect with ``-m "not testbed"`` on purpose).

The helpers ``ssh_run`` and ``http_request`` reach the testbed from the host the way
Opgrade does: OpenSSH with the tenant's key and the pinned login host key, and HTTP with
the tenant's nginx credentials.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from testbed import api, runtime
from testbed.errors import TestbedError

PREFIX = os.environ.get("OPGRADE_TESTBED_PREFIX", "pt")


def prefixed_name(suffix: str) -> str:
    """A testbed name for tests: ``OPGRADE_TESTBED_PREFIX`` (default ``pt``) + ``suffix``.

    Two pytest sessions on one machine (two developers, two worktrees) each set their own
    prefix so that one session's teardown never removes the other's testbeds.
    """
    return f"{PREFIX}{suffix}"


SHARED = {"exemplary": prefixed_name("ex"), "leaky": prefixed_name("lk")}


SERVING_LOCK = os.environ.get("OPGRADE_SERVING_LOCK", "/tmp/opgrade-serving.lock")  # noqa: S108 (one per machine)


@contextmanager
def serving_exclusive(*, wait_s: float = 1800, what: str = "") -> Iterator[float]:
    """Hold the machine's serving lock: tests that load LLM servers (each in a weighted, capped CPU
    cgroup) take it, so servers from the suite's parallel halves never oversubscribe the 2 cores
    (five half-CPU servers at once asked for 2.5 CPUs, and each delivered less than its cgroup
    promises). Yields the seconds waited; waits at most ``wait_s`` (then fails, saying who waits)."""
    import fcntl

    start = time.monotonic()
    with open(SERVING_LOCK, "a+") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - start > wait_s:
                    pytest.fail(f"{what or 'a serving test'} waited {wait_s:.0f} s for {SERVING_LOCK}")
                time.sleep(1.0)
        try:
            yield time.monotonic() - start
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def missing_testbed_requirements() -> str | None:
    """Why the testbed cannot run here, or None."""
    try:
        runtime.preflight()
    except TestbedError as exc:
        return str(exc)
    return None


def require_testbed() -> None:
    """Fail the calling test, naming what is missing, when the testbed cannot run here: never a
    silent skip (scripts/install-testbed.sh installs the packages; `make test` runs it, as root)."""
    why = missing_testbed_requirements()
    if why:
        pytest.fail(f"the testbed cannot run here: {why} (run scripts/install-testbed.sh as root; `make test` does)")


@contextmanager
def running_testbed(
    profile: str, *, name: str, nodes: int = 2, overrides: dict[str, Any] | None = None
) -> Iterator[api.TestbedInfo]:
    """Bring a testbed up for the block and always remove it afterwards."""
    require_testbed()
    try:
        yield api.up(profile, name=name, nodes=nodes, overrides=overrides)
    finally:
        if os.environ.get("OPGRADE_TESTBED_KEEP") != "1":
            api.down(name)


@pytest.fixture(scope="session")
def testbed_exemplary() -> Iterator[api.TestbedInfo]:
    with running_testbed("exemplary", name=SHARED["exemplary"]) as info:
        yield info


@pytest.fixture(scope="session")
def testbed_leaky() -> Iterator[api.TestbedInfo]:
    with running_testbed("leaky", name=SHARED["leaky"]) as info:
        yield info


def ssh_run(
    info: api.TestbedInfo, tenant_id: str, command: str, *, host: str | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` over SSH as tenant ``tenant_id`` on the login node (or ``host``)."""
    tenant = info.tenant(tenant_id)
    target = host or info.login_addr
    key = info.login_host_key if target == info.login_addr else _node_host_key(info, target)
    with tempfile.NamedTemporaryFile("w", suffix=".known_hosts", delete=False) as kh:
        kh.write(f"{target} {key}\n")
    try:
        return subprocess.run(
            [
                "ssh", "-i", tenant.private_key, "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={kh.name}",
                "-o", "LogLevel=ERROR", f"{tenant.user}@{target}", command,
            ],
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    finally:
        os.unlink(kh.name)


@contextmanager
def job_held(info: api.TestbedInfo, tenant_id: str, node: str, *, wait_s: float = 30) -> Iterator[str]:
    """Hold a short job of ``tenant_id`` on ``node`` (its Slurm name) while the block runs, as a
    tenant must before SSH to a compute node under ``ssh.restrict_to_jobs`` (pam_slurm_adopt);
    yields the job id and cancels it after."""
    submitted = ssh_run(
        info, tenant_id, f"sbatch --parsable -w {node} -N1 -n1 -t 10 -J hold -o /dev/null --wrap 'sleep 600'"
    )
    job = submitted.stdout.strip().split(";")[0]
    if submitted.returncode != 0 or not job.isdigit():
        raise TestbedError(f"no job held on {node}: {submitted.stderr.strip()}")
    try:
        deadline = time.monotonic() + wait_s
        while ssh_run(info, tenant_id, f"squeue -h -j {job} -o %T").stdout.strip() != "RUNNING":
            if time.monotonic() > deadline:
                raise TestbedError(f"the job held on {node} did not start within {wait_s:g}s")
            time.sleep(0.5)
        yield job
    finally:
        ssh_run(info, tenant_id, f"scancel {job}")


def _node_host_key(info: api.TestbedInfo, address: str) -> str:
    for node in info.nodes.values():
        if node["address"] == address:
            return str(node["host_key"])
    raise TestbedError(f"no node at {address}")


def http_request(
    url: str,
    *,
    auth: tuple[str, str] | None = None,
    method: str = "GET",
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 10,
) -> tuple[int, str]:
    """One HTTP request; returns (status, body text) for every status, errors included."""
    hdrs = dict(headers or {})
    if auth:
        hdrs["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    req = urllib.request.Request(url, method=method, data=data, headers=hdrs)  # noqa: S310 - test URLs
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def http_json(url: str, **kwargs: Any) -> tuple[int, Any]:
    code, body = http_request(url, **kwargs)
    try:
        return code, json.loads(body)
    except json.JSONDecodeError:
        return code, body
