"""home_isolation: can tenant A list or read tenant B's home directory?

Canary method: tenant B writes a file named with a fresh nonce (mode 0644, the usual umask) in
its home and reads it back (positive control). Tenant A then ``stat``s B's home, lists it and
reads the canary. Seeing the nonce (in the listing or the content) is a critical fail; a home
that is open to others but happened not to expose the file (e.g. 0711) is a plain fail. The
canary is removed at the end.
"""

from __future__ import annotations

from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, new_nonce, run
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.fs import parse_read_attempt, parse_stat
from probes.parsers.redaction import nonce_excerpt
from probes.transport import Command

STAT_FMT = "%a|%U|%G|%F|%n"


def plant(name: str) -> Command:
    return Command(
        'cd && umask 022 && printf "%s\\n" {name} > .{name} && cat .{name} && printf "HOME=%s\\n" "$HOME"',
        name=name,
    )


def peek(home: str, name: str) -> Command:
    return Command(
        "stat -c {fmt} {home}; ls -1a {home}; cat {file}", fmt=STAT_FMT, home=home, file=f"{home}/.{name}"
    )


def remove(name: str) -> Command:
    return Command("cd && rm -f .{name}", name=name)


@register
class HomeIsolation(CatalogProbe, definition="home_isolation"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        observer, victim = target.tenants
        nonce = new_nonce("opgrade-canary")
        planted = run(ctx, target.endpoint, plant(nonce), tenant=victim, timeout_s=20, what="plant canary")
        home = next((line[5:] for line in planted.stdout.splitlines() if line.startswith("HOME=")), "")
        try:
            if not planted.ok or nonce not in planted.stdout or not home.startswith("/"):
                raise Abort(
                    Outcome.ERROR,
                    f"positive control failed: {victim} could not write and read its canary",
                    ctx.evidence(planted),
                )
            result = run(ctx, target.endpoint, peek(home, nonce), tenant=observer, timeout_s=20, what="peek")
        finally:
            run(ctx, target.endpoint, remove(nonce), tenant=victim, timeout_s=20, what="remove canary")
        attempt = parse_read_attempt(result.stdout + "\n" + result.stderr, nonce)
        try:
            stats = parse_stat(
                "\n".join(line for line in result.stdout.splitlines() if line.count("|") == 4)
            ).stats
        except ParseError:
            stats = ()
        mode = next((f"{s.mode:04o}" for s in stats if s.path == home), "unknown")
        open_home = any(s.path == home and (s.others_can_read or s.others_can_enter) for s in stats)
        evidence = {
            "nonce": nonce,
            "victim_home": home,
            "mode": mode,
            "observer": observer,
            "cmd": result.command,
            "denied": attempt.denied,
        }
        if attempt.nonce_seen:
            evidence["excerpt"] = nonce_excerpt(ctx.redact(result.stdout), nonce)
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    critical=True,
                    evidence=evidence,
                    summary=f"{observer} can read {victim}'s home {home} (mode {mode}) and its canary",
                )
            ]
        if open_home:
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    evidence=evidence,
                    summary=f"{victim}'s home {home} is open to others (mode {mode}), canary not read",
                )
            ]
        return [
            self.finding(
                target,
                Outcome.PASS,
                evidence=evidence,
                summary=f"{observer} is denied {victim}'s home (mode {mode})",
            )
        ]
