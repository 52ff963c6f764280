"""kernel_pending_reboot: is a newer kernel installed but not booted?

Runs one fixed script per node (login and compute) that prints ``uname -r``, the kernels in
``/boot`` and ``/lib/modules`` and the Debian/Ubuntu reboot marker; the rule is cmax's (same
flavour, version order; see probes/parsers/kernel.py). A pending reboot leaves the node running
the unpatched kernel, which ClusterMAX grades critical.
"""

from __future__ import annotations

from collections.abc import Iterable

from probes.catalog import register
from probes.catalog._support import Abort, CatalogProbe, run
from probes.catalog.base import FindingDraft, Outcome, ProbeContext, Target
from probes.parsers import ParseError
from probes.parsers.kernel import parse_kernel_state
from probes.transport import Command

KERNEL_SCRIPT = Command(
    "echo ==uname==; uname -r; echo ==boot==; ls -1 /boot 2>/dev/null; echo ==modules==; "
    "ls -1 /lib/modules 2>/dev/null; echo ==reboot-required==; "
    "if [ -e /var/run/reboot-required ]; then echo yes; else echo no; fi"
)


@register
class KernelPendingReboot(CatalogProbe, definition="kernel_pending_reboot"):
    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        result = run(ctx, target.endpoint, KERNEL_SCRIPT, timeout_s=20, what="kernel listing")
        evidence = ctx.evidence(result)
        try:
            state = parse_kernel_state(result.stdout)
        except ParseError as exc:
            raise Abort(Outcome.ERROR, f"could not read the kernel state: {exc}", evidence) from exc
        evidence.update(
            running=state.running,
            newest_same_flavour=state.newest_same_flavour,
            reboot_required_marker=state.reboot_required_marker,
        )
        if state.pending_reboot:
            why = (
                f"{state.newest_same_flavour} installed, {state.running} running"
                if state.newer_installed
                else "/var/run/reboot-required is set"
            )
            return [
                self.finding(
                    target, Outcome.FAIL, critical=True, evidence=evidence, summary=f"pending reboot: {why}"
                )
            ]
        return [
            self.finding(
                target,
                Outcome.PASS,
                evidence=evidence,
                summary=f"running {state.running}, nothing newer installed",
            )
        ]
