"""metrics_freshness: how long from a load starting on a node until the tenant's metrics show it?

Finds the node's exporter series (``up`` whose instance is the node's address) and reads two
baselines of that instance: CPU busy cores and network bytes sent per second. Then, as a tenant
on the node, it starts a bounded load (a busy loop, and when ``settings.freshness_sink_url`` names
an HTTP endpoint inside the cluster, a rate-limited upload to it), and polls the tenant's metrics
API until either signal has risen (``rise_cores``, default 0.6 of a core; ``rise_bytes_s``,
default 500 kB/s). The network signal matters where nodes share CPUs (containers, namespaces): a
busy host hides one more busy loop (and its neighbours' work looks like ours), but each node's
interface counts its own bytes, so with an upload sink and network counters only those are
watched. The load runs under ``timeout`` and is killed by pid when seen. The time runs from the start of the load to the
first answer that shows it. The rates are ``irate`` over a window that holds two scrapes even at a
1-minute scrape interval, so a sparse scrape shows up as a late signal, not as no signal.

One load is one draw of the scrape's phase: a load that starts just before a scrape of a node
scraped every minute is seen in seconds. So the probe also times the node's scrape spacing (the
``timestamp`` of its ``up`` series, watched until the next scrape lands) and reports the larger of
the two: a load can go unseen for a whole spacing, and a lucky phase never passes a sparse scrape.
A spacing that cannot be measured within the timeout is a timeout, never a pass.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from probes.catalog import register
from probes.catalog._support import (
    Abort,
    CatalogProbe,
    compute_nodes,
    endpoint_url,
    http,
    new_nonce,
    run,
    tenant_http_auth,
    wait_for,
)
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.egress import HttpCredential
from probes.parsers import ParseError
from probes.parsers.prometheus import parse_response, vector_samples
from probes.transport import Command

MY_ADDRESS = Command("hostname -I")
# irate uses the last two samples inside the window, so the window only has to hold two scrapes:
# wide enough for sparse scrapes (Prometheus' default interval is 1 m), no slower for dense ones.
RATE_WINDOW = "3m"


@dataclass
class ScrapeSpacing:
    """Pure core: the seconds between two consecutive scrapes of a series, from polls of its latest
    sample's timestamp (``timestamp(up{...})``). ``observe`` takes one poll (None when the series is
    absent) and returns the spacing once a second, later timestamp has been seen."""

    first: float | None = None
    seen: list[float] = field(default_factory=list)

    def observe(self, stamp: float | None) -> float | None:
        if stamp is None or not math.isfinite(stamp):
            return None
        if not self.seen or self.seen[-1] != stamp:
            self.seen.append(stamp)
        if self.first is None:
            self.first = stamp
            return None
        if stamp > self.first:
            return round(stamp - self.first, 3)
        if stamp < self.first:  # an older sample after a newer one: the series restarted, start over
            self.first = stamp
        return None


def scrape_spacing(stamp: Callable[[], float | None], *, timeout_s: float) -> tuple[float | None, float, list[float]]:
    """Poll ``stamp`` (a series' latest sample timestamp, None when absent) until the next scrape lands:
    (the spacing between two consecutive scrapes or None, the seconds waited, the stamps seen)."""
    spacing = ScrapeSpacing()
    spaced, waited = wait_for(lambda: spacing.observe(stamp()), timeout_s=timeout_s, poll_s=0.5)
    return spaced, waited, spacing.seen[:5]


def start_load(seconds: int, sink: str | None) -> Command:
    cpu = "setsid timeout {s} sh -c 'while :; do :; done' >/dev/null 2>&1 < /dev/null & echo $!"
    if not sink:
        return Command(cpu, s=seconds)
    net = (
        "; setsid timeout {s} sh -c 'while :; do head -c 8000000 /dev/zero | curl -s -o /dev/null "
        '--limit-rate 2000000 -X POST --data-binary @- "$0"; done\' {sink} >/dev/null 2>&1 < /dev/null & echo $!'
    )
    return Command(cpu + net, s=seconds, sink=sink)


def stop_load(pids: list[str]) -> Command:
    names = {f"p{i}": p for i, p in enumerate(pids) if p.isdigit()}
    if not names:
        return Command("true")
    return Command("kill " + " ".join(f"{{{n}}}" for n in names) + " 2>/dev/null; true", **names)


def _first_value(url: str, auth: HttpCredential, promql: str) -> float | None:
    """The first sample's value of an instant query, or None (no sample, or an answer that is not one)."""
    resp = http("GET", f"{url}/api/v1/query", auth=auth, params={"query": promql})
    try:
        return next((s.value for s in vector_samples(parse_response(resp.body))), None)
    except ParseError:
        return None


@register
class MetricsFreshness(CatalogProbe, definition="metrics_freshness"):
    def _push_freshness(
        self,
        ctx: ProbeContext,
        target: Target,
        url: str,
        auth: HttpCredential,
        node: str,
        baseline: dict[str, float],
        cores: float,
    ) -> FindingDraft:
        """Fallback when the node's own counters cannot show a load (shared, saturated CPUs, no
        per-node network counters): time a sample pushed to the tenant's Pushgateway until a query
        returns it. Same pipeline (scrape, store, query), without the node's exporter."""
        push = endpoint_url(ctx, "pushgateway_url")
        if not push:
            raise Abort(
                Outcome.ERROR,
                "the node's load cannot be seen (CPU saturated, no network counters) "
                "and there is no Pushgateway to time instead",
                {"baseline": baseline, "cores": cores},
            )
        marker = new_nonce("opgrade").replace("-", "_")
        group = f"{push}/metrics/job/opgrade_freshness/node/{marker}"
        promql = f'opgrade_freshness_marker{{node="{marker}"}}'
        start = time.monotonic()
        pushed = http("PUT", group, auth=auth, body=b"opgrade_freshness_marker 1\n")
        try:
            if not pushed.ok:
                raise Abort(
                    Outcome.ERROR,
                    f"push refused (HTTP {pushed.status})",
                    pushed.evidence(secrets_=ctx.secrets()),
                )
            seen, _ = wait_for(
                lambda: (
                    True
                    if http("GET", f"{url}/api/v1/query", auth=auth, params={"query": promql}).body.count(
                        marker
                    )
                    else None
                ),
                timeout_s=float(self.setting(ctx, "visible_timeout_s")),
                poll_s=0.5,
            )
            seconds = round(time.monotonic() - start, 2)
            # as with a load, one push is one draw of the scrape phase: time a whole spacing too
            spaced, waited, stamps = (
                scrape_spacing(lambda: _first_value(url, auth, f"timestamp({promql})"),
                               timeout_s=float(self.setting(ctx, "visible_timeout_s")))
                if seen else (None, 0.0, [])
            )  # fmt: skip
        finally:
            http("DELETE", group, auth=auth)
        evidence = {
            "method": "push",
            "why": f"node {node} CPU baseline {baseline.get('cpu_cores', 0):.2f} of {cores:g} cores",
            "query": promql,
            "observed_s": seconds,
            "scrape_spacing_s": spaced,
            "scrape_stamps": stamps,
        }
        if not seen or spaced is None:
            return self.finding(
                target,
                Outcome.TIMEOUT,
                value=round(max(seconds, waited), 2),
                evidence=evidence,
                summary=f"pushed sample not visible after {seconds} s"
                if not seen
                else f"pushed sample seen after {seconds} s, but not scraped again within {waited:.0f} s",
            )
        value = round(max(seconds, spaced), 2)
        outcome, ref = self.judge(ctx, value)
        return self.finding(
            target,
            outcome,
            value=value,
            evidence=evidence,
            threshold_ref=ref,
            summary=f"pushed sample visible after {seconds} s, scraped every {spaced:g} s (node load not observable here)",
        )

    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        url = endpoint_url(ctx, "metrics_url")
        label = ctx.tenants[0].label if ctx.tenants else None
        auth = tenant_http_auth(ctx, label) if label else None
        if url is None or auth is None:
            raise Abort(
                Outcome.DECLINED,
                "declined: the provider gives tenants no metrics endpoint (none registered: settings.metrics_url + tenant password)",
            )
        node = compute_nodes(ctx)[-1]
        addresses = run(ctx, node, MY_ADDRESS, tenant=label, timeout_s=10, what="hostname -I").stdout.split()

        def query(promql: str) -> list[tuple[dict[str, str], float]]:
            resp = http("GET", f"{url}/api/v1/query", auth=auth, params={"query": promql})
            try:
                return [(dict(s.labels), s.value) for s in vector_samples(parse_response(resp.body))]
            except ParseError as exc:
                raise Abort(
                    Outcome.ERROR,
                    f"metrics API answered {resp.status}: {exc}",
                    resp.evidence(secrets_=ctx.secrets()),
                ) from exc

        instance = next(
            (
                lab["instance"]
                for lab, _ in query("up")
                if lab.get("instance", "").rsplit(":", 1)[0] in addresses
            ),
            None,
        )
        if instance is None:
            raise Abort(
                Outcome.FAIL,
                f"no exporter of node {node.host} in the tenant's metrics",
                {"node_addresses": addresses},
            )
        quoted = instance.replace("\\", "\\\\").replace('"', '\\"')
        signals = {
            "cpu_cores": (
                f'sum(irate(node_cpu_seconds_total{{mode!="idle",instance="{quoted}"}}[{RATE_WINDOW}]))',
                float(self.setting(ctx, "rise_cores") or 0.6),
            ),
            "tx_bytes_s": (
                f'sum(irate(node_network_transmit_bytes_total{{device!="lo",instance="{quoted}"}}[{RATE_WINDOW}]))',
                float(self.setting(ctx, "rise_bytes_s") or 500_000),
            ),
        }

        def rates() -> dict[str, float]:
            out = {}
            for name, (promql, _) in signals.items():
                values = query(promql)
                if values:
                    out[name] = values[0][1]
            return out

        baseline = rates()
        cores = sum(v for _, v in query(f'count(node_cpu_seconds_total{{mode="idle",instance="{quoted}"}})'))
        cpu_room = cores - baseline.get("cpu_cores", 0.0)
        if "tx_bytes_s" not in baseline and cpu_room < signals["cpu_cores"][1] + 0.2:
            return [self._push_freshness(ctx, target, url, auth, node.host, baseline, cores)]

        sink = ctx.settings.get("freshness_sink_url")
        # With an upload and the node's own interface counters, only the network signal counts:
        # CPUs shared with other tenants or containers rise and fall with their work, too, and
        # such a rise would be taken for our load (a freshness far better than the real one).
        watched = ["tx_bytes_s"] if sink and "tx_bytes_s" in baseline else list(signals)

        def risen() -> str | None:
            now = rates()
            return next(
                (n for n in watched if n in now and now[n] >= baseline.get(n, 0.0) + signals[n][1]),
                None,
            )

        timeout_s = float(self.setting(ctx, "visible_timeout_s"))
        start = time.monotonic()
        load = start_load(int(timeout_s) + 10, str(sink) if sink else None)
        started = run(ctx, node, load, tenant=label, timeout_s=10, what="start load")
        pids = started.stdout.split()
        try:
            seen, _ = wait_for(risen, timeout_s=timeout_s, poll_s=float(self.setting(ctx, "poll_s")))
            seconds = round(time.monotonic() - start, 2)
        finally:
            run(ctx, node, stop_load(pids), tenant=label, timeout_s=10, what="stop load")
        evidence = {
            "node": node.host,
            "instance": instance,
            "queries": {n: q for n, (q, _) in signals.items()},
            "baseline": {n: round(v, 3) for n, v in baseline.items()},
            "watched": watched,
            "seen_signal": seen,
            "method": "load",
        }
        if seen is None:
            return [
                self.finding(
                    target,
                    Outcome.TIMEOUT,
                    value=seconds,
                    evidence=evidence,
                    summary=f"load on {node.host} not visible after {seconds} s",
                )
            ]
        # the load's delay is one draw of the scrape phase: time a whole scrape spacing too
        stamp_q = f'timestamp(up{{instance="{quoted}"}})'
        spaced, waited, stamps = scrape_spacing(
            lambda: next((v for _, v in query(stamp_q)), None), timeout_s=timeout_s
        )
        evidence.update(
            {"observed_s": seconds, "spacing_query": stamp_q, "scrape_spacing_s": spaced, "scrape_stamps": stamps}
        )
        if spaced is None:
            return [
                self.finding(
                    target,
                    Outcome.TIMEOUT,
                    value=round(max(seconds, waited), 2),
                    evidence=evidence,
                    summary=f"load on {node.host} seen after {seconds} s, but the node was not scraped again "
                    f"within {waited:.0f} s",
                )
            ]
        value = round(max(seconds, spaced), 2)
        outcome, ref = self.judge(ctx, value)
        summary = f"load on {node.host} visible in the tenant's metrics after {seconds} s"
        if spaced > seconds:
            summary += f"; the node is scraped every {spaced:g} s, so a load can go unseen that long"
        return [self.finding(target, outcome, value=value, evidence=evidence, threshold_ref=ref, summary=summary)]
