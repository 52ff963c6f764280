"""tenant_log_isolation: can tenant A read tenant B's logs?

The canary method: tenant B logs a line with a fresh nonce from a compute node and must find it
through its own log API (positive control, else ``error``). Tenant A then asks the log API with
its own login, with a forged ``X-Scope-OrgID`` naming B, with a multi-tenant ``A|B`` header, and
with no login at all; and over SSH greps the shared log directories (``settings.shared_log_dirs``)
for the nonce: every file there, rotated and compressed ones included, each listed in the
evidence as checked, denied or hit. Any sight of the nonce is a critical fail with the path and
the redacted request and response (only the matching lines).
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
from probes.parsers.logs import lines_with, parse_log_response
from probes.parsers.redaction import nonce_excerpt
from probes.transport import Command

# Every file of the log directories, rotated and compressed ones included, as the observer: each
# readable file is read (decompressed by its suffix) and reported checked or hit (with the line);
# each directory find cannot enter is reported denied. Bounded to 5000 files.
GREP_SCRIPT = r"""export LC_ALL=C; n="$1"; shift
find "$@" -type d 2>&1 >/dev/null | sed -n "s/^find: '\(.*\)': Permission denied$/denied\t\1/p"
find "$@" \( -type f -o \( -type l -xtype f \) \) 2>/dev/null | head -n 5000 | while IFS= read -r f; do
  if [ ! -r "$f" ]; then printf 'denied\t%s\n' "$f"; continue; fi
  case "$f" in *.gz|*.tgz|*.z|*.Z) c=gzip;; *.xz|*.txz) c=xz;; *.bz2|*.tbz2) c=bzip2;; *.zst) c=zstd;; *) c=;; esac
  if [ -n "$c" ]; then line=$("$c" -dc -- "$f" 2>/dev/null | grep -a -m1 -F -- "$n"); else line=$(grep -a -m1 -F -- "$n" "$f" 2>/dev/null); fi
  if [ -n "$line" ]; then printf 'hit\t%s\t%s\n' "$f" "$line"; else printf 'checked\t%s\n' "$f"; fi
done
"""


def grep_dirs(nonce: str, dirs: list[str]) -> Command:
    names = {f"d{i}": d for i, d in enumerate(dirs)}
    return Command(
        "bash -c {script} logs {nonce} " + " ".join(f"{{{n}}}" for n in names),
        script=GREP_SCRIPT,
        nonce=nonce,
        **names,
    )


def read_grep(text: str) -> dict[str, list[str]]:
    """``{"checked": [...], "denied": [...], "hit": ["path\tline", ...]}`` from the script's records."""
    out: dict[str, list[str]] = {"checked": [], "denied": [], "hit": []}
    for line in text.splitlines():
        kind, _, rest = line.partition("\t")
        if kind in out and rest:
            out[kind].append(rest)
    return out


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
            found = read_grep(result.stdout)
            paths["ssh shared log dirs"] = {
                "checked": found["checked"][:50],
                "checked_count": len(found["checked"]),
                "denied": found["denied"][:50],
                "hit": [h.split("\t", 1)[0] for h in found["hit"]],
            }
            if found["hit"]:
                hits.append(
                    {
                        "path": "ssh shared log dirs",
                        "as": observer,
                        "files": [h.split("\t", 1)[0] for h in found["hit"]][:10],
                        "excerpt": nonce_excerpt(ctx.redact("\n".join(found["hit"])), nonce),
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
