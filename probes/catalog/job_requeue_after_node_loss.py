"""job_requeue_after_node_loss: does a requeueable job survive losing its node?

Disruptive. As a tenant: submit a ``--requeue`` job, wait until it runs, cut its node off through
the provider API (default fault ``link_down``), and watch ``scontrol show job``: passing means the
job was requeued (``Restarts`` >= 1) and is running again on another node, or completed there.
"""

from __future__ import annotations

from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import (
    Abort,
    CatalogProbe,
    fault_clear,
    fault_inject,
    new_nonce,
    run,
    settle,
    wait_for,
)
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.slurm import parse_scontrol_show
from probes.transport import Command


def submit(name: str) -> Command:
    return Command(
        "cd && sbatch --parsable --requeue -J {name} -N 1 -o /dev/null --wrap {job}",
        name=name,
        job="sleep 600",
    )


def show(job_id: str) -> Command:
    return Command("scontrol show job {job}", job=job_id)


@register
class JobRequeueAfterNodeLoss(CatalogProbe, definition="job_requeue_after_node_loss"):
    def _job(self, ctx: ProbeContext, target: Target, job_id: str) -> dict[str, str]:
        result = run(ctx, target.endpoint, show(job_id), timeout_s=15, what="scontrol show job")
        try:
            return parse_scontrol_show(result.stdout)
        except ParseError:
            return {}

    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        settle(ctx)
        submitted = run(
            ctx, target.endpoint, submit(new_nonce("opgrade-requeue")), timeout_s=30, what="sbatch"
        )
        job_id = submitted.stdout.strip().split(";")[0]
        if not submitted.ok or not job_id.isdigit():
            raise Abort(Outcome.ERROR, "could not submit the requeueable job", ctx.evidence(submitted))
        victim = ""
        trail: list[str] = []
        try:
            first, _ = wait_for(lambda: self._running(ctx, target, job_id, trail), timeout_s=60, poll_s=0.5)
            if first is None:
                raise Abort(
                    Outcome.ERROR,
                    "the job did not start, so no node could be taken from it",
                    {"job": job_id, "states": trail},
                )
            victim = first
            fault_inject(ctx, victim, str(self.setting(ctx, "fault")))

            def rerun() -> str | None:
                job = self._job(ctx, target, job_id)
                note = f"{job.get('JobState')} restarts={job.get('Restarts')} on {job.get('NodeList')}"
                if not trail or trail[-1] != note:
                    trail.append(note)
                again = int(job.get("Restarts", "0") or 0) >= 1
                if (
                    again
                    and job.get("JobState") in ("RUNNING", "COMPLETED")
                    and job.get("NodeList") != victim
                ):
                    return job.get("NodeList", "")
                return None

            node, seconds = wait_for(
                rerun, timeout_s=float(self.setting(ctx, "requeue_timeout_s")), poll_s=1.0
            )
        finally:
            run(ctx, target.endpoint, Command("scancel {job}", job=job_id), timeout_s=15, what="scancel")
            if victim:
                fault_clear(ctx, victim)
        evidence = {"job": job_id, "lost_node": victim, "trail": trail[:30]}
        if node is None:
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    evidence=evidence,
                    summary=f"job {job_id} was not running again {seconds:.0f} s after losing {victim}",
                )
            ]
        return [
            self.finding(
                target,
                Outcome.PASS,
                evidence=evidence,
                summary=f"job {job_id} requeued and running on {node} {seconds:.0f} s after losing {victim}",
            )
        ]

    def _running(self, ctx: ProbeContext, target: Target, job_id: str, trail: list[str]) -> str | None:
        job = self._job(ctx, target, job_id)
        note = f"{job.get('JobState')} on {job.get('NodeList')}"
        if not trail or trail[-1] != note:
            trail.append(note)
        if job.get("JobState") == "RUNNING" and job.get("NodeList") not in (None, "", "(null)"):
            return job["NodeList"]
        return None
