"""The red-team suite: flaws no profile knob makes, applied to an exemplary testbed after ``up``.

One two-node ``exemplary`` testbed for the module: the isolation and exposure probes run on it
clean (no critical finding may appear), then each group of mutations of ``testbed/redteam.py``
is applied, its probe run once, and the mutations reverted (probes/red_team.py). Every mutation
must be caught by its probe as expected (critical where expected), with the mutation's own path
or listener in the evidence. The catch rate and false-critical count are those that
``manage.py probe_matrix --red-team`` prints.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from probes.red_team import RedTeamReport, red_team_run
from testbed import redteam
from testbed.pytest_helpers import prefixed_name, running_testbed

pytestmark = [pytest.mark.testbed, pytest.mark.integration]


def _leftovers(name: str) -> list[str]:
    """What a mutation could leave behind once reverted: files, ACLs, group members, listeners."""
    c = redteam.context(name)
    found = [
        str(p)
        for pattern in (
            f"/srv/opgtb-{name}-*",
            f"/var/log/opgtb-{name}-*",
            f"/var/opt/opgtb-{name}-*",
            f"/opt/opgtb-{name}",
            f"/run/opgtb-{name}",
            f"/etc/cron.d/opgtb-{name}-*",
            f"/dev/opgtb-{name}-*",
        )
        for p in Path("/").glob(pattern.lstrip("/"))
    ]
    found += [
        str(p) for p in (Path("/var/mail") / c.victim, c.root / "logs" / "nginx-access.log.1") if p.exists()
    ]
    # host_privilege_surface: the modes and files it changed inside the testbed are back
    modes = {
        c.root / "munge-etc": 0o700,
        c.root / "munge-etc" / "munge.key": 0o400,
        c.root / "slurm" / "slurmdbd.conf": 0o600,
    }
    found += [
        f"mode {p} {oct(p.stat().st_mode & 0o7777)}"
        for p, m in modes.items()
        if p.stat().st_mode & 0o7777 != m
    ]
    found += [str(p) for p in (c.root / "config-backup", c.root / "bin" / "epilog.sh") if p.exists()]
    found += [
        f"slurm.conf still names {line}"
        for line in (c.root / "slurm" / "slurm.conf").read_text().splitlines()
        if line.startswith("Epilog=")
    ]
    found += (
        ["healthcheck.sh still sets PATH"]
        if "PATH=" in (c.root / "bin" / "healthcheck.sh").read_text()
        else []
    )
    found += [
        f"acl {p}" for p in (c.victim_home, c.victim_log_dir) if "system.posix_acl_access" in os.listxattr(p)
    ]
    found += (
        ["nginx.conf still holds a red-team route"] if "# red-team" in (c.root / "nginx" / "nginx.conf").read_text() else []
    )
    groups = subprocess.run(
        ["id", "-Gn", c.observer], capture_output=True, text=True, check=False
    ).stdout.split()
    found += [f"{c.observer} in group {c.victim}"] if c.victim in groups else []
    listeners = subprocess.run(
        ["ip", "netns", "exec", c.ctl_netns, "ss", "-lntup"], capture_output=True, text=True, check=False
    ).stdout
    found += [line for line in listeners.splitlines() if "socat" in line]
    return found


@pytest.fixture(scope="module")
def red_team() -> Iterator[tuple[RedTeamReport, list[str]]]:
    with running_testbed("exemplary", name=prefixed_name("rt"), nodes=2) as info:
        report = red_team_run(info.name)
        yield report, _leftovers(info.name)


def test_the_clean_exemplary_testbed_shows_no_critical_finding(red_team):
    report, _ = red_team
    assert not report.false_criticals, {
        p: [f.summary for f in report.clean[p].findings] for p in report.false_criticals
    }
    assert {r.outcome for r in report.clean.values()} == {"pass"}, {
        p: r.cell() for p, r in report.clean.items()
    }


@pytest.mark.parametrize("mutation", [m.name for m in redteam.MUTATIONS])
def test_every_mutation_is_caught_by_its_probe_as_expected(red_team, mutation):
    report, _ = red_team
    (catch,) = [c for c in report.catches if c.mutation == mutation]
    assert catch.caught, catch


def test_the_catch_rate_is_complete_over_at_least_fifteen_mutations(red_team):
    report, _ = red_team
    assert len(report.catches) >= 31 and report.catch_rate == 1.0, "\n".join(report.lines())
    n = len(report.catches)
    assert report.lines()[-1].startswith(
        f"catch rate {n}/{n} = 1.00; false criticals on the clean testbed: 0"
    )


def test_every_host_privilege_mutation_is_caught_on_its_own_path(red_team):
    """host_privilege_surface's ten flaws (secrets, root-run paths, setuid, socket, device) are
    applied together: each must be named in the evidence, as a critical fail."""
    report, _ = red_team
    mine = [c for c in report.catches if c.probe == "host_privilege_surface"]
    assert len(mine) == 10 and all(c.caught and c.critical and c.marker_seen for c in mine), mine


def test_every_mutation_is_reverted_after_its_run(red_team):
    _, leftovers = red_team
    assert leftovers == []
