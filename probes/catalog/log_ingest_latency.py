"""log_ingest_latency: how long from a log line on a node until the tenant can query it?

As a tenant on a compute node: ``logger`` a canary line (to the cluster's syslog relay when
``settings.syslog_addr`` names one), then poll the tenant's log API for it. The time runs from
just before ``logger`` until the first answer that contains the line.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import (
    Abort,
    CatalogProbe,
    compute_nodes,
    log_query,
    new_nonce,
    run,
    syslog_command,
    wait_for,
)
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.logs import lines_with, parse_log_response


@register
class LogIngestLatency(CatalogProbe, definition="log_ingest_latency"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        label = ctx.tenants[0].label
        node = compute_nodes(ctx)[0]
        nonce = new_nonce("opgrade-canary")
        log_query(ctx, label, nonce)  # fail fast (not_applicable) before writing anything
        ctx.ssh(node, tenant=label)
        start = time.monotonic()
        sent = run(
            ctx,
            node,
            syslog_command(nonce, ctx.settings.get("syslog_addr")),
            tenant=label,
            timeout_s=15,
            what="logger",
        )
        if not sent.ok:
            raise Abort(Outcome.ERROR, "logger failed on the node", ctx.evidence(sent))
        last: list[str] = []

        def visible() -> bool | None:
            resp = log_query(ctx, label, nonce)
            last[:] = [f"{resp.status}"]
            try:
                return True if resp.ok and lines_with(parse_log_response(resp.body), nonce) else None
            except ParseError:
                return None

        found, _ = wait_for(
            visible,
            timeout_s=float(self.setting(ctx, "visible_timeout_s")),
            poll_s=float(self.setting(ctx, "poll_s")),
        )
        seconds = round(time.monotonic() - start, 2)
        evidence = {"nonce": nonce, "node": node.host, "logger_cmd": sent.command, "last_status": last}
        return self.timed(
            ctx, target, seconds, observed=found, evidence=evidence,
            summary=f"canary line queryable {seconds} s after logger" if found else f"canary line not queryable after {seconds} s",
        )
