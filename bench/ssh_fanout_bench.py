"""SSH fan-out benchmark: Opgrade's transport vs parallel-ssh vs Ansible ad-hoc, same targets, same run.

One three-command probe (``uname -r``, ``nproc``, ``cat /proc/loadavg``) runs across N real OpenSSH
targets on loopback. Each tool runs in its own subprocess so that wall time and CPU (user+sys of the
process tree, from ``RUSAGE_CHILDREN``) are measured the same way for all three, including their
start-up. The sshd side's CPU is reported too: every tool's handshakes cost the servers, and on this
machine servers and clients share the same cores.

Targets: OpenSSH listens on at most 16 sockets per sshd, so N targets are ceil(N/16) sshd processes,
each on 16 loopback addresses (127.0.<j>.1-16, one port). Every target is a separate TCP endpoint
and a separate SSH connection to every client; targets on one sshd share its host key.

Fairness notes:
* Concurrency is the same for all: Opgrade's fan-out limit = parallel-ssh pool_size = Ansible forks.
* Two modes. ``joined``: the three commands in one remote shell (one SSH channel per host), the
  way Opgrade's probes batch their commands and the way an Ansible ``shell`` task runs them.
  ``separate``: one channel per command on one connection per host (Opgrade, parallel-ssh).
  Ansible gets ``pipelining`` on, ControlPersist, and one ad-hoc ``shell`` task (joined).
* Opgrade verifies pinned host keys; Ansible verifies against a known_hosts file we write;
  parallel-ssh does no host key verification (its default).
* The floor is OpenSSH's own client: ``ssh -o BatchMode=yes host true``, one connection at a time,
  client CPU per connection, with its default key exchange and with curve25519.

Usage: ``.venv/bin/python bench/ssh_fanout_bench.py [--targets 64,256] [--concurrency 50]``
(needs root, /usr/sbin/sshd, and ``pip install -r requirements-bench.txt``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COMMANDS = ("uname -r", "nproc", "cat /proc/loadavg")


# ------------------------------------------------------------------------------------------------
# Workers: each runs in its own process and prints one JSON line.
# ------------------------------------------------------------------------------------------------


def worker_opgrade(spec: dict) -> dict:
    from probes.fanout import fan_out
    from probes.transport import Command, Credentials, Endpoint, HostKey, SshPool, Timeouts

    credentials = Credentials(username=spec["user"], private_key=Path(spec["key"]).read_text())
    endpoints = [
        Endpoint(host=t["host"], port=t["port"], host_keys=(HostKey(t["key_type"], t["fingerprint"]),))
        for t in spec["targets"]
    ]
    # "joined": the three commands in one shell session, as Opgrade's own probes batch their
    # commands (node_inventory); "separate": one channel (remote process) per command.
    joined = spec["mode"] == "joined"
    commands = [Command("; ".join(COMMANDS))] if joined else [Command(c) for c in COMMANDS]

    with SshPool(
        credentials=credentials, timeouts=Timeouts(connect_s=30, banner_s=60, handshake_s=60)
    ) as pool:

        def probe(endpoint: Endpoint) -> list[str]:
            conn = pool.connection(endpoint)
            results = [conn.run(c, timeout_s=60) for c in commands]
            if not all(r.ok for r in results):
                raise RuntimeError(f"{endpoint.label}: {[r.exit_code for r in results]}")
            return [r.stdout for r in results]

        outcomes = fan_out(endpoints, probe, max_concurrency=spec["concurrency"])
    errors = [f"{o.item.label}: {o.error!r}" for o in outcomes if not o.ok]
    return {"ok": len(outcomes) - len(errors), "errors": errors[:5]}


def worker_pssh(spec: dict) -> dict:
    from pssh.clients import ParallelSSHClient
    from pssh.config import HostConfig

    hosts = [t["host"] for t in spec["targets"]]
    config = [
        HostConfig(port=t["port"], user=spec["user"], private_key=spec["key"], num_retries=1, timeout=60)
        for t in spec["targets"]
    ]
    client = ParallelSSHClient(
        hosts, host_config=config, pool_size=spec["concurrency"], timeout=60, num_retries=1
    )
    failed: set[int] = set()
    errors: list[str] = []
    for command in ["; ".join(COMMANDS)] if spec["mode"] == "joined" else COMMANDS:
        output = client.run_command(command, stop_on_errors=False)
        client.join(output)
        for index, host_output in enumerate(output):
            if host_output.exception is not None:
                failed.add(index)
                errors.append(repr(host_output.exception))
                continue
            list(host_output.stdout or [])
            if host_output.exit_code != 0:
                failed.add(index)
    return {"ok": len(hosts) - len(failed), "errors": errors[:5]}


WORKERS = {"opgrade": worker_opgrade, "opgrade-nb": worker_opgrade, "pssh": worker_pssh}
# (tool, mode) in the order they run; Ansible ad-hoc is always one shell task ("joined").
# "opgrade-nb": Opgrade without the remote `timeout` backstop (Timeouts.remote_backstop=False).
RUNS = [
    ("opgrade", "joined"),
    ("opgrade-nb", "joined"),
    ("pssh", "joined"),
    ("opgrade", "separate"),
    ("pssh", "separate"),
    ("ansible", "joined"),
]


# ------------------------------------------------------------------------------------------------
# Orchestration
# ------------------------------------------------------------------------------------------------


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(
    argv: list[str], *, env: dict[str, str] | None = None, timeout_s: float = 1800
) -> tuple[float, float, str]:
    """Run argv to completion; return (wall s, CPU s of its whole process tree, stdout)."""
    cpu0, t0 = _children_cpu(), time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout_s, check=False)
    wall, cpu = time.monotonic() - t0, _children_cpu() - cpu0
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, cpu, proc.stdout


def start_targets(workdir: Path, count: int, user_pub: Path) -> tuple[list, list[dict]]:
    from tests.sshd import MAX_LISTEN_SOCKS, free_port, start_sshd

    servers, targets = [], []
    for j in range(math.ceil(count / MAX_LISTEN_SOCKS)):
        port = free_port()
        listen = [
            (f"127.0.{j + 1}.{i + 1}", port) for i in range(min(MAX_LISTEN_SOCKS, count - len(targets)))
        ]
        server = start_sshd(
            workdir / f"sshd{j}", authorized_public_keys=[user_pub], listen=listen, log_level="ERROR"
        )
        servers.append(server)
        fp, kt = server.host_key_fingerprint, server.host_key_type
        pub = server.host_key.with_suffix(".pub").read_text().split()
        targets += [
            {"host": h, "port": p, "fingerprint": fp, "key_type": kt, "pubkey": f"{pub[0]} {pub[1]}"}
            for h, p in listen
        ]
    return servers, targets


def run_ansible(workdir: Path, spec: dict, forks: int) -> tuple[float, float, int]:
    ansible = Path(sys.executable).parent / "ansible"
    inventory = workdir / "inventory.ini"
    known_hosts = workdir / "known_hosts"
    lines = ["[targets]"]
    for i, t in enumerate(spec["targets"]):
        lines.append(f"t{i:04d} ansible_host={t['host']} ansible_port={t['port']}")
    lines += [
        "[all:vars]",
        f"ansible_user={spec['user']}",
        f"ansible_ssh_private_key_file={spec['key']}",
        "ansible_python_interpreter=/usr/bin/python3",
    ]
    inventory.write_text("\n".join(lines) + "\n")
    known_hosts.write_text("".join(f"[{t['host']}]:{t['port']} {t['pubkey']}\n" for t in spec["targets"]))
    home = workdir / "ansible-home"
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "ANSIBLE_HOME": str(home),
        "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(home / "cp"),
        "ANSIBLE_SSH_ARGS": f"-o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile={known_hosts} "
        "-o StrictHostKeyChecking=yes -o IdentitiesOnly=yes",
        "ANSIBLE_GATHERING": "explicit",
        "ANSIBLE_STDOUT_CALLBACK": "oneline",
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "True",
    }
    argv = [
        str(ansible),
        "all",
        "-i",
        str(inventory),
        "-f",
        str(forks),
        "-m",
        "shell",
        "-a",
        "; ".join(COMMANDS),
    ]
    cpu0, t0 = _children_cpu(), time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=3600, check=False)
    wall, cpu = time.monotonic() - t0, _children_cpu() - cpu0
    ok = sum(1 for line in proc.stdout.splitlines() if "| CHANGED |" in line or "| SUCCESS |" in line)
    # Tear down the ControlPersist masters it left behind (they belong to this run: our pids only).
    for sock in (home / "cp").glob("*"):
        subprocess.run(
            ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "x"], capture_output=True, check=False
        )
    if ok != len(spec["targets"]):
        sys.stderr.write(proc.stdout[-1500:] + proc.stderr[-1500:])
    return wall, cpu, ok


def openssh_floor(spec: dict, workdir: Path, samples: int) -> dict[str, float]:
    known_hosts = workdir / "known_hosts_floor"
    known_hosts.write_text("".join(f"[{t['host']}]:{t['port']} {t['pubkey']}\n" for t in spec["targets"]))
    out: dict[str, float] = {}
    for label, extra in (("default kex", []), ("curve25519", ["-o", "KexAlgorithms=curve25519-sha256"])):
        cpu0, t0 = _children_cpu(), time.monotonic()
        for t in spec["targets"][:samples]:
            argv = [
                "ssh", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", spec["key"],
                "-o", f"UserKnownHostsFile={known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-p", str(t["port"]), *extra, f"{spec['user']}@{t['host']}", "true",
            ]  # fmt: skip
            subprocess.run(argv, check=True, capture_output=True, timeout=60)
        n = min(samples, len(spec["targets"]))
        out[label] = (_children_cpu() - cpu0) / n
        out[label + " wall"] = (time.monotonic() - t0) / n
    return out


def bench(count: int, concurrency: int, workdir: Path, user_key: Path, user: str, runs: list) -> dict:
    servers, targets = start_targets(workdir / f"n{count}", count, user_key.with_suffix(".pub"))
    try:
        spec = {"user": user, "key": str(user_key), "targets": targets, "concurrency": concurrency}
        spec_path = workdir / f"spec{count}.json"
        row: dict = {"n": count}

        def server_cpu() -> float:
            return sum(s.cpu_seconds() for s in servers)

        for name, mode in runs:
            if name == "ansible":
                continue
            spec_path.write_text(json.dumps({**spec, "mode": mode, "backstop": name != "opgrade-nb"}))
            s0 = server_cpu()
            wall, cpu, stdout = timed([sys.executable, __file__, "--worker", name, "--spec", str(spec_path)])
            row[f"{name} {mode}"] = {
                "wall": wall,
                "cpu": cpu,
                "sshd_cpu": server_cpu() - s0,
                **json.loads(stdout),
            }
        s0 = server_cpu()
        wall, cpu, ok = run_ansible(workdir / f"n{count}", spec, concurrency)
        row["ansible joined"] = {
            "wall": wall,
            "cpu": cpu,
            "sshd_cpu": server_cpu() - s0,
            "ok": ok,
            "errors": [],
        }
        row["floor"] = openssh_floor(spec, workdir / f"n{count}", samples=min(16, count))
        return row
    finally:
        for server in servers:
            server.stop()


def print_table(rows: list[dict], concurrency: int, runs: list) -> None:
    print(
        f"\nSSH fan-out, 3 commands per target, concurrency {concurrency}, {os.cpu_count()} CPUs (loopback)"
    )
    head = (
        f"{'N':>4} {'tool':<17} {'ok':>5} {'wall s':>8} {'CPU s':>7} {'CPU ms/host':>11} {'sshd CPU s':>10}"
    )
    head += f" {'wall vs ours':>12} {'CPU vs ours':>11}"
    print(head)
    for row in rows:
        ours = row["opgrade joined"]
        for tool, mode in runs:
            name = f"{tool} {mode}"
            r = row[name]
            print(
                f"{row['n']:>4} {name:<17} {r['ok']:>5} {r['wall']:>8.2f} {r['cpu']:>7.2f} "
                f"{1000 * r['cpu'] / row['n']:>11.1f} {r['sshd_cpu']:>10.2f} "
                f"{r['wall'] / ours['wall']:>11.2f}x {r['cpu'] / ours['cpu']:>10.2f}x"
            )
            for error in r["errors"][:2]:
                print(f"       error: {error}")
        f = row["floor"]
        print(
            f"{row['n']:>4} floor: OpenSSH client `ssh host true`, one at a time: "
            f"{1000 * f['default kex']:.1f} ms CPU/conn (default kex), "
            f"{1000 * f['curve25519']:.1f} ms CPU/conn (curve25519); wall {1000 * f['default kex wall']:.0f} ms/conn"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="64,256")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--worker", choices=sorted(WORKERS))
    parser.add_argument("--spec")
    parser.add_argument("--joined-only", action="store_true", help="skip the one-channel-per-command runs")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(WORKERS[args.worker](json.loads(Path(args.spec).read_text()))))
        return

    from tests.sshd import keygen

    if os.geteuid() != 0 or not shutil.which("ssh"):
        sys.exit("run as root with openssh-client and openssh-server installed (scripts/install-bench.sh)")
    import getpass

    with tempfile.TemporaryDirectory(prefix="opgrade-bench-") as tmp:
        workdir = Path(tmp)
        user_key = keygen(workdir / "id_ed25519")
        runs = [r for r in RUNS if not (args.joined_only and r[1] == "separate")]
        rows = []
        for count in (int(x) for x in args.targets.split(",")):
            rows.append(bench(count, args.concurrency, workdir, user_key, getpass.getuser(), runs))
            print(json.dumps(rows[-1]), file=sys.stderr)
        print_table(rows, args.concurrency, runs)


if __name__ == "__main__":
    main()
