"""The BMC scan script itself, run by bash against loopback listeners: UDP 623 answers count, every
address gets a line for every path (nothing left unchecked), and a silent address reads closed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading

import pytest

from probes.catalog.bmc_reachable import BMC_SCAN_SCRIPT
from probes.parsers.net import parse_scan, reachable, unchecked_paths


@pytest.fixture(autouse=True)
def _root_and_curl() -> None:
    """The script binds UDP 623 (root) and asks Redfish with curl: without either, fail naming it."""
    if os.geteuid() != 0:
        pytest.fail("the BMC scan script test binds UDP port 623: run it as root")
    if shutil.which("curl") is None:
        pytest.fail("curl is missing: run scripts/install-testbed.sh as root (`make test` does)")


def _free_tcp_listener(address: str) -> socket.socket:
    s = socket.socket()
    s.bind((address, 0))
    s.listen(8)
    return s


def test_the_script_sees_an_rmcp_answer_and_names_every_path():
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.3", 623))
    udp.settimeout(0.2)
    stop = threading.Event()

    def answer():
        while not stop.is_set():
            try:
                _, peer = udp.recvfrom(512)
            except TimeoutError:
                continue
            udp.sendto(b"\x06\x00\xff\x06", peer)

    tcp = _free_tcp_listener("127.0.0.3")
    port = str(tcp.getsockname()[1])
    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        done = subprocess.run(
            ["bash", "-c", BMC_SCAN_SCRIPT, "bmc-scan", "1", port, "127.0.0.3", "127.0.0.4"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        stop.set()
        thread.join(timeout=5)
        udp.close()
        tcp.close()
    results = parse_scan(done.stdout)
    opened = {(r.kind, r.address, r.port) for r in reachable(results)}
    assert ("udp", "127.0.0.3", "623") in opened
    assert ("tcp", "127.0.0.3", port) in opened
    assert not any(r.address == "127.0.0.4" for r in reachable(results))
    assert unchecked_paths(results, ["127.0.0.3", "127.0.0.4"], [port]) == []
