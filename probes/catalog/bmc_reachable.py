"""bmc_reachable: can a tenant's compute node reach a BMC (IPMI or Redfish)?

A BMC reachable from tenant nodes lets a tenant attack the management plane of machines other
tenants will use next. From each compute node, as a tenant, a fixed bash script tries TCP 623
and 664 (IPMI/RMCP+), sends an RMCP presence ping to UDP 623 (IPMI over LAN proper; only an
answer counts) and asks ``/redfish/v1/`` over HTTPS/HTTP on a bounded list of addresses:
the cluster's own hosts plus the conventional BMC host numbers, all inside the node's own /24 and
nowhere else (probes/parsers/net.py), each try cut at ``connect_timeout_s`` and all in parallel.

A try that times out is tried once more with ``2 * connect_timeout_s + 2`` (a starved node's bash or
curl can spend the first second starting), and the UDP ping is sent up to three times. Fail closed:
every address must show a line for every port, the UDP ping and both Redfish schemes; a missing line,
a UDP try cut before it could finish, or a node without curl (Redfish unasked) is an unchecked path,
so a scan that finds nothing open is then an error, never a pass.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, compute_nodes, run
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Scope, Target, node_name
from probes.parsers import ParseError
from probes.parsers.net import parse_scan, reachable, scan_targets, unchecked_paths
from probes.transport import Command

BMC_SCAN_SCRIPT = r"""t="$1"; shift; ports="$1"; shift
for a in "$@"; do
  for p in $ports; do
    ( if timeout "$t" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$a" "$p" 2>/dev/null; then echo "tcp $a $p open";
      else rc=$?; if [ "$rc" != 124 ]; then echo "tcp $a $p closed";
      elif timeout "$((2 * t + 2))" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$a" "$p" 2>/dev/null; then echo "tcp $a $p open";
      else rc=$?; if [ "$rc" = 124 ]; then echo "tcp $a $p timeout"; else echo "tcp $a $p closed"; fi; fi; fi ) &
  done
  ( if timeout "$((3 * t + 6))" bash -c 'exec 3<>"/dev/udp/$0/623" || exit 1
        for i in 1 2 3; do
          printf "\x06\x00\xff\x06\x00\x00\x11\xbe\x80\x00\x00\x00" >&3 2>/dev/null || continue
          if IFS= read -r -t "$1" -N 1 x <&3 2>/dev/null; then exit 0; fi
          sleep 0.2
        done
        exit 1' "$a" "$((t + 1))" 2>/dev/null; then echo "udp $a 623 open";
    else rc=$?; if [ "$rc" = 124 ]; then echo "udp $a 623 timeout"; else echo "udp $a 623 closed"; fi; fi ) &
  ( if command -v curl >/dev/null 2>&1; then
      for s in https http; do
        body=$(curl -sk -m "$t" "$s://$a/redfish/v1/" 2>/dev/null); rc=$?
        if [ "$rc" = 28 ]; then body=$(curl -sk -m "$((2 * t + 2))" "$s://$a/redfish/v1/" 2>/dev/null); rc=$?; fi
        if printf %s "$body" | grep -q '"RedfishVersion"'; then echo "redfish $a $s open";
        elif [ "$rc" = 28 ]; then echo "redfish $a $s timeout"; else echo "redfish $a $s closed"; fi
      done
    else echo "redfish $a - nocurl"; fi ) &
done
wait
"""
MY_ADDRESS = Command("hostname -I")


def scan_command(timeout_s: int, ports: str, addresses: tuple[str, ...]) -> Command:
    """The scan: a fixed script; the timeout, port list and each address are separate quoted words."""
    for port in ports.split():
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bad port {port!r}")
    for address in addresses:
        ipaddress.ip_address(address)  # only literal addresses ever reach the shell
    names = {f"a{i}": a for i, a in enumerate(addresses)}
    template = "bash -c {script} bmc-scan {t} {ports} " + " ".join(f"{{{n}}}" for n in names)
    return Command(template, script=BMC_SCAN_SCRIPT, t=int(timeout_s), ports=ports, **names)


def _first_private_ipv4(text: str) -> str | None:
    for token in text.split():
        try:
            ip = ipaddress.ip_address(token)
        except ValueError:
            continue
        if ip.version == 4 and ip.is_private and not ip.is_loopback:
            return str(ip)
    return None


@register
class BmcReachable(CatalogProbe, definition="bmc_reachable"):
    def targets(self, ctx: ProbeContext) -> list[Target]:
        return [Target(kind=Scope.NODE, name=node_name(e), endpoint=e) for e in compute_nodes(ctx)]

    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        mine = run(ctx, target.endpoint, MY_ADDRESS, timeout_s=10, what="hostname -I")
        address = _first_private_ipv4(mine.stdout)
        if address is None:
            raise Abort(
                Outcome.ERROR, "the node reports no private IPv4 address to scan from", ctx.evidence(mine)
            )
        known = [e.host for e in [*ctx.nodes, *([ctx.login] if ctx.login else [])]]
        known = [h for h in known if _is_ip(h)]
        addresses = scan_targets(address, known=[address, *known])
        timeout_s = int(self.setting(ctx, "connect_timeout_s"))
        result = run(
            ctx,
            target.endpoint,
            scan_command(timeout_s, str(self.setting(ctx, "ports")), addresses),
            timeout_s=timeout_s * 6 + 20,
            what="BMC scan",
        )
        evidence = ctx.evidence(result, scanned=list(addresses))
        try:
            results = parse_scan(result.stdout)
        except ParseError as exc:
            raise Abort(Outcome.ERROR, f"could not read the scan: {exc}", evidence) from exc
        open_ = reachable(results)
        evidence["open"] = [f"{r.kind} {r.address} {r.port}" for r in open_]
        unchecked = unchecked_paths(results, addresses, str(self.setting(ctx, "ports")).split())
        evidence["unchecked"] = unchecked
        if open_:
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    critical=True,
                    evidence=evidence,
                    summary=f"BMC reachable from a tenant node: {', '.join(evidence['open'][:5])}",
                )
            ]
        if unchecked:
            raise Abort(
                Outcome.ERROR,
                f"nothing answered, but {len(unchecked)} paths were not checked: {', '.join(unchecked[:5])}",
                evidence,
            )
        return [
            self.finding(
                target,
                Outcome.PASS,
                evidence=evidence,
                summary=f"no IPMI/Redfish answer on {len(addresses)} addresses of {address}'s /24",
            )
        ]


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False
