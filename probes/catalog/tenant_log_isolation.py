"""tenant_log_isolation: can tenant A read tenant B's logs?

The canary method: tenant B logs a line with a fresh nonce from a compute node and must find it
through its own log API (positive control, else ``error``). Tenant A then asks the log API with
its own login, with a forged ``X-Scope-OrgID`` naming B, with a multi-tenant ``A|B`` header, and
with no login at all; and over SSH greps the shared log directories (``settings.shared_log_dirs``)
for the nonce. Any sight of the nonce is a critical fail with the path and the redacted request
and response (only the matching lines).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
from probes.parsers.fs import parse_read_attempt
from probes.parsers.logs import lines_with, parse_log_response
from probes.parsers.redaction import nonce_excerpt
from probes.transport import Command


def grep_dirs(nonce: str, dirs: list[str]) -> Command:
    names = {f"d{i}": d for i, d in enumerate(dirs)}
    return Command(
        "grep -r -s -F -H {nonce} " + " ".join(f"{{{n}}}" for n in names) + " | head -n 5; true",
        nonce=nonce,
        **names,
    )


@register
class TenantLogIsolation(CatalogProbe, definition="tenant_log_isolation"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        observer, victim = target.tenants
        nonce = new_nonce("opgrade-canary")
        log_query(ctx, victim, nonce)  # not_applicable early when there is no log API
        node = compute_nodes(ctx)[0]
        sent = run(
            ctx,
            node,
            syslog_command(nonce, ctx.settings.get("syslog_addr")),
            tenant=victim,
            timeout_s=15,
            what="logger",
        )
        if not sent.ok:
            raise Abort(Outcome.ERROR, f"{victim} could not log its canary", ctx.evidence(sent))

        def own() -> bool | None:
            resp = log_query(ctx, victim, nonce)
            try:
                return True if resp.ok and lines_with(parse_log_response(resp.body), nonce) else None
            except ParseError:
                return None

        seen, _ = wait_for(own, timeout_s=float(self.setting(ctx, "visible_timeout_s")), poll_s=0.5)
        if not seen:
            raise Abort(
                Outcome.ERROR,
                f"positive control failed: {victim} cannot query its own canary line",
                {"nonce": nonce},
            )
        victim_user = ctx.tenant(victim).credentials.username
        observer_user = ctx.tenant(observer).credentials.username
        hits: list[dict[str, Any]] = []
        paths: dict[str, Any] = {}
        secrets_ = ctx.secrets()
        for name, options in (
            ("log API as observer", {}),
            ("log API forged X-Scope-OrgID", {"headers": {"X-Scope-OrgID": victim_user}}),
            ("log API multi-tenant header", {"headers": {"X-Scope-OrgID": f"{observer_user}|{victim_user}"}}),
            ("log API without login", {"no_auth": True}),
        ):
            resp = log_query(ctx, observer, nonce, **options)
            paths[name] = resp.status
            if resp.ok and nonce in resp.body:
                ev = resp.evidence(secrets_=secrets_)
                ev["response"]["body"] = nonce_excerpt(resp.body, nonce, secrets=secrets_)
                hits.append({"path": name, **ev})
        dirs = [str(d) for d in (ctx.settings.get("shared_log_dirs") or []) if str(d).startswith("/")]
        if dirs and ctx.login is not None:
            result = run(
                ctx, ctx.login, grep_dirs(nonce, dirs), tenant=observer, timeout_s=30, what="grep logs"
            )
            attempt = parse_read_attempt(result.stdout, nonce)
            paths["ssh grep shared log dirs"] = "denied" if attempt.denied else "checked"
            if attempt.nonce_seen:
                hits.append(
                    {
                        "path": "ssh grep shared log dirs",
                        "as": observer,
                        "cmd": result.command,
                        "excerpt": nonce_excerpt(ctx.redact(result.stdout), nonce),
                    }
                )
        evidence = {"nonce": nonce, "observer": observer, "victim": victim, "paths": paths}
        if hits:
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    critical=True,
                    evidence={**evidence, "hits": hits[:5]},
                    summary=f"{observer} reads {victim}'s logs via {', '.join(h['path'] for h in hits)}",
                )
            ]
        return [
            self.finding(
                target,
                Outcome.PASS,
                evidence=evidence,
                summary=f"{observer} found none of {victim}'s canary lines on {len(paths)} paths",
            )
        ]
