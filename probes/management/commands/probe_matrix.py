"""``manage.py probe_matrix``: run the whole probe catalog against testbed profiles, print probe x profile.

This is the discrimination matrix of the catalog: the same probes, run against a well-run
testbed (``exemplary``) and a careless one (``leaky``), must tell them apart wherever their knobs
differ. Each profile gets its own testbed (``python -m testbed up``), a :class:`ProbeContext` built
from ``testbed.api.info`` (pinned host keys, tenant keys, the metrics/log endpoints, the provider
API), and every probe runs in-process against it, exactly as the runner would call it (unmet
requirements and disruptive probes without opt-in give ``not_applicable``).

    manage.py probe_matrix                              # exemplary and leaky, 4 nodes, non-disruptive
    manage.py probe_matrix --disruptive                 # also fault injection (slower)
    manage.py probe_matrix --red-team [--use exemplary=tb1]  # flaws no knob makes: catch rate
    manage.py probe_matrix --use exemplary=tb1 --keep   # reuse a running testbed, leave it up
    manage.py probe_matrix --profile exemplary --set slurm.private_data=false --probe scheduler_privacy

The command only parses its options, starts and stops testbeds and prints; what it runs is
:mod:`probes.matrix` (and :mod:`probes.red_team` for ``--red-team``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from probes.matrix import ProbeResult, catalog_run, matrix_table, testbed_context
from probes.red_team import red_team_run


class Command(BaseCommand):
    help = "Run the probe catalog against testbed profiles and print probe x profile outcomes and values."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--profile",
            action="append",
            dest="profiles",
            help="testbed profile (repeatable; default: exemplary and leaky)",
        )
        parser.add_argument(
            "--use",
            action="append",
            default=[],
            metavar="PROFILE=NAME",
            help="use the running testbed NAME for PROFILE instead of starting one",
        )
        parser.add_argument("--nodes", type=int, default=4)
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="section.knob=value",
            help="override a knob of every started testbed",
        )
        parser.add_argument(
            "--probe", action="append", dest="probe_ids", help="only these probes (repeatable)"
        )
        parser.add_argument("--disruptive", action="store_true", help="also run the fault-injecting probes")
        parser.add_argument("--keep", action="store_true", help="leave the started testbeds up")
        parser.add_argument(
            "--red-team",
            action="store_true",
            help="apply each red-team mutation (testbed/redteam.py) to an exemplary testbed; print the catch rate",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["red_team"]:
            self.red_team(opts)
            return
        from testbed import api as testbed_api
        from testbed.errors import TestbedError
        from testbed.profiles import parse_set

        profiles: Sequence[str] = opts["profiles"] or ["exemplary", "leaky"]
        use = dict(u.split("=", 1) for u in opts["use"])
        started: list[str] = []
        columns: dict[str, dict[str, ProbeResult]] = {}
        try:
            for profile in profiles:
                name = use.get(profile)
                if name is None:
                    name = f"pm{profile[:4]}"
                    t0 = time.monotonic()
                    try:
                        testbed_api.up(
                            profile, name=name, nodes=opts["nodes"], overrides=parse_set(opts["set"]) or None
                        )
                    except TestbedError as exc:
                        raise CommandError(str(exc)) from exc
                    started.append(name)
                    self.stdout.write(f"testbed {name} ({profile}) up in {time.monotonic() - t0:.1f} s")
                ctx = testbed_context(name, disruptive=opts["disruptive"])
                t0 = time.monotonic()
                results = catalog_run(
                    ctx,
                    opts["probe_ids"],
                    progress=lambda r, p=profile: self.stdout.write(
                        f"  [{p}] {r.probe_id}: {r.cell()} ({r.seconds:.1f} s"
                        + (f"; pool settled {r.settled_s} s before" if r.settled_s is not None else "")
                        + ")"
                    ),
                )
                total = time.monotonic() - t0
                waits = sum(r.seconds for r in results.values() if r.disruptive)
                self.stdout.write(
                    f"{profile}: whole catalog {total:.1f} s; without disruptive probes {max(0.0, total - waits):.1f} s"
                )
                columns[profile] = results
        finally:
            if not opts["keep"]:
                for name in started:
                    testbed_api.down(name)
        self.stdout.write("")
        self.stdout.write(matrix_table(columns))
        for profile, results in columns.items():
            for result in results.values():
                for f in result.findings:
                    if str(f.outcome) not in ("pass", "not_applicable"):
                        self.stdout.write(
                            f"  {profile} {result.probe_id} {f.target}: {f.outcome}: {f.summary}"
                        )

    def red_team(self, opts: dict[str, Any]) -> None:
        """Mutations no knob makes, on one exemplary testbed: catch rate and false criticals."""
        from testbed import api as testbed_api

        name = dict(u.split("=", 1) for u in opts["use"]).get("exemplary")
        started = name is None
        name = name or "pmredteam"
        if started:
            testbed_api.up("exemplary", name=name, nodes=min(opts["nodes"], 2))
        try:
            report = red_team_run(name, progress=self.stdout.write)
        finally:
            if started and not opts["keep"]:
                testbed_api.down(name)
        self.stdout.write("")
        for line in report.lines():
            self.stdout.write(line)
