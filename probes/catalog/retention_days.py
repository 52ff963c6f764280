"""retention_days: how many days of metrics does the tenant's Prometheus keep?

Reads the configured TSDB retention from ``/api/v1/status/flags`` through the tenant's metrics
endpoint. A provider that hides the flags endpoint gives ``error`` (not measurable), not a fail.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, endpoint_url, http, tenant_http_auth
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Scope, Target
from probes.parsers import ParseError
from probes.parsers.prometheus import parse_response, retention_days

RETENTION_FLAGS = ("storage.tsdb.retention.time", "storage.tsdb.retention", "storage.tsdb.retention.size")


@register
class RetentionDays(CatalogProbe, definition="retention_days"):
    def targets(self, ctx: ProbeContext) -> list[Target]:
        return [Target(kind=Scope.CLUSTER, name="cluster", endpoint=ctx.login)]

    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        url = endpoint_url(ctx, "metrics_url")
        auth = tenant_http_auth(ctx, ctx.tenants[0].label) if ctx.tenants else None
        if url is None or auth is None:
            raise Abort(
                Outcome.DECLINED,
                "declined: the provider gives tenants no metrics endpoint (none registered: settings.metrics_url + tenant password)",
            )
        resp = http("GET", f"{url}/api/v1/status/flags", auth=auth)
        # Only what is parsed is kept: the retention flags, never the answer's body (a metrics URL
        # pointed at another service must not copy that service's answer into a finding).
        evidence = resp.evidence(secrets_=ctx.secrets())
        try:
            flags = parse_response(resp.body).data or {}
            kept = {str(k): str(v)[:100] for k, v in dict(flags).items() if str(k) in RETENTION_FLAGS}
            if not kept:  # Prometheus lists every flag; an answer naming none is not its flags page
                raise ValueError("no retention flag")
            days = retention_days(kept)
        except (ParseError, TypeError, ValueError, json.JSONDecodeError):
            raise Abort(
                Outcome.ERROR, f"retention not readable: no Prometheus flags answer (HTTP {resp.status})", evidence
            ) from None
        evidence["flags"] = kept
        if days is None:
            raise Abort(Outcome.ERROR, "only a size-based retention is configured", evidence)
        days = round(days, 3)
        outcome, ref = self.judge(ctx, days)
        return [
            self.finding(
                target,
                outcome,
                value=days,
                evidence=evidence,
                threshold_ref=ref,
                summary=f"metrics kept {days:g} days",
            )
        ]
