"""The red-team run: flaws no profile knob makes, applied to an ``exemplary`` testbed, caught or not.

``manage.py probe_matrix --red-team`` and ``tests/integration/test_red_team.py`` call
:func:`red_team_run`: first the isolation and exposure probes on the clean testbed (none may
report a critical finding: a false critical), then each group of mutations of
:mod:`testbed.redteam` is applied, its probe run once, and the mutations reverted. A mutation is
caught when its probe's worst outcome is the expected one (critical where expected) and, when it
declares a marker, a finding's evidence shows that marker (so a grouped run proves each flaw was
seen on its own path). A probe run that ends in ``error`` measured nothing and is run once more
(``ERROR_TRIES``); the table says so. The catch rate is caught / mutations.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from probes.matrix import ProbeResult, catalog_run, testbed_context

# An `error` measured nothing (a positive control that failed under load, a timed-out command): it is
# neither a catch nor a miss, so the probe runs once more with the mutation still applied; a second
# error stays a miss (a mutation that makes its probe error is not caught).
ERROR_TRIES = 2

CLEAN_PROBES = (
    "tenant_data_exposure",
    "provider_listeners",
    "bmc_reachable",
    "home_isolation",
    "tenant_log_isolation",
    "tenant_metric_isolation",
    "scheduler_privacy",
    "host_privilege_surface",
)


def foreign_paths(name: str) -> str:
    """host_privilege_surface's scope on a shared machine: the paths of every *other* testbed
    (``/var/lib/opgrade-testbed/OTHER/``, ``opgtb-OTHER-...``), whose own red-team runs must not
    count against this one; everything else on the machine stays in scope."""
    return rf"(/opgrade-testbed/|opgtb-)(?!{name}[-/])[a-z][a-z0-9]*[-/]"


@dataclass(frozen=True)
class Catch:
    mutation: str
    probe: str
    expected: str
    outcome: str
    critical: bool
    marker_seen: bool | None  # None: the mutation declares no marker
    caught: bool
    summary: str = ""
    tries: int = 1  # probe runs with the mutation applied: an `error` (nothing measured) is run again


@dataclass
class RedTeamReport:
    clean: dict[str, ProbeResult] = field(default_factory=dict)
    catches: list[Catch] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def false_criticals(self) -> list[str]:
        return [p for p, r in self.clean.items() if r.critical]

    @property
    def catch_rate(self) -> float:
        return sum(c.caught for c in self.catches) / len(self.catches) if self.catches else 0.0

    def lines(self) -> list[str]:
        out = [f"{'mutation':<32} {'probe':<22} {'expected':<9} {'outcome':<9} caught"]
        for c in self.catches:
            got = c.outcome + ("!" if c.critical else "")
            marker = "" if c.marker_seen is None else ("" if c.marker_seen else " (marker not in evidence)")
            out.append(
                f"{c.mutation:<32} {c.probe:<22} {c.expected:<9} {got:<9} {'yes' if c.caught else 'NO'}{marker}"
                + (f" ({c.tries} tries)" if c.tries > 1 else "")
            )
        out.append(
            f"catch rate {sum(c.caught for c in self.catches)}/{len(self.catches)} = {self.catch_rate:.2f}; "
            f"false criticals on the clean testbed: {len(self.false_criticals)}"
            + (f" ({', '.join(self.false_criticals)})" if self.false_criticals else "")
            + f"; {self.seconds:.0f} s"
        )
        return out


def _judge(m: Any, result: ProbeResult, ctx: Any, *, tries: int = 1) -> Catch:
    marker = m.marker(ctx) if m.marker else None
    blob = json.dumps([f.evidence for f in result.findings], default=str)
    seen = None if marker is None else marker in blob
    caught = result.outcome == m.expect and (result.critical or not m.critical) and seen is not False
    summary = next((f.summary for f in result.findings if str(f.outcome) == result.outcome), "")
    return Catch(m.name, m.probe, m.expect, result.outcome, result.critical, seen, caught, summary, tries)


def red_team_run(
    name: str,
    *,
    mutations: Sequence[str] | None = None,
    settings: dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> RedTeamReport:
    """The clean run, then every group of mutations on testbed ``name`` (exemplary, running)."""
    from testbed import redteam

    chosen = tuple(m for m in redteam.MUTATIONS if mutations is None or m.name in mutations)
    settings = {"host_privilege_surface.foreign_path_regex": foreign_paths(name), **dict(settings or {})}
    report = RedTeamReport()
    start = time.monotonic()
    report.clean = catalog_run(testbed_context(name, settings=settings), list(CLEAN_PROBES))
    if progress:
        for p, r in report.clean.items():
            progress(f"  clean {p}: {r.cell()}")
    for group, members in redteam.groups(chosen).items():
        probe = members[0].probe
        with redteam.applied(name, members) as ctx:
            tries = 1
            result = catalog_run(testbed_context(name, settings=settings), [probe])[probe]
            while result.outcome == "error" and tries < ERROR_TRIES:
                tries += 1
                result = catalog_run(testbed_context(name, settings=settings), [probe])[probe]
        for m in members:
            catch = _judge(m, result, ctx, tries=tries)
            report.catches.append(catch)
            if progress:
                progress(
                    f"  [{group}] {m.name}: {probe} {catch.outcome}{'!' if catch.critical else ''} caught={catch.caught}"
                )
    report.seconds = time.monotonic() - start
    return report
