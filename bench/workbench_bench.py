"""Benchmark of the cycle workbench page on a 100-provider x 40-criterion cycle
(run: `.venv/bin/python bench/workbench_bench.py`; DATABASE_URL picks the server, PostgreSQL advised).

It builds a cycle under the default rubric (its 40 criteria) with 100 providers in a throwaway
test database, in bulk: 3 replicate runs per probe and provider with their findings (mostly
passing, some failing, declined, not applicable or harness errors), two doc reviews per
documentation criterion and customer feedback per area; it stores one score snapshot, then
renders, signed in as an analyst and through the whole Django stack (middleware, admin login
wall, template):

* the workbench page (/admin/workbench/<cycle>/): 4,000 matrix cells, coverage, gates, tiers;
* the peer in the same run: the cycle's admin change page, the bare form the workbench replaces.

It prints the median of 5 renders of each, their ratio and the number of SQL queries (which must
not grow with the peer set; tests/workbench checks that). The issue's aim: under 1 s. Not a
timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def _median_ms(client, url: str, repeats: int) -> tuple[float, float, int, int]:
    """Median wall time and median CPU time of this process (ms): on a shared, loaded machine
    the wall time waits for a core; the CPU time is what the page itself costs."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, cpu = [], []
    queries = size = 0
    for _ in range(repeats):
        connection.queries_log.clear()
        with CaptureQueriesContext(connection) as ctx:
            start, start_cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
        assert response.status_code == 200, (url, response.status_code)
        queries, size = len(ctx.captured_queries), len(response.content)
    return statistics.median(times), statistics.median(cpu), queries, size


def cycle_build(*, providers: int, seed: int = 7):
    """A cycle of ``providers`` under the default rubric, written with bulk inserts."""
    import datetime as dt
    import random

    from django.contrib.auth import get_user_model

    from probes.models import Finding, ProbeRun
    from providers.models import Cluster, Cycle, Provider
    from ratings.models import CustomerFeedback, DocReview, respondent_org_hash
    from ratings.sample import default_rubric_get
    from rubric.models import Area, Criterion

    rng = random.Random(seed)
    rubric = default_rubric_get()
    cycle = Cycle.objects.create(name="Bench cycle", slug="bench-workbench", rubric_version=rubric,
                                 period_start=dt.date(2026, 10, 1), period_end=dt.date(2026, 12, 31))
    provs = Provider.objects.bulk_create(
        [Provider(name=f"Bench provider {i:03d}", slug=f"bench-{i:03d}") for i in range(providers)]
    )
    cycle.providers.set(provs)
    clusters = Cluster.objects.bulk_create([Cluster(provider=p, name="main", gpu_count=64) for p in provs])
    criteria = list(Criterion.objects.filter(rubric_version=rubric))
    areas = list(Area.objects.filter(rubric_version=rubric))
    reviewers = [get_user_model().objects.create_user(username=f"bench-reviewer-{i}") for i in (1, 2)]
    slot = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    probes: dict[str, list] = {}
    for c in criteria:
        if "probe" in c.evidence_kinds and c.probe_id:
            probes.setdefault(c.probe_id, []).append(c)
    runs = ProbeRun.objects.bulk_create([
        ProbeRun(cycle=cycle, cluster=cl, probe_id=probe_id, probe_version="1", scheduled_for=slot, status="done",
                 idempotency_key=f"bench-{cl.pk}-{probe_id}-{r}")
        for cl in clusters for probe_id in sorted(probes) for r in range(3)
    ])
    findings = []
    for run in runs:
        for c in probes[run.probe_id]:
            roll = rng.random()
            outcome = ("pass" if roll < 0.8 else "fail" if roll < 0.9 else "declined" if roll < 0.93
                       else "not_applicable" if roll < 0.96 else "error")
            value = None
            if c.probe_metric and outcome == "pass":
                value = c.anchor_worst + rng.random() * (c.anchor_best - c.anchor_worst)
            findings.append(Finding(run=run, probe_id=run.probe_id, probe_version="1", target="cluster",
                                    metric=c.probe_metric, outcome=outcome, value=value, unit=c.unit))
    Finding.objects.bulk_create(findings, batch_size=5000)
    DocReview.objects.bulk_create([
        DocReview(cycle=cycle, provider=p, criterion=c, reviewer=r, score=rng.randint(1, 4),
                  citations=[{"url": "https://docs.example/x", "quote": "q"}])
        for p in provs for c in criteria if "doc_review" in c.evidence_kinds for r in reviewers
    ], batch_size=5000)
    orgs = [respondent_org_hash(f"bench customer {i}") for i in range(3)]
    CustomerFeedback.objects.bulk_create([
        CustomerFeedback(cycle=cycle, provider=p, area=a, rating=rng.randint(1, 5), source="survey",
                         respondent_org_hash=org)
        for p in provs for a in areas for org in orgs
    ], batch_size=5000)
    return cycle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--providers", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        from config.access import Role
        from ratings.services import cycle_scores_compute
        from reviews.services import user_role_set

        start = time.perf_counter()
        cycle = cycle_build(providers=args.providers)
        snapshot = cycle_scores_compute(cycle=cycle)
        built = time.perf_counter() - start
        criteria = cycle.rubric_version.criteria.count()
        analyst = get_user_model().objects.create_user(username="bench-analyst")
        user_role_set(user=analyst, role=Role.ANALYST)
        client = Client()
        client.force_login(analyst)
        print(f"cycle: {args.providers} providers x {criteria} criteria, snapshot #{snapshot.pk} "
              f"(built and scored in {built:.1f} s)")
        wb_ms, wb_cpu, wb_q, wb_size = _median_ms(client, f"/admin/workbench/{cycle.slug}/", args.repeats)
        form_ms, form_cpu, form_q, _ = _median_ms(client, f"/admin/providers/cycle/{cycle.pk}/change/", args.repeats)
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"workbench page:    {wb_ms:7.0f} ms wall, {wb_cpu:7.0f} ms CPU (medians of {args.repeats}), "
              f"{wb_q} queries, {wb_size / 1024:.0f} KiB ({'under' if wb_ms < 1000 else 'OVER'} the 1 s aim)")
        print(f"cycle change page: {form_ms:7.0f} ms wall, {form_cpu:7.0f} ms CPU, {form_q} queries (the peer)")
        print(f"ratio workbench / change page: {wb_ms / form_ms:.1f}x wall, {wb_cpu / form_cpu:.1f}x CPU")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
