"""time_to_first_job: how long from ``sbatch`` until a one-node job runs?

As a tenant on the login node: submit a short job named with a nonce from the tenant's home,
poll ``squeue`` for its state over the run's one SSH connection, and report the seconds until
it is RUNNING (or already COMPLETED: it ran). The job is cancelled at the end.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, new_nonce, run, wait_for
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.transport import Command

RAN = {"RUNNING", "COMPLETING", "COMPLETED"}
GONE = {"FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"}


def submit(name: str) -> Command:
    return Command(
        "cd && sbatch --parsable -J {name} -N 1 -o /dev/null --wrap {job}", name=name, job="sleep 20"
    )


def job_state(job_id: str) -> Command:
    return Command(
        "squeue -h -j {job} -o %T; sacct -X -n -P -j {job} -o State 2>/dev/null | head -n 1", job=job_id
    )


@register
class TimeToFirstJob(CatalogProbe, definition="time_to_first_job"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        name = new_nonce("opgrade-first-job")
        if target.endpoint is None:
            raise Abort(Outcome.NOT_APPLICABLE, "no login node is configured")
        ctx.ssh(target.endpoint)  # connect first: the handshake is not the scheduler's time
        start = time.monotonic()
        submitted = run(ctx, target.endpoint, submit(name), timeout_s=30, what="sbatch")
        job_id = submitted.stdout.strip().split(";")[0]
        if not submitted.ok or not job_id.isdigit():
            raise Abort(Outcome.FAIL, "sbatch refused a one-node job", ctx.evidence(submitted))
        states: list[str] = []

        def check() -> str | None:
            result = run(ctx, target.endpoint, job_state(job_id), timeout_s=15, what="squeue")
            state = next((w.split()[0] for w in result.stdout.split("\n") if w.strip()), "")
            if not states or states[-1] != state:
                states.append(state)
            if state in RAN:
                return state
            if state in GONE:
                raise Abort(
                    Outcome.FAIL, f"the job ended {state} without running", {"job": job_id, "states": states}
                )
            return None

        try:
            found, _ = wait_for(check, timeout_s=float(self.setting(ctx, "run_timeout_s")), poll_s=0.25)
            seconds = round(time.monotonic() - start, 2)
        finally:
            run(ctx, target.endpoint, Command("scancel {job}", job=job_id), timeout_s=15, what="scancel")
        evidence = {"job": job_id, "states": states, "submit_cmd": submitted.command}
        return self.timed(
            ctx, target, seconds, observed=found is not None, evidence=evidence,
            summary=f"job {job_id} {found.lower()} {seconds} s after sbatch" if found is not None else f"job {job_id} was not running after {seconds} s",
        )
