"""Host certificate vs pinned key: what verifying a node through its provider's host CA costs.

One real OpenSSH sshd on loopback presents a host certificate for its ed25519 key. Opgrade's
transport connects to it N times, one connection at a time, in two ways, alternating so that
load on the machine hits both alike:

* ``pinned key``: the analyst pinned this node's key (the fingerprint comparison only);
* ``host cert``: only the CA is pinned; the certificate is parsed and checked with
  ``cryptography`` (CA, signature, type, principal, validity, certified key = proved key).

Each connection is a full TCP connect + key exchange + public-key authentication + close. It
prints the median wall time and this process's CPU per connection for each, and their ratios.

Usage: ``.venv/bin/python bench/host_cert_bench.py [--connections 40]`` (needs /usr/sbin/sshd).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from probes.transport import Credentials, Endpoint, HostKey, connect
from tests.sshd import SSH_KEYGEN, keygen, start_sshd


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="opgrade-certbench-") as tmp:
        d = Path(tmp)
        ca, user, host = keygen(d / "ca"), keygen(d / "user"), keygen(d / "host")
        subprocess.run(
            [SSH_KEYGEN, "-q", "-s", str(ca), "-h", "-I", "node1", "-n", "node1", "-V", "-5m:+1h", f"{host}.pub"],
            check=True, timeout=30,
        )  # fmt: skip
        server = start_sshd(
            d / "sshd", authorized_public_keys=[user.with_suffix(".pub")], host_key=host, log_level="ERROR",
            extra_config=f"HostCertificate {host}-cert.pub\n",
        )  # fmt: skip
        try:
            creds = Credentials(username=server.user, private_key=user.read_text())
            ways = {
                "pinned key": Endpoint(
                    host=server.host, port=server.port,
                    host_keys=(HostKey(server.host_key_type, server.host_key_fingerprint),),
                ),
                "host cert": Endpoint(
                    host=server.host, port=server.port, host_cas=(ca.with_suffix(".pub").read_text(),),
                    principal="node1",
                ),
            }  # fmt: skip
            wall: dict[str, list[float]] = {k: [] for k in ways}
            cpu: dict[str, list[float]] = {k: [] for k in ways}
            for _ in range(args.connections):
                for way, endpoint in ways.items():
                    t0, c0 = time.perf_counter(), time.process_time()
                    conn = connect(endpoint, creds)
                    conn.close()
                    wall[way].append(time.perf_counter() - t0)
                    cpu[way].append(time.process_time() - c0)
                    assert conn.verified_by.startswith("certificate" if way == "host cert" else "pinned")
        finally:
            server.stop()
    print(f"{args.connections} connections each, one at a time, loopback, {os.cpu_count()} CPUs")
    for way in ways:
        print(f"  {way:<10}  wall {statistics.median(wall[way]) * 1000:7.1f} ms   "
              f"client CPU {statistics.median(cpu[way]) * 1000:6.2f} ms")  # fmt: skip
    ratio_wall = statistics.median(wall["host cert"]) / statistics.median(wall["pinned key"])
    ratio_cpu = statistics.median(cpu["host cert"]) / statistics.median(cpu["pinned key"])
    print(f"  host cert / pinned key: wall x{ratio_wall:.2f}, client CPU x{ratio_cpu:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
