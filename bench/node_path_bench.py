"""Node path benchmark (issue 18): a node-scope command through the scheduler vs over direct SSH.

Same testbed, same compute nodes, same tenant, same command (node_inventory's one-round-trip
inventory), through Opgrade's own transport:

* ``ssh``: direct SSH to the node through the login node as a jump host (a direct-tcpip channel,
  the node's pinned host key verified). ``cold``: a new pool per probe, so each one pays the
  login and the node handshakes; ``warm``: one pool, the connections reused (a run's case).
* ``srun``: ``srun --nodelist=NODE -N1 -n1 --immediate --time bash -c <command>`` on the login
  node (:class:`probes.transport.SchedulerConnection`), the tenant's path where SSH to nodes is
  restricted. ``cold``: a new login connection per probe; ``warm``: the login connection reused.

Measured per node and probe: wall time; the client's CPU (this process, user+sys); and the
testbed's CPU (user+sys, children reaped included, of every process in the testbed's network
namespaces: sshd, slurmctld, slurmd and what they reap; slurmstepd's own CPU is only partly seen,
so the srun figure is a floor). Ratios are srun / ssh. Probes run one at a time (no fan-out) so
the figures are per node, not per wave.

Figures (this 2-core machine, shared; exemplary testbed, 2 nodes, 8 reps, 2026-12-01), median per
probe, srun / ssh:

| mode | wall (ssh -> srun) | client CPU | testbed CPU (floor for srun) |
|---|---|---|---|
| cold (new connections per probe) | 0.59-0.65 s -> 0.74-0.77 s: 1.14-1.31x | 0.80-0.85x | 0.70-0.89x |
| warm (a run's reused connections) | 0.19 s -> 0.48-0.55 s: 2.6-2.9x | 0.89x | 3.3-6.5x (10-15 ms -> 50-65 ms) |

So the tenant's path costs about 0.3-0.4 s more per node and command once connections are warm
(the allocation: slurmctld, the prolog, slurmstepd), and less than direct SSH when each probe
would otherwise pay the node's own handshake.

Usage (root): ``.venv/bin/python bench/node_path_bench.py [--name h9bench] [--nodes 2] [--reps 10]``
(brings the testbed up if it is not, and down at the end unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from probes.catalog.node_inventory import INVENTORY, parse_inventory
from probes.transport import (
    Credentials,
    Endpoint,
    HostKey,
    SchedulerConnection,
    SshPool,
)
from testbed import api, runtime
from testbed.layout import NETNS_PREFIX

TICK = os.sysconf("SC_CLK_TCK")


def host_key(line: str) -> HostKey:
    import base64
    import hashlib

    key_type, blob = line.split()[:2]
    digest = base64.b64encode(hashlib.sha256(base64.b64decode(blob)).digest()).decode().rstrip("=")
    return HostKey(key_type, f"SHA256:{digest}")


def testbed_cpu_s(name: str) -> float:
    """user+sys (with reaped children) of every process in the testbed's namespaces, in seconds."""
    inodes = {i for i in (runtime.netns_inode(ns) for ns in runtime.netns_list() if ns.startswith(f"{NETNS_PREFIX}{name}-")) if i}
    total = 0
    for pid in runtime.procs_in(inodes, f"/var/lib/opgrade-testbed/{name}/"):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    return total / TICK


def client_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(name: str, path: str, mode: str, reps: int) -> dict[str, dict[str, float]]:
    info = api.info(name)
    tenant = info.tenant("a")
    creds = Credentials(username=tenant.user, private_key=Path(tenant.private_key).read_text())
    login = Endpoint(host=info.login_addr, port=info.ssh_port, host_keys=(host_key(info.login_host_key),))
    nodes = {n: d for n, d in sorted(info.nodes.items()) if d["status"] == "ready"}
    out: dict[str, dict[str, float]] = {}
    shared = SshPool(credentials=creds) if mode == "warm" else None
    if shared is not None:  # warm: the handshakes are paid before the clock starts
        shared.connection(login)
        for d in nodes.values():
            if path == "ssh":
                shared.connection(Endpoint(host=d["address"], host_keys=(host_key(d["host_key"]),), jump=login))
    try:
        for node, d in nodes.items():
            walls, clients, servers = [], [], []
            for _ in range(reps):
                pool = shared or SshPool(credentials=creds)
                w0, c0, s0 = time.perf_counter(), client_cpu_s(), testbed_cpu_s(name)
                try:
                    if path == "ssh":
                        conn = pool.connection(Endpoint(host=d["address"], host_keys=(host_key(d["host_key"]),), jump=login))
                    else:
                        conn = SchedulerConnection(pool.connection(login), Endpoint(host=d["address"], jump=login, scheduler_node=node))
                    result = conn.run(INVENTORY, timeout_s=60)
                    parse_inventory(result.stdout)  # the answer is a real inventory either way
                finally:
                    if shared is None:
                        pool.close()
                walls.append(time.perf_counter() - w0)
                clients.append(client_cpu_s() - c0)
                servers.append(testbed_cpu_s(name) - s0)
            out[node] = {
                "wall_s": statistics.median(walls),
                "client_cpu_s": statistics.median(clients),
                "testbed_cpu_s": statistics.median(servers),
            }
    finally:
        if shared is not None:
            shared.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--name", default="h9bench")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    # direct SSH without a job on the node (the bench compares the two channels, not a job hold)
    api.up("exemplary", name=args.name, nodes=args.nodes, overrides={"ssh": {"restrict_to_jobs": False}})
    try:
        report: dict[str, object] = {"reps": args.reps}
        for mode in ("cold", "warm"):
            ssh = measure(args.name, "ssh", mode, args.reps)
            srun = measure(args.name, "srun", mode, args.reps)
            rows = {}
            for node in ssh:
                rows[node] = {
                    "ssh": ssh[node], "srun": srun[node],
                    "ratio": {k: round(srun[node][k] / ssh[node][k], 2) if ssh[node][k] else None for k in ssh[node]},
                }  # fmt: skip
            report[mode] = rows
            print(f"\n{mode}: median per probe, one node at a time ({args.reps} reps)")
            print(f"{'node':8} {'metric':14} {'ssh':>9} {'srun':>9} {'srun/ssh':>9}")
            for node, row in rows.items():
                for metric in ("wall_s", "client_cpu_s", "testbed_cpu_s"):
                    print(
                        f"{node:8} {metric:14} {row['ssh'][metric]:9.3f} {row['srun'][metric]:9.3f} "
                        f"{row['ratio'][metric] if row['ratio'][metric] is not None else '-':>9}"
                    )
        Path("/tmp/node_path_bench.json").write_text(json.dumps(report, indent=1))
        print("\nJSON: /tmp/node_path_bench.json")
    finally:
        if not args.keep:
            api.down(args.name)


if __name__ == "__main__":
    main()
