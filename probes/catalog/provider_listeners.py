"""provider_listeners: which of the provider's management services answer a tenant's node?

From each node a tenant reaches (the login node and every compute node), as the tenant, a fixed
Python script (:data:`SCAN_SCRIPT`, standard library only) tries every TCP port (``tcp_ports``,
1-65535 by default, non-blocking connects, ``concurrency`` at a time, each cut at
``connect_timeout_s``) and a documented list of UDP ports (``udp_ports``) on the provider's
controller and management addresses: ``settings.management_addrs`` plus the controller and
accounting hosts the node's own ``scontrol show config`` names. Only private (RFC 1918) addresses
are ever scanned.

Tenant-facing services are allowed (``allowed``: the scheduler, accounting, syslog, DNS, NTP;
plus the port of every endpoint the cluster's settings publish to tenants: the metrics and log
proxies, the provider API, whose hosts are scanned too). Any other listener that
answers is a critical fail: a tenant reaches the management plane (an unauthenticated metrics or
federation endpoint, a database, a BMC-like service, a debug port).

Fail closed, with a positive control per path: TCP counts only if the node's own sshd answers the
same scanner; UDP closed ports are told from open ones by the ICMP port-unreachable the address
sends back, so each address must refuse a control port, or its UDP ports are judged by replies
alone (and the evidence says so). Silent UDP ports are retried (ICMP replies are rate-limited).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable
from typing import Any

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, run
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.listeners import parse_listener_scan, port_spec_valid
from probes.transport import Command

SCAN_SCRIPT = r"""
import errno, ipaddress, selectors, socket, sys, time
wait, conc, tcp_spec, udp_spec, me = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
names = sys.argv[6:]
UDP_CONTROL = 33434
PAYLOAD = {623: bytes.fromhex("0600ff06000011be80000000"), 53: bytes.fromhex("abcd01000001000000000000000001000001")}

def ports(spec):
    out = []
    for part in spec.split(","):
        if part:
            a, _, b = part.partition("-")
            out.extend(range(int(a), int(b or a) + 1))
    return out

def tcp(addr, plist):
    sel, pending, found, it = selectors.DefaultSelector(), {}, [], iter(plist)
    timeouts = 0
    def start():
        while len(pending) < conc:
            p = next(it, None)
            if p is None:
                return
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            rc = s.connect_ex((addr, p))
            if rc == 0:
                found.append(p); s.close(); continue
            if rc not in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
                s.close(); continue
            sel.register(s, selectors.EVENT_WRITE, (p, time.monotonic()))
            pending[s] = p
    start()
    while pending:
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                found.append(key.data[0])
            sel.unregister(s); s.close(); pending.pop(s, None)
        now = time.monotonic()
        for s in list(pending):
            if now - sel.get_key(s).data[1] > wait:
                timeouts += 1; sel.unregister(s); s.close(); pending.pop(s, None)
        start()
    return sorted(found), timeouts

def udp(addr, port, tries=3):
    state = "silent"
    for _ in range(tries):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(wait)
        try:
            s.connect((addr, port)); s.send(PAYLOAD.get(port, b"\r\n")); s.recv(512)
            return "open"
        except ConnectionRefusedError:
            return "closed"
        except OSError:
            state = "silent"
        finally:
            s.close()
    return state

own, _ = tcp(me, [22])
print("control", "tcp", me, 22, "open" if own else "closed")
seen = set()
for name in names:
    try:
        addr = socket.gethostbyname(name)
    except OSError:
        print("skip", name, "unresolved"); continue
    ip = ipaddress.ip_address(addr)
    if ip.version != 4 or not ip.is_private or ip.is_loopback:
        print("skip", name, "not-private"); continue
    if addr in seen:
        continue
    seen.add(addr)
    plist = ports(tcp_spec)
    found, timeouts = tcp(addr, plist)
    print("scanned", "tcp", addr, len(plist), timeouts)
    for p in found:
        print("tcp", addr, p, "open")
    ctl = udp(addr, UDP_CONTROL)
    print("control", "udp", addr, UDP_CONTROL, "refused" if ctl == "closed" else ctl)
    for p in ports(udp_spec):
        print("udp", addr, p, udp(addr, p))
print("done")
"""

SHOW_CONFIG = Command("scontrol show config")


def scan_command(
    wait_s: float, concurrency: int, tcp_ports: str, udp_ports: str, me: str, names: list[str]
) -> Command:
    """The scan: a fixed script; every value a separate quoted word (port specs checked first)."""
    if not port_spec_valid(tcp_ports) or not port_spec_valid(udp_ports, allow_empty=True):
        raise ValueError("bad port list")
    words = {f"n{i}": n for i, n in enumerate(names)}
    template = "python3 -c {script} {wait} {conc} {tcp} {udp} {me} " + " ".join(f"{{{k}}}" for k in words)
    return Command(
        template,
        script=SCAN_SCRIPT,
        wait=f"{float(wait_s):g}",
        conc=int(concurrency),
        tcp=tcp_ports,
        udp=udp_ports,
        me=me,
        **words,
    )


def controller_hosts(show_config: str) -> list[str]:
    """The controller and accounting hosts ``scontrol show config`` names (address if given)."""
    hosts: list[str] = []
    for line in show_config.splitlines():
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if key.startswith("SlurmctldHost") or key in ("AccountingStorageHost", "SlurmctldAddr"):
            # "ctl(10.0.0.2)" -> the address in brackets, else the name
            inner = value[value.find("(") + 1 : value.find(")")] if "(" in value and ")" in value else value
            if inner and inner.lower() not in ("(null)", "null", "none") and inner not in hosts:
                hosts.append(inner)
    return hosts


SERVICE_URL_SETTINGS = ("metrics_url", "pushgateway_url", "logs_url", "freshness_sink_url")


def published_services(ctx: ProbeContext) -> list[tuple[str, int]]:
    """(host, TCP port) of every endpoint the provider gives tenants (metrics and log proxies, the
    provider API): tenant-facing by definition, so allowed, and their hosts are scanned too."""
    urls = [str(ctx.settings[k]) for k in SERVICE_URL_SETTINGS if ctx.settings.get(k)]
    urls += [ctx.api.base_url] if ctx.api else []
    out: list[tuple[str, int]] = []
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        if parts.hostname:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            if (parts.hostname, port) not in out:
                out.append((parts.hostname, port))
    return out


@register
class ProviderListeners(CatalogProbe, definition="provider_listeners"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        endpoint = target.endpoint
        published = published_services(ctx)
        names = [str(a) for a in (ctx.settings.get("management_addrs") or [])]
        names += [host for host, _ in published]
        config = run(ctx, endpoint, SHOW_CONFIG, timeout_s=20, what="scontrol show config")
        if config.ok:
            names += controller_hosts(config.stdout)
        names = list(dict.fromkeys(names))
        if not names:
            raise Abort(
                Outcome.ERROR,
                "no management address to scan: set settings.management_addrs (scontrol named none)",
                ctx.evidence(config),
            )
        wait = float(self.setting(ctx, "connect_timeout_s"))
        result = run(
            ctx,
            endpoint,
            scan_command(
                wait,
                int(self.setting(ctx, "concurrency")),
                str(self.setting(ctx, "tcp_ports")),
                str(self.setting(ctx, "udp_ports")),
                endpoint.host,
                names,
            ),
            timeout_s=float(self.timeout_s) - 20,
            what="listener scan",
        )
        try:
            allowed = " ".join([str(self.setting(ctx, "allowed")), *(f"{port}/tcp" for _, port in published)])
            scan = parse_listener_scan(result.stdout, allowed=allowed)
        except ParseError as exc:
            raise Abort(Outcome.ERROR, f"could not read the scan: {exc}", ctx.evidence(result)) from exc
        evidence: dict[str, Any] = {
            "candidates": names,
            **scan.evidence(),
            "exit_code": result.exit_code,
            "stderr": ctx.redact(result.stderr)[:1000],
        }
        if scan.unexpected:
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    critical=True,
                    evidence=evidence,
                    summary=f"a tenant node reaches {len(scan.unexpected)} management listener(s): {', '.join(scan.unexpected[:5])}",
                )
            ]
        if not scan.complete:
            return [
                self.finding(
                    target,
                    Outcome.ERROR,
                    evidence=evidence,
                    summary=f"scan incomplete, not a pass: {'; '.join(scan.problems[:3])}",
                )
            ]
        return [
            self.finding(
                target,
                Outcome.PASS,
                evidence=evidence,
                summary=f"only allowed services answer on {', '.join(scan.addresses)} ({len(scan.allowed_open)} open)",
            )
        ]
