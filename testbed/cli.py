"""Command line of the testbed: ``python -m testbed up|down|status|inject-fault|creds``.

Each command parses its arguments, calls one function of testbed.api and prints the
result; errors the user can fix (no root, missing package, bad profile) print one clear
line and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from testbed import api
from testbed.agent import FAULT_KINDS
from testbed.errors import TestbedError
from testbed.profiles import parse_set, profile_names


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m testbed", description="Opgrade cluster-in-a-box testbed")
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="bring a testbed up (idempotent)")
    u.add_argument("profile", help=f"profile name ({', '.join(profile_names())}) or path to a YAML file")
    u.add_argument("--name", required=True)
    u.add_argument("--nodes", type=int)
    u.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KNOB=VALUE",
        help="override one profile knob, e.g. slurm.private_data=false (repeatable)",
    )
    u.add_argument("--json", action="store_true", help="print the testbed info as JSON")
    d = sub.add_parser("down", help="remove a testbed and everything it made")
    d.add_argument("name")
    s = sub.add_parser("status", help="list testbeds")
    s.add_argument("--json", action="store_true")
    f = sub.add_parser("inject-fault", help="inject a fault into a node")
    f.add_argument("name")
    f.add_argument("node")
    f.add_argument("kind", choices=FAULT_KINDS)
    c = sub.add_parser("creds", help="print (and optionally write) the tenant credentials")
    c.add_argument("name")
    c.add_argument("--out", help="directory to copy the tenant private keys into")
    i = sub.add_parser("info", help="print everything about one testbed as JSON (secrets included)")
    i.add_argument("name")
    h = sub.add_parser("host-ca", help="print the testbed's SSH host CA public key (to pin it)")
    h.add_argument("name")
    r = sub.add_parser("redteam", help="apply (or revert) a red-team mutation no profile knob makes")
    r.add_argument("name", nargs="?")
    r.add_argument("mutation", nargs="?")
    r.add_argument("--revert", action="store_true")
    r.add_argument(
        "--list", action="store_true", help="list the mutations and the probe expected to catch each"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "up":
            t0 = time.monotonic()
            info = api.up(args.profile, name=args.name, nodes=args.nodes, overrides=parse_set(args.set))
            if args.json:
                print(json.dumps(info.as_dict(), indent=1))
            else:
                print(
                    f"testbed {info.name} ({info.profile}) up in {time.monotonic() - t0:.1f}s: "
                    f"login {info.login_addr}:22, API {info.api_url}, metrics {info.metrics_url}, "
                    f"nodes {', '.join(sorted(info.nodes))}"
                )
                for t in info.tenants:
                    print(f"  ssh -i {t.private_key} {t.user}@{info.login_addr}")
        elif args.cmd == "down":
            left = api.down(args.name)
            if any(left.values()):
                print(f"down {args.name}: left over: {left}", file=sys.stderr)
                return 1
            print(f"testbed {args.name} removed")
        elif args.cmd == "status":
            rows = api.status()
            if args.json:
                print(json.dumps(rows, indent=1))
            elif not rows:
                print("no testbeds")
            for r in rows if not args.json else []:
                profile = "+".join([r["profile"], *r["overrides"]])
                print(
                    f"{r['name']:<10} {profile:<10} {r['phase']:<8} agent={'up' if r['agent_alive'] else 'DEAD'} "
                    f"{r['subnet']} processes={r['processes_alive']} nodes={r['nodes']}"
                )
        elif args.cmd == "inject-fault":
            print(json.dumps(api.inject_fault(args.name, args.node, args.kind)))
        elif args.cmd == "creds":
            print(json.dumps(api.creds(args.name, args.out), indent=1))
        elif args.cmd == "host-ca":
            key = api.info(args.name).host_ca_public_key
            if not key:
                raise TestbedError(f"testbed {args.name} has no host CA (made before host certificates existed)")
            print(key)
        elif args.cmd == "info":
            print(json.dumps(api.info(args.name).as_dict(), indent=1))
        elif args.cmd == "redteam":
            from testbed import redteam

            if args.list or not (args.name and args.mutation):
                for m in redteam.MUTATIONS:
                    print(
                        f"{m.name:<32} {m.probe:<22} {m.expect}{'!' if m.critical else ''}  {m.description}"
                    )
                return 0 if args.list else 2
            (redteam.revert if args.revert else redteam.apply)(args.name, args.mutation)
            print(f"{'reverted' if args.revert else 'applied'} {args.mutation} on {args.name}")
    except TestbedError as exc:
        print(f"testbed: {exc}", file=sys.stderr)
        return 2
    return 0
