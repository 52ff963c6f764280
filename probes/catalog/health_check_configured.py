"""health_check_configured: does Slurm run a periodic node health check?

Reads ``scontrol show config`` as a tenant on the login node. Passes when a ``HealthCheckProgram``
runs at a positive ``HealthCheckInterval``, or the ``Prolog`` calls NHC or DCGM (the ways NHC and
DCGM diagnostics are wired into Slurm). Without one, a node whose GPU fell off the bus keeps
taking jobs until a user complains.
"""

from __future__ import annotations

from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, run
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.slurm import parse_scontrol_config, slurm_config_facts
from probes.transport import Command

SHOW_CONFIG = Command("scontrol show config")


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
        if facts.health_check_configured:
            how = facts.health_check_program or facts.prolog
            summary = f"health check configured: {how} every {facts.health_check_interval_s or 0} s"
            return [self.finding(target, Outcome.PASS, summary=summary, evidence=evidence)]
        return [
            self.finding(
                target,
                Outcome.FAIL,
                summary="no HealthCheckProgram and no NHC/DCGM prolog",
                evidence=evidence,
            )
        ]
