"""scheduler_privacy: can tenant A see tenant B's jobs through the scheduler?

The canary method (docs/domain.md): tenant B submits a small job named with a fresh nonce (one
CPU, a short limit, ``sleep``). The job is left eligible, not held: Slurm records a job in
accounting only once it is eligible, and the accounting path is one of those tested.

Every path the probe declares is checked the same way, and fails closed:

1. positive control on that path: B itself must see its canary there (``squeue -a``,
   ``scontrol show jobs``, ``sacct -a``), polled for up to ``control_wait_s`` (accounting lags
   behind the controller, more so under load);
2. then A asks the same path, retried while the command errs or hangs (slurmdbd stopped or
   restarting, a controller busy) for up to ``retry_wait_s``.

A path is ``checked`` (control seen, A's answer read, no nonce), ``exposed`` (A saw the nonce:
a critical fail with the path and the redacted command and output), ``absent`` (only for
accounting, when Slurm itself says accounting storage is disabled for both tenants: there is no
such record source to leak), or ``unchecked`` (no positive control, or A's command kept failing).
Any exposed path fails the finding; otherwise any unchecked path makes it ``error``: a path that
could not be looked at never passes. The canary job is cancelled at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, new_nonce, run, wait_for
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.redaction import nonce_excerpt
from probes.parsers.slurm import jobs_named, parse_sacct, parse_squeue
from probes.transport import Command, CommandResult

SQUEUE = Command("squeue -h -a -o {fmt}", fmt="%i|%j|%u|%T|%N|%r")
SACCT = Command("sacct -X -n -P -a -S now-1days -o JobID,JobName,User,State")
SHOW_JOBS = Command("scontrol -o show jobs")
ACCOUNTING_DISABLED = "accounting storage is disabled"


def submit_canary(name: str) -> Command:
    return Command(
        "cd && sbatch --parsable -J {name} -n 1 -t 3 -o /dev/null --wrap {job}", name=name, job="sleep 150"
    )


def scancel(job_id: str) -> Command:
    return Command("scancel {job}", job=job_id)


def still_queued(job_id: str) -> Command:
    """The job if it is still pending or running (empty once it is gone or finished)."""
    return Command(
        "squeue -h -j {job} -t {states} -o {fmt}",
        job=job_id,
        states="PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED",
        fmt="%i",
    )


@dataclass(frozen=True)
class SchedulerPath:
    """One record source a tenant can ask about jobs, and how to spot a nonce in its answer."""

    name: str
    command: Command
    sees: Callable[[str, str], bool]  # (stdout, nonce) -> nonce present; may raise ParseError
    may_be_absent: bool = False  # accounting: Slurm says outright when it is not configured


PATHS = (
    SchedulerPath("squeue -a", SQUEUE, lambda out, n: bool(jobs_named(parse_squeue(out), n))),
    SchedulerPath("scontrol show jobs", SHOW_JOBS, lambda out, n: f"JobName={n} " in f"{out} "),
    SchedulerPath(
        "sacct -a", SACCT, lambda out, n: bool(jobs_named(parse_sacct(out), n)), may_be_absent=True
    ),
)


def _disabled(result: CommandResult) -> bool:
    return ACCOUNTING_DISABLED in (result.stdout + result.stderr).lower()


@register
class SchedulerPrivacy(CatalogProbe, definition="scheduler_privacy"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        observer, victim = target.tenants
        nonce = new_nonce("opgrade-canary")
        submitted = run(
            ctx, target.endpoint, submit_canary(nonce), tenant=victim, timeout_s=30, what="sbatch"
        )
        job_id = submitted.stdout.strip().split(";")[0]
        if not submitted.ok or not job_id.isdigit():
            raise Abort(Outcome.ERROR, f"{victim} could not submit the canary job", ctx.evidence(submitted))
        try:
            paths: dict[str, dict[str, Any]] = {}
            hits: list[dict[str, Any]] = []
            for path in PATHS:
                paths[path.name] = self._check(ctx, target, path, observer, victim, nonce, hits)
                if path.name == "squeue -a" and paths[path.name]["status"] == "unchecked" and not hits:
                    # the first path is the canary's own: without it nothing else can be controlled
                    break
        finally:
            self._cancel(ctx, target, victim, job_id)
        return [self._verdict(target, observer, victim, nonce, paths, hits)]

    @staticmethod
    def _cancel(ctx: ProbeContext, target: Target, victim: str, job_id: str) -> None:
        """Cancel the canary and make sure it is gone: a job caught mid-launch (its node going
        away) can be requeued and held after the first scancel, and would hold a slot forever."""

        def gone() -> bool | None:
            run(ctx, target.endpoint, scancel(job_id), tenant=victim, timeout_s=30, what="scancel")
            left = run(ctx, target.endpoint, still_queued(job_id), tenant=victim, timeout_s=30, what="squeue")
            return True if left.ok and not left.stdout.strip() else None

        wait_for(gone, timeout_s=20, poll_s=2.0)

    # -- one path: positive control as the victim, then the observer's look ------------------------

    def _check(
        self,
        ctx: ProbeContext,
        target: Target,
        path: SchedulerPath,
        observer: str,
        victim: str,
        nonce: str,
        hits: list[dict[str, Any]],
    ) -> dict[str, Any]:
        poll = float(self.setting(ctx, "poll_s") or 1.0)
        last: dict[str, CommandResult] = {}

        def ask(tenant: str) -> CommandResult:
            # a command that hangs (slurmdbd stopped) is a failed look, retried like an erring one
            assert target.endpoint is not None
            result = ctx.ssh(target.endpoint, tenant=tenant).run(path.command, timeout_s=20)
            last[tenant] = result
            return result

        def control() -> str | None:
            result = ask(victim)
            if path.may_be_absent and _disabled(result):
                return "absent"
            try:
                return "seen" if result.ok and path.sees(result.stdout, nonce) else None
            except ParseError:
                return None

        seen, waited = wait_for(control, timeout_s=float(self.setting(ctx, "control_wait_s")), poll_s=poll)
        if seen is None:
            why = f"positive control failed: {victim} did not see its own canary here in {waited:.0f} s"
            return self._unchecked(ctx, why, last.get(victim))

        def look() -> CommandResult | None:
            result = ask(observer)
            if result.ok or (path.may_be_absent and _disabled(result)):
                return result
            return None  # an erring command is retried, never read as "nothing seen"

        answer, waited = wait_for(look, timeout_s=float(self.setting(ctx, "retry_wait_s")), poll_s=poll)
        if answer is None:
            why = f"{observer}'s command kept failing for {waited:.0f} s"
            return self._unchecked(ctx, why, last.get(observer))
        if seen == "absent" or _disabled(answer):
            if seen == "absent" and _disabled(answer):
                return {"status": "absent", "why": "Slurm accounting storage is disabled on this cluster"}
            return self._unchecked(ctx, "accounting answers differ between the tenants", answer)
        try:
            exposed = path.sees(answer.stdout, nonce)
        except ParseError as exc:
            return self._unchecked(ctx, f"unreadable answer: {exc}", answer)
        if exposed:
            hits.append(
                {
                    "path": path.name,
                    "as": observer,
                    "cmd": answer.command,
                    "excerpt": nonce_excerpt(ctx.redact(answer.stdout), nonce),
                }
            )
            return {"status": "exposed"}
        return {"status": "checked"}

    @staticmethod
    def _unchecked(ctx: ProbeContext, why: str, result: CommandResult | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"status": "unchecked", "why": why}
        if result is not None:
            entry["last"] = {
                "cmd": ctx.redact(result.command),
                "exit_code": result.exit_code,
                "stderr": ctx.redact(result.stderr)[:300],
            }
        return entry

    # -- the finding ------------------------------------------------------------------------------

    def _verdict(
        self,
        target: Target,
        observer: str,
        victim: str,
        nonce: str,
        paths: dict[str, dict[str, Any]],
        hits: list[dict[str, Any]],
    ) -> FindingDraft:
        for path in PATHS:
            paths.setdefault(path.name, {"status": "unchecked", "why": "not reached: no positive control"})
        evidence = {"nonce": nonce, "victim": victim, "observer": observer, "paths": paths}
        if hits:
            return self.finding(
                target,
                Outcome.FAIL,
                critical=True,
                evidence={**evidence, "hits": hits},
                summary=f"{observer} sees {victim}'s canary job via {', '.join(h['path'] for h in hits)}",
            )
        unchecked = [name for name, p in paths.items() if p["status"] == "unchecked"]
        if unchecked:
            first = paths[unchecked[0]]["why"]
            return self.finding(
                target,
                Outcome.ERROR,
                evidence=evidence,
                summary=f"could not check {', '.join(unchecked)} ({first}); no path is passed unchecked",
            )
        checked = [name for name, p in paths.items() if p["status"] == "checked"]
        absent = [name for name, p in paths.items() if p["status"] == "absent"]
        return self.finding(
            target,
            Outcome.PASS,
            evidence=evidence,
            summary=f"{observer} cannot see {victim}'s canary job ({', '.join(checked)})"
            + (f"; no accounting on this cluster ({', '.join(absent)})" if absent else ""),
        )
