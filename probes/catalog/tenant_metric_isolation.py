"""tenant_metric_isolation: can tenant A see tenant B's metrics?

The canary method (docs/domain.md, research/probes.md §6): tenant B pushes a series labelled with
a fresh nonce through its Pushgateway and must read it back through its own metrics API within
``visible_timeout_s`` (positive control; otherwise ``error``, never pass). Then tenant A tries every
path of the metrics API with its own credentials: the exact selector, matcher tricks (``!=``,
``=~".+"``, ``__name__`` regex), series and label-value enumeration, ``/federate``, a forged
``X-Scope-OrgID``, a duplicated ``query`` parameter and a form-encoded POST. Any answer that
contains the nonce is a critical fail, kept with the path and the redacted request and response
(only the lines with the nonce). Also ``query_range`` and the Pushgateway's own read pages
(``/metrics``, ``/api/v1/metrics``, which list every group pushed to that Pushgateway). A path that
gave no answer (a connection error or timeout, status 0) or a server error (5xx) is unchecked: with
no nonce seen elsewhere the finding is an error, never a pass. B's canary is deleted at the end.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterable
from typing import Any

from probes.catalog import register
from probes.catalog._support import (
    Abort,
    CatalogProbe,
    HttpResult,
    endpoint_url,
    http,
    new_nonce,
    tenant_http_auth,
    wait_for,
)
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.egress import HttpCredential
from probes.parsers import ParseError
from probes.parsers.prometheus import find_nonce, parse_response
from probes.parsers.redaction import nonce_excerpt

METRIC = "opgrade_canary"
RETRIES = 2  # more tries of a path that gave no answer


def attempts(
    nonce: str, observer_user: str, victim_user: str, *, now: float | None = None
) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(path name, method, path, request options) for every way A may reach B's series. A path
    starting with ``push:`` is on the Pushgateway URL (its read pages), the others on the metrics API."""
    q = "/api/v1/query"
    # the range ends a little in the future: a canary scraped within the last second is inside it
    # (an end truncated to the second once missed a sample B had just read back)
    end = int(now if now is not None else time.time()) + 30
    return [
        ("query exact nonce", "GET", q, {"params": {"query": f'{METRIC}{{nonce="{nonce}"}}'}}),
        (
            "query_range nonce=~.+",
            "GET",
            "/api/v1/query_range",
            {"params": {"query": '{nonce=~".+"}', "start": end - 630, "end": end, "step": 15}},
        ),
        ("query tenant!= own", "GET", q, {"params": {"query": f'{METRIC}{{tenant!="{observer_user}"}}'}}),
        ("query nonce=~.+", "GET", q, {"params": {"query": '{nonce=~".+"}'}}),
        ("query __name__ regex", "GET", q, {"params": {"query": '{__name__=~"opgrade_.+"}'}}),
        ("series nonce=~.+", "GET", "/api/v1/series", {"params": {"match[]": '{nonce=~".+"}'}}),
        ("label nonce values", "GET", "/api/v1/label/nonce/values", {}),
        ("federate", "GET", "/federate", {"params": {"match[]": '{__name__=~"opgrade_.+"}'}}),
        (
            "forged X-Scope-OrgID",
            "GET",
            q,
            {"params": {"query": '{nonce=~".+"}'}, "headers": {"X-Scope-OrgID": victim_user}},
        ),
        ("duplicate query parameter", "GET", q, {"params": [("query", "up"), ("query", '{nonce=~".+"}')]}),
        (
            "form POST",
            "POST",
            q,
            {
                "body": urllib.parse.urlencode({"query": '{nonce=~".+"}'}).encode(),
                "headers": {"Content-Type": "application/x-www-form-urlencoded"},
            },
        ),
        # the Pushgateway's own read pages list every group pushed to it: a tenant's pushgateway URL
        # that reaches a shared or another tenant's Pushgateway shows B's canary group there
        ("pushgateway metrics page", "GET", "push:/metrics", {}),
        ("pushgateway API metrics", "GET", "push:/api/v1/metrics", {}),
    ]


def answered(status: int) -> bool:
    """A path's answer counts when the server gave one (2xx-4xx: shown, refused, unknown path);
    no answer or a server error (5xx) leaves the path unchecked."""
    return 200 <= status < 500


def nonce_in(resp: HttpResult, nonce: str) -> bool:
    if not resp.ok or nonce not in resp.body:
        return False
    try:
        return bool(find_nonce(parse_response(resp.body), nonce))
    except ParseError:
        return True  # /federate answers in the text format: the nonce in a 200 body is the hit


@register
class TenantMetricIsolation(CatalogProbe, definition="tenant_metric_isolation"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        observer, victim = target.tenants
        url, push = endpoint_url(ctx, "metrics_url"), endpoint_url(ctx, "pushgateway_url")
        a_auth, b_auth = tenant_http_auth(ctx, observer), tenant_http_auth(ctx, victim)
        if not url or not push or not a_auth or not b_auth:
            raise Abort(
                Outcome.NOT_APPLICABLE,
                "needs settings.metrics_url, settings.pushgateway_url and tenant passwords",
            )
        nonce = new_nonce("opgrade").replace("-", "_")
        group = f"{push}/metrics/job/{METRIC}/nonce/{nonce}"
        pushed = http("PUT", group, auth=b_auth, body=f"{METRIC} 1\n".encode())
        if not pushed.ok:
            raise Abort(
                Outcome.ERROR,
                f"{victim} could not push its canary (HTTP {pushed.status})",
                pushed.evidence(secrets_=ctx.secrets()),
            )
        try:
            own = f'{METRIC}{{nonce="{nonce}"}}'
            seen, _ = wait_for(
                lambda: (
                    True
                    if nonce_in(http("GET", f"{url}/api/v1/query", auth=b_auth, params={"query": own}), nonce)
                    else None
                ),
                timeout_s=float(self.setting(ctx, "visible_timeout_s")),
                poll_s=1.0,
            )
            if not seen:
                raise Abort(
                    Outcome.ERROR,
                    f"positive control failed: {victim} cannot read its own canary series",
                    {"nonce": nonce},
                )
            return [self._probe(ctx, target, url, push, a_auth, observer, victim, nonce)]
        finally:
            http("DELETE", group, auth=b_auth)

    def _probe(
        self,
        ctx: ProbeContext,
        target: Target,
        url: str,
        push: str,
        auth: HttpCredential,
        observer: str,
        victim: str,
        nonce: str,
    ) -> FindingDraft:
        hits, paths = [], {}
        secrets_ = ctx.secrets()
        for name, method, path, options in attempts(nonce, auth.username, ctx.tenant(victim).credentials.username):
            full = push + path.removeprefix("push:") if path.startswith("push:") else url + path
            resp = http(method, full, auth=auth, **options)
            for _ in range(RETRIES):  # a dropped link or a proxy restarting: ask again before giving up on the path
                if answered(resp.status):
                    break
                time.sleep(1.0)
                resp = http(method, full, auth=auth, **options)
            paths[name] = resp.status
            if nonce_in(resp, nonce):
                ev = resp.evidence(secrets_=secrets_)
                ev["response"]["body"] = nonce_excerpt(
                    resp.body.replace("},{", "},\n{"), nonce, secrets=secrets_
                )
                hits.append({"path": name, **ev})
        evidence = {"nonce": nonce, "observer": observer, "victim": victim, "paths": paths}
        if hits:
            return self.finding(
                target,
                Outcome.FAIL,
                critical=True,
                evidence={**evidence, "hits": hits[:5]},
                summary=f"{observer} sees {victim}'s metrics via {', '.join(h['path'] for h in hits)}",
            )
        unchecked = sorted(name for name, status in paths.items() if not answered(status))
        if unchecked:
            return self.finding(
                target,
                Outcome.ERROR,
                evidence={**evidence, "unchecked": unchecked},
                summary=f"{observer} saw none of {victim}'s canary, but {len(unchecked)} of {len(paths)} paths gave "
                f"no answer: {', '.join(unchecked)}",
            )
        return self.finding(
            target,
            Outcome.PASS,
            evidence=evidence,
            summary=f"{observer} saw none of {victim}'s canary series on {len(paths)} paths",
        )
