"""``manage.py demo_cycle``: a full rating cycle on the built-in testbed, for the README's quick start.

    manage.py demo_cycle                      # three testbeds, the whole catalog on the Celery workers
    manage.py demo_cycle --remeasure          # probe again now instead of reusing today's runs
    manage.py demo_cycle --prefix qs          # testbeds qsaurora, qsboreal, qscirrus (tests)

Runs the steps of ``quickstart.services`` in order with a timing per step, prints the tier table,
the public URL of the published report and one-time passwords for the demo users (reset on every
run). Needs root and the testbed packages (scripts/install-testbed.sh). Probes go to the Celery
workers (``scripts/demo.sh`` starts one); only when no worker consumes the ``probes`` queue do they
run in this process, and the command says so loudly.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse
from django.utils import timezone

from config.access import Role
from probes.models import Finding, ProbeRun
from quickstart import costs_demo, services
from quickstart.evidence import PROVIDERS
from rubric.spec import OUTCOME_SEVERITY


class Command(BaseCommand):
    help = "Run the demo rating cycle on three testbeds and publish its report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--prefix", default="", help="testbed name prefix (tests use one)")
        parser.add_argument("--nodes", type=int, default=2, help="compute nodes per testbed")
        parser.add_argument("--probe-timeout", type=float, default=420, help="seconds to wait for each phase of probe runs (non-disruptive, then disruptive)")
        parser.add_argument("--remeasure", action="store_true", help="probe again now instead of reusing today's runs")
        parser.add_argument("--in-process", action="store_true", help="run probes here even if a worker answers")
        parser.add_argument(
            "--all-probes", action="store_true",
            help=f"also run the slow probes left out by default ({', '.join(services.SLOW_PROBES)})",
        )
        parser.add_argument(
            "--skip-probe", action="append", default=[], metavar="PROBE_ID", help="leave this probe out (repeatable)"
        )
        parser.add_argument("--seed", type=int, default=None, help="scoring seed (default: derived from the cycle)")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="where the site is served")

    def handle(self, *args: Any, **opts: Any) -> None:
        self.t_start = time.monotonic()
        try:
            self._run(opts)
        except services.DemoError as exc:
            raise CommandError(str(exc)) from exc

    @contextmanager
    def step(self, number: int, title: str) -> Iterator[Callable[[str], None]]:
        self.stdout.write(self.style.MIGRATE_HEADING(f"[{number}/9] {title}"))
        t0 = time.monotonic()
        yield self.say
        self.stdout.write(f"      done in {time.monotonic() - t0:.1f} s (total {time.monotonic() - self.t_start:.0f} s)")

    def say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

    def _run(self, opts: dict[str, Any]) -> None:
        today = timezone.now().date()
        with self.step(1, "Rubric: import and freeze rubric/data/opgrade-2026.2.yaml") as say:
            rubric, message = services.demo_rubric_load()
            say(f"  {message}")

        with self.step(2, "Staff users (one-time passwords are printed at the end)") as say:
            users = [
                services.demo_user_ensure(username="admin", role=Role.ADMIN, superuser=True),
                services.demo_user_ensure(username="analyst", role=Role.ANALYST),
                services.demo_user_ensure(username="reviewer-a", role=Role.REVIEWER),
                services.demo_user_ensure(username="reviewer-b", role=Role.REVIEWER),
                services.demo_user_ensure(username="publisher", role=Role.PUBLISHER),
            ]
            by_name = {u.username: u.user for u in users}
            say("  " + ", ".join(f"{u.username} ({u.role})" for u in users))

        with self.step(3, f"Testbeds: {', '.join(f'{p.profile} as {p.name}' for p in PROVIDERS)}") as say:
            infos = services.demo_testbeds_up(prefix=opts["prefix"], nodes=opts["nodes"], say=say)

        with self.step(4, "Providers: clusters, access, tenant keys (encrypted), host keys") as say:
            say("  Host keys are read from each host and checked against the key the provider published")
            say("  (testbed info); pinning them is the analyst's explicit action, recorded as user 'analyst':")
            clusters = []
            for spec in PROVIDERS:
                say(f"  {spec.name} ({spec.slug}) on testbed {infos[spec.slug].name}:")
                clusters.append(
                    services.demo_provider_connect(spec=spec, info=infos[spec.slug], analyst=by_name["analyst"], say=say)
                )
            provider_user = services.demo_user_ensure(
                username="aurora-provider", role=Role.PROVIDER, provider=clusters[0].provider
            )
            users.append(provider_user)

        with self.step(5, "Cycle") as say:
            cycle = services.demo_cycle_ensure(
                rubric=rubric, providers=[c.provider for c in clusters], day=today
            )
            say(f"  {cycle.name} ({cycle.slug}), rubric {rubric.label}, peer set: "
                + ", ".join(c.provider.name for c in clusters))

        with self.step(6, "Probes: the whole catalog on every cluster") as say:
            slot = timezone.now() if opts["remeasure"] else dt.datetime.combine(today, dt.time(), tzinfo=dt.UTC)
            queues = set() if opts["in_process"] else services.celery_worker_queues()
            in_process = "probes" not in queues
            if in_process:
                say(self.style.WARNING(
                    "  !!! NO CELERY WORKER consumes the 'probes' queue"
                    + (" (--in-process)" if opts["in_process"] else "")
                    + ": running the probes IN THIS PROCESS instead. !!!"
                ))
                say(self.style.WARNING("  !!! Start one with: .venv/bin/celery -A config worker -Q probes,default !!!"))
            else:
                say("  sent to the Celery workers (queue 'probes'); disruptive probes run last, one per cluster at a time")
            skip = list(opts["skip_probe"]) + ([] if opts["all_probes"] else list(services.SLOW_PROBES))
            if skip:
                say(f"  left out: {', '.join(sorted(set(skip)))}" + ("" if opts["all_probes"] else " (slow; --all-probes runs it)"))
            runs = services.demo_probes_run(
                cycle=cycle, clusters=clusters, slot=slot, timeout_s=opts["probe_timeout"],
                in_process=in_process, skip=skip, say=say,
            )
            self._probe_summary(runs)
            say("  cost of useful output: prices, offered capacity, scheduled availability samples (issue 16)")
            costs_demo.demo_costs_prepare(
                cycle=cycle, clusters=clusters, analyst=by_name["analyst"], samples=2, timeout_s=opts["probe_timeout"],
                execute=services._execute_here if in_process else None, say=say,
            )

        with self.step(7, "Human evidence: double-blind doc reviews and customer feedback") as say:
            counts = services.demo_doc_reviews(
                cycle=cycle, analyst=by_name["analyst"], reviewers=[by_name["reviewer-a"], by_name["reviewer-b"]]
            )
            say(f"  doc reviews: {counts['assigned']} assigned, {counts['submitted']} submitted blind, "
                f"{counts['reconciled']} reconciled (reviewer-a first, reviewer-b second)")
            written = services.demo_feedback_import(cycle=cycle, analyst=by_name["analyst"])
            say(f"  customer feedback: {written} rows imported from quickstart/data/sample_feedback.csv"
                if written else "  customer feedback: sample_feedback.csv already imported for this cycle")

        with self.step(8, "Scores and tiers") as say:
            snapshot = services.demo_scores_compute(cycle=cycle, seed=opts["seed"])
            say(f"  snapshot #{snapshot.pk}, seed {snapshot.seed}, engine {snapshot.engine_version}")
            self._tier_table(snapshot)
            say("  compute grades and observed rents (issue 17):")
            from quickstart.grades_demo import demo_grades_prepare, grade_sheet_lines

            demo_grades_prepare(clusters=clusters, day=today, analyst=by_name["analyst"], say=say)

        with self.step(9, "Report: draft from the snapshot, fact-check, publish (as 'publisher')") as say:
            report, how = services.demo_report_publish(snapshot=snapshot, publisher=by_name["publisher"])
            say(f"  report #{report.pk}: {how}")
            for line in grade_sheet_lines(report.content):
                say(line)

        base = opts["base_url"].rstrip("/")
        self.say("")
        self.say(self.style.SUCCESS(f"Demo cycle ready in {time.monotonic() - self.t_start:.0f} s."))
        self.say(f"  Published report: {base}{reverse('reports:overview', args=[report.pk])}")
        self.say(f"  Admin:            {base}/admin/")
        self.say(f"  Provider portal:  {base}/portal/   (aurora-provider)")
        self.say(f"  API docs:         {base}/api/docs/   (signed in)")
        self.say("One-time passwords (shown once; a new run of demo_cycle resets them):")
        for u in users:
            self.say(f"  {u.username:<16} {u.password:<20} {u.role}")
        self.say(f"REPORT_URL={base}{reverse('reports:overview', args=[report.pk])}")

    def _probe_summary(self, runs: list[ProbeRun]) -> None:
        by_run: dict[int, dict[str, int]] = {}
        for run_id, outcome in Finding.objects.filter(run__in=runs).values_list("run_id", "outcome"):
            by_run.setdefault(run_id, {}).setdefault(outcome, 0)
            by_run[run_id][outcome] += 1
        clusters = sorted({r.cluster.name for r in runs})
        probes = sorted({r.probe_id for r in runs})
        cell = {(r.cluster.name, r.probe_id): r for r in runs}
        self.say(f"  {'probe':<28}" + "".join(f"{c:<20}" for c in clusters))
        for p in probes:
            row = []
            for c in clusters:
                r = cell.get((c, p))
                outcomes = by_run.get(r.pk, {}) if r else {}
                worst = next((o for o in OUTCOME_SEVERITY if o in outcomes), r.status if r else "-")
                row.append(f"{worst:<20}")
            self.say(f"  {p:<28}" + "".join(row))

    def _tier_table(self, snapshot: Any) -> None:
        rows = snapshot.assignments.select_related("provider").order_by("-composite")
        self.say(f"  {'provider':<16} {'tier':<16} {'composite':>9} {'90% CI':>13} {'coverage':>8}  notes")
        for a in rows:
            ci = f"{a.ci_low:.2f}-{a.ci_high:.2f}" if a.ci_low is not None and a.ci_high is not None else "-"
            notes = []
            if a.gate_caps:
                notes.append("capped: " + ", ".join(str(g.get("criterion", g)) if isinstance(g, dict) else str(g) for g in a.gate_caps))
            if a.borderline:
                notes.append("borderline")
            comp = f"{a.composite:.3f}" if a.composite is not None else "-"
            self.say(f"  {a.provider.name:<16} {a.tier:<16} {comp:>9} {ci:>13} {a.coverage:>8.2f}  {'; '.join(notes)}")
