"""health_check_configured: does Slurm run a node health check that can actually catch a fault?

Reads ``scontrol show config`` as a tenant on the login node, then inspects what the configured
``HealthCheckProgram`` (periodic, ``HealthCheckInterval`` > 0) or, failing that, the ``Prolog``
runs, on a compute node where slurmd runs it: its resolved path, and its text
(probes/parsers/healthcheck.py). A configured name is not enough: Slurm ignores a health check's
exit code, so ``/bin/true``, an empty script or one that only logs protects nothing and fails.
NHC, DCGM diagnostics, or a script that checks the node and drains it pass; on a GPU cluster a
custom script that checks no GPU is a ``warn``. A program a tenant cannot read or a binary
Opgrade cannot inspect is a ``warn`` (configured, not verifiable).
"""

from __future__ import annotations

from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, compute_nodes, run
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.healthcheck import classify_health_check
from probes.parsers.slurm import parse_scontrol_config, slurm_config_facts
from probes.transport import Command

SHOW_CONFIG = Command("scontrol show config")
INSPECT = Command(
    'p={prog}; echo ==resolved==; readlink -f -- "$p"; echo ==stat==; '
    "stat -L -c '%a|%U|%s|%F' -- \"$p\" 2>/dev/null; echo ==head==; "
    'if [ ! -e "$p" ]; then true; elif [ ! -r "$p" ]; then echo \'(unreadable)\'; '
    "elif [ \"$(head -c 4 -- \"$p\" | tr -d '\\177')\" = ELF ]; then echo '(ELF binary)'; "
    'else head -c 16384 -- "$p"; fi',
    prog="",
)


def inspect(program: str) -> Command:
    return Command(INSPECT.template, prog=program)


@register
class HealthCheckConfigured(CatalogProbe, definition="health_check_configured"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        result = run(ctx, target.endpoint, SHOW_CONFIG, timeout_s=30, what="scontrol show config")
        evidence = ctx.evidence(result)
        try:
            facts = slurm_config_facts(parse_scontrol_config(result.stdout))
        except ParseError as exc:
            raise Abort(Outcome.ERROR, f"could not read the Slurm config: {exc}", evidence) from exc
        evidence["facts"] = {
            "HealthCheckProgram": facts.health_check_program,
            "HealthCheckInterval_s": facts.health_check_interval_s,
            "Prolog": facts.prolog,
        }
        periodic = bool(facts.health_check_program) and (facts.health_check_interval_s or 0) > 0
        program = (
            facts.health_check_program
            if periodic
            else (facts.prolog if facts.health_check_configured else "")
        )
        if not program or program.lower() == "(null)":
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    summary="no HealthCheckProgram and no NHC/DCGM prolog",
                    evidence=evidence,
                )
            ]
        nodes = compute_nodes(ctx)
        where = nodes[0] if nodes else target.endpoint
        looked = run(ctx, where, inspect(program), timeout_s=30, what="health check inspection")
        evidence["program"] = {
            "path": program,
            "inspected_on": where.host if where else "",
            **ctx.evidence(looked),
        }
        try:
            verdict = classify_health_check(looked.stdout)
        except ParseError as exc:
            raise Abort(Outcome.ERROR, f"could not inspect {program}: {exc}", evidence) from exc
        evidence["verdict"] = {
            "kind": verdict.kind,
            "checks_gpu": verdict.checks_gpu,
            "detail": verdict.detail,
        }
        how = f"every {facts.health_check_interval_s} s" if periodic else "in the prolog"
        if verdict.protects is False:
            return [
                self.finding(
                    target,
                    Outcome.FAIL,
                    summary=f"health check configured {how} but useless: {verdict.detail}",
                    evidence=evidence,
                )
            ]
        if verdict.protects is None:
            return [
                self.finding(
                    target,
                    Outcome.WARN,
                    summary=f"health check configured {how}, not verifiable: {verdict.detail}",
                    evidence=evidence,
                )
            ]
        gpus = int(ctx.facts.get("gpu_count") or 0)
        if gpus > 0 and verdict.kind == "drains" and not verdict.checks_gpu:
            return [
                self.finding(
                    target,
                    Outcome.WARN,
                    summary=f"health check {how} drains nodes but checks no GPU: {verdict.detail}",
                    evidence=evidence,
                )
            ]
        return [
            self.finding(
                target, Outcome.PASS, summary=f"health check {how}: {verdict.detail}", evidence=evidence
            )
        ]
