"""BMC/IPMI reachability results, and the guard that keeps the scan inside the cluster's own /24.

``bmc_reachable`` runs, from a tenant's compute node, a fixed bash script that tries a TCP connect
to IPMI ports (623, 664) and asks ``/redfish/v1/`` over HTTP(S) on each address, each attempt
bounded by ``timeout``. It prints one line per attempt::

    tcp 10.200.1.12 623 open|closed|timeout
    udp 10.200.1.12 623 open|closed|timeout  # an RMCP presence ping answered, not, or cut
    redfish 10.200.1.12 https open|closed|timeout
    redfish 10.200.1.12 - nocurl

Redfish counts only when the answer is a Redfish service root (``"RedfishVersion"``), so an
ordinary web server on 443 (a metrics proxy) is not mistaken for a BMC.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from probes.parsers import ParseError

MAX_ADDRESSES = 32


@dataclass(frozen=True)
class ConnectResult:
    kind: str  # "tcp" | "udp" | "redfish"
    address: str
    port: str  # "623", or "https"/"http" for redfish
    state: str  # "open" | "closed" | "timeout" | "nocurl"


def parse_scan(text: str) -> tuple[ConnectResult, ...]:
    out = []
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if (
            len(parts) != 4
            or parts[0] not in ("tcp", "udp", "redfish")
            or parts[3] not in ("open", "closed", "timeout", "nocurl")
        ):
            raise ParseError(f"not a scan line: {line!r}")
        out.append(ConnectResult(kind=parts[0], address=parts[1], port=parts[2], state=parts[3]))
    return tuple(sorted(out, key=lambda r: (r.address, r.kind, r.port)))


def reachable(results: Iterable[ConnectResult]) -> tuple[ConnectResult, ...]:
    return tuple(r for r in results if r.state == "open")


def unchecked_paths(
    results: Iterable[ConnectResult], addresses: Iterable[str], ports: Iterable[str]
) -> list[str]:
    """Paths the scan could not answer for: a missing line for an address's port, UDP ping or Redfish
    scheme, a UDP try cut before it finished (``udp ... timeout``) or Redfish unasked (``nocurl``).

    A TCP or Redfish ``timeout`` is an answer (the port is filtered), after the script's longer retry.
    """
    seen = {(r.address, r.kind, r.port): r.state for r in results}
    out = []
    for address in addresses:
        if seen.get((address, "redfish", "-")) == "nocurl":
            out.append(f"redfish {address} (no curl on the node)")
            wanted = [("tcp", p) for p in ports] + [("udp", "623")]
        else:
            wanted = [("tcp", p) for p in ports] + [("udp", "623"), ("redfish", "https"), ("redfish", "http")]
        for kind, port in wanted:
            state = seen.get((address, kind, port))
            if state is None:
                out.append(f"{kind} {address} {port} (no result)")
            elif kind == "udp" and state == "timeout":
                out.append(f"udp {address} 623 (the ping was cut before it finished)")
    return out


def scan_targets(
    node_address: str,
    *,
    known: Iterable[str] = (),
    prefix: int = 24,
    well_known_hosts: Iterable[int] = (1, 2, 250, 251, 252, 253, 254),
) -> tuple[str, ...]:
    """The addresses to try: known cluster hosts plus conventional BMC host numbers, all in the node's /24.

    Anything outside the node's own network is refused (never scanned), the list is bounded by
    :data:`MAX_ADDRESSES`, and only private (RFC 1918) or loopback networks are accepted.
    """
    node = ipaddress.ip_address(node_address)
    if node.version != 4:
        raise ValueError("only IPv4 node addresses are supported")
    net = ipaddress.ip_network(f"{node_address}/{prefix}", strict=False)
    if not (net.is_private or net.is_loopback):
        raise ValueError(f"refusing to scan a non-private network {net}")
    chosen: list[str] = []
    for addr in [*known, *(str(net.network_address + h) for h in well_known_hosts)]:
        ip = ipaddress.ip_address(addr)
        if ip in net and ip not in (net.network_address, net.broadcast_address) and str(ip) not in chosen:
            chosen.append(str(ip))
    return tuple(chosen[:MAX_ADDRESSES])
