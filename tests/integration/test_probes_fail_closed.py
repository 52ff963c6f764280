"""Probes that cannot be fooled, on a real testbed (issue 13): a path a probe could not look at
never passes, and a failed node counts again only once it is truly healthy.

One two-node ``exemplary`` testbed with two knobs off: accounting (slurmdbd's PrivateData) leaks
other tenants' jobs, and the operator never replaces a bad node (``remediation.policy=never``), so
an operator's un-drain loop is the only thing that brings a node back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from probes.catalog import probe_get
from probes.catalog.base import Outcome
from probes.matrix import probe_execute
from probes.matrix import testbed_context as context_for
from testbed.api import TestbedInfo
from testbed.pytest_helpers import prefixed_name, running_testbed

pytestmark = [pytest.mark.testbed, pytest.mark.integration]
FAST = {"scheduler_privacy.control_wait_s": 30, "scheduler_privacy.retry_wait_s": 30}


@pytest.fixture(scope="module")
def testbed() -> Iterator[TestbedInfo]:
    overrides = {"slurm": {"accounting_private_data": False}, "remediation": {"policy": "never"}}
    with running_testbed("exemplary", name=prefixed_name("fc"), nodes=2, overrides=overrides) as info:
        yield info


def slurmdbd_pid(info: TestbedInfo) -> int:
    state = json.loads((Path(info.slurm_conf).parents[1] / "state.json").read_text())
    return int(state["processes"]["slurmdbd"]["pid"])


def privacy(info: TestbedInfo, **settings: object):
    """The finding for the pair tenant-a -> tenant-b (the probe runs both directions at once)."""
    ctx = context_for(info.name, settings={**FAST, **settings})
    try:
        findings = probe_execute(probe_get("scheduler_privacy")(), ctx)
    finally:
        ctx.close()
    assert len(findings) == 2 and len({f.outcome for f in findings}) == 1, [f.summary for f in findings]
    return findings[0]


def test_the_accounting_leak_is_caught_with_slurmdbd_up(testbed):
    finding = privacy(testbed)
    assert finding.outcome is Outcome.FAIL and finding.critical, finding.summary
    assert [h["path"] for h in finding.evidence["hits"]] == ["sacct -a"]


def test_slurmdbd_stopped_for_12_s_during_the_probe_still_catches_the_leak(testbed):
    """The reported case: this used to turn the real sacct leak into a pass."""
    pid = slurmdbd_pid(testbed)
    os.kill(pid, signal.SIGSTOP)
    timer = threading.Timer(12, os.kill, (pid, signal.SIGCONT))
    timer.start()
    try:
        finding = privacy(testbed)
    finally:
        timer.join()
        os.kill(pid, signal.SIGCONT)
    assert finding.outcome is Outcome.FAIL and finding.critical, finding.summary
    assert [h["path"] for h in finding.evidence["hits"]] == ["sacct -a"]


def test_slurmdbd_down_for_the_whole_probe_is_an_error_never_a_pass(testbed):
    pid = slurmdbd_pid(testbed)
    os.kill(pid, signal.SIGSTOP)
    try:
        finding = privacy(
            testbed, **{"scheduler_privacy.control_wait_s": 8, "scheduler_privacy.retry_wait_s": 8}
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    assert finding.outcome is Outcome.ERROR, finding.summary
    assert finding.evidence["paths"]["sacct -a"]["status"] == "unchecked"
    assert finding.evidence["paths"]["squeue -a"]["status"] == "checked"


def test_an_undrain_loop_on_the_still_faulty_node_does_not_make_the_pool_whole(testbed):
    stop = threading.Event()

    def undrain() -> None:  # a careless operator: resume every drained node, fix nothing
        env = {**os.environ, "SLURM_CONF": testbed.slurm_conf}
        while not stop.wait(1.0):
            for node in ("node1", "node2"):
                subprocess.run(
                    ["scontrol", "update", f"nodename={node}", "state=resume"],
                    env=env,
                    capture_output=True,
                    timeout=10,
                    check=False,
                )

    loop = threading.Thread(target=undrain, daemon=True)
    loop.start()
    ctx = context_for(
        testbed.name,
        disruptive=True,
        settings={"node_replacement_time.replace_timeout_s": 40, "node_replacement_time.victim_stable_s": 10},
    )
    try:
        start = time.monotonic()
        (finding,) = probe_execute(probe_get("node_replacement_time")(), ctx)
    finally:
        stop.set()
        loop.join(timeout=15)
        ctx.close()
    assert finding.outcome is Outcome.TIMEOUT, finding.summary
    assert time.monotonic() - start >= 40 and finding.value >= 40
