"""scheduler_privacy: can tenant A see tenant B's jobs through the scheduler?

The canary method (docs/domain.md): tenant B submits a small job named with a fresh nonce (one
CPU, a two-minute limit, ``sleep``), and must see it itself (positive control; otherwise
``error``). The job is left eligible, not held: Slurm records a job in accounting only once it is
eligible, and the accounting path is one of those tested. Then tenant A asks every scheduler path
it has: ``squeue -a``, ``sacct -a`` (accounting has its own ``PrivateData`` in slurmdbd.conf, so it
can leak while squeue does not; checked only once B itself sees the canary there) and
``scontrol show jobs``. Any sight of the nonce is a critical fail, with the path and the redacted
command and output as evidence. The canary job is cancelled at the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, new_nonce, run, wait_for
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.redaction import nonce_excerpt
from probes.parsers.slurm import jobs_named, parse_sacct, parse_squeue
from probes.transport import Command

SQUEUE = Command("squeue -h -a -o {fmt}", fmt="%i|%j|%u|%T|%N|%r")
SACCT = Command("sacct -X -n -P -a -S now-1days -o JobID,JobName,User,State")
SHOW_JOBS = Command("scontrol -o show jobs")


def submit_canary(name: str) -> Command:
    return Command(
        "cd && sbatch --parsable -J {name} -n 1 -t 2 -o /dev/null --wrap {job}", name=name, job="sleep 60"
    )


def scancel(job_id: str) -> Command:
    return Command("scancel {job}", job=job_id)


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
            control = run(ctx, target.endpoint, SQUEUE, tenant=victim, timeout_s=30, what="squeue")
            if not jobs_named(parse_squeue(control.stdout), nonce):
                raise Abort(
                    Outcome.ERROR,
                    f"positive control failed: {victim} cannot see its own canary job",
                    ctx.evidence(control),
                )
            sacct_ok, _ = wait_for(
                lambda: self._in_sacct(ctx, target, victim, nonce), timeout_s=10, poll_s=1.0
            )
            return [self._look(ctx, target, observer, victim, nonce, sacct_ok=sacct_ok is True)]
        finally:
            run(ctx, target.endpoint, scancel(job_id), tenant=victim, timeout_s=30, what="scancel")

    def _in_sacct(self, ctx: ProbeContext, target: Target, victim: str, nonce: str) -> bool | None:
        """True: B sees its canary in sacct; False: sacct does not work here; None: not there yet."""
        result = run(ctx, target.endpoint, SACCT, tenant=victim, timeout_s=30, what="sacct")
        try:
            return (
                True
                if result.ok and jobs_named(parse_sacct(result.stdout), nonce)
                else (None if result.ok else False)
            )
        except ParseError:
            return False

    def _look(
        self, ctx: ProbeContext, target: Target, observer: str, victim: str, nonce: str, *, sacct_ok: bool
    ) -> FindingDraft:
        hits: list[dict[str, Any]] = []
        paths: dict[str, str] = {}
        if not sacct_ok:
            paths["sacct -a"] = f"not available ({victim} does not see its own canary in sacct)"
        for path, command, parse in (
            ("squeue -a", SQUEUE, lambda out: bool(jobs_named(parse_squeue(out), nonce))),
            ("sacct -a", SACCT, lambda out: bool(jobs_named(parse_sacct(out), nonce))),
            ("scontrol show jobs", SHOW_JOBS, lambda out: f"JobName={nonce}" in out),
        ):
            if path in paths:
                continue
            result = run(ctx, target.endpoint, command, tenant=observer, timeout_s=30, what=path)
            try:
                seen = result.ok and parse(result.stdout)
                paths[path] = "checked" if result.ok else f"not available (exit {result.exit_code})"
            except ParseError as exc:
                paths[path] = f"not available ({exc})"
                continue
            if seen:
                hits.append(
                    {
                        "path": path,
                        "as": observer,
                        "cmd": result.command,
                        "excerpt": nonce_excerpt(ctx.redact(result.stdout), nonce),
                    }
                )
        evidence = {"nonce": nonce, "victim": victim, "observer": observer, "paths": paths}
        if hits:
            return self.finding(
                target,
                Outcome.FAIL,
                critical=True,
                evidence={**evidence, "hits": hits},
                summary=f"{observer} sees {victim}'s canary job via {', '.join(h['path'] for h in hits)}",
            )
        if paths.get("squeue -a") != "checked":
            return self.finding(
                target, Outcome.ERROR, evidence=evidence, summary="squeue could not be read as the observer"
            )
        return self.finding(
            target,
            Outcome.PASS,
            evidence=evidence,
            summary=f"{observer} cannot see {victim}'s canary job ({', '.join(p for p, s in paths.items() if s == 'checked')})",
        )
