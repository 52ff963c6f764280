"""Listener scan results (``provider_listeners``), judged against an allow-list.

The scan prints one record per line::

    control tcp ME 22 open|closed          # the node's own sshd through the same scanner
    scanned tcp ADDR PORTS TIMEOUTS        # how many TCP ports were tried, how many got no answer
    tcp ADDR PORT open                     # an open TCP port (closed ones are not printed)
    control udp ADDR 33434 refused|silent|open  # does ADDR send ICMP port-unreachable?
    udp ADDR PORT open|closed|silent       # a reply, an ICMP refusal, or nothing (3 tries)
    skip NAME unresolved|not-private
    done

A silent UDP port counts as listening only where the address refused the control port (ICMP
works, so silence means something took the datagram); elsewhere UDP is judged by replies alone,
and the evidence says so. Allowed services are ``PORT/PROTO`` words (``"6817/tcp 514/udp"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from probes.parsers import ParseError

_SPEC = re.compile(r"^\d{1,5}(-\d{1,5})?(,\d{1,5}(-\d{1,5})?)*$")


def port_spec_valid(spec: str, *, allow_empty: bool = False) -> bool:
    """``"1-1024,6817"``: digits, ranges and commas only, every port 1..65535."""
    if not spec:
        return allow_empty
    if not _SPEC.match(spec):
        return False
    return all(0 < int(p) < 65536 for p in re.split(r"[,-]", spec))


@dataclass(frozen=True)
class ListenerScan:
    addresses: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()  # "ADDR:PORT/PROTO"
    allowed_open: tuple[str, ...] = ()
    udp_inference: dict[str, str] = field(default_factory=dict)  # addr -> "icmp" | "replies only"
    tcp_tried: dict[str, int] = field(default_factory=dict)
    tcp_no_answer: dict[str, int] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.problems

    def evidence(self) -> dict[str, object]:
        return {
            "addresses": list(self.addresses),
            "unexpected": list(self.unexpected),
            "allowed_open": list(self.allowed_open),
            "tcp_ports_tried": dict(self.tcp_tried),
            "tcp_ports_without_answer": dict(self.tcp_no_answer),
            "udp_inference": dict(self.udp_inference),
            "skipped": list(self.skipped),
            "problems": list(self.problems),
        }


def parse_listener_scan(text: str, *, allowed: str) -> ListenerScan:
    allow = {w.strip().lower() for w in allowed.split() if w.strip()}
    own_tcp = None
    addresses: list[str] = []
    tcp_open: list[tuple[str, int]] = []
    udp: list[tuple[str, int, str]] = []
    udp_control: dict[str, str] = {}
    tried: dict[str, int] = {}
    no_answer: dict[str, int] = {}
    skipped: list[str] = []
    done = False
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        try:
            if parts[:2] == ["control", "tcp"] and len(parts) == 5:
                own_tcp = parts[4] == "open"
            elif parts[:2] == ["control", "udp"] and len(parts) == 5:
                udp_control[parts[2]] = parts[4]
            elif parts[:2] == ["scanned", "tcp"] and len(parts) == 5:
                addresses.append(parts[2])
                tried[parts[2]], no_answer[parts[2]] = int(parts[3]), int(parts[4])
            elif parts[0] == "tcp" and len(parts) == 4 and parts[3] == "open":
                tcp_open.append((parts[1], int(parts[2])))
            elif parts[0] == "udp" and len(parts) == 4 and parts[3] in ("open", "closed", "silent"):
                udp.append((parts[1], int(parts[2]), parts[3]))
            elif parts[0] == "skip" and len(parts) == 3:
                skipped.append(f"{parts[1]} ({parts[2]})")
            elif parts == ["done"]:
                done = True
            else:
                raise ParseError(f"not a listener scan record: {line[:200]!r}")
        except ValueError as exc:
            raise ParseError(f"bad number in {line[:200]!r}") from exc
    inference = {a: ("icmp" if udp_control.get(a) == "refused" else "replies only") for a in addresses}
    listening = [(a, p, "tcp") for a, p in tcp_open]
    listening += [
        (a, p, "udp")
        for a, p, state in udp
        if state == "open" or (state == "silent" and inference.get(a) == "icmp")
    ]
    unexpected = tuple(f"{a}:{p}/{proto}" for a, p, proto in listening if f"{p}/{proto}" not in allow)
    allowed_open = tuple(f"{a}:{p}/{proto}" for a, p, proto in listening if f"{p}/{proto}" in allow)
    problems = []
    if own_tcp is not True:
        problems.append("positive control failed: the node's own sshd did not answer the TCP scanner")
    if not addresses:
        problems.append("no management address was scanned")
    if not done:
        problems.append("the scan did not finish")
    return ListenerScan(
        addresses=tuple(addresses),
        unexpected=unexpected,
        allowed_open=allowed_open,
        udp_inference=inference,
        tcp_tried=tried,
        tcp_no_answer=no_answer,
        skipped=tuple(skipped),
        problems=tuple(problems),
    )
