"""Benchmark of the customer-feedback import: a 50,000-row survey export into one cycle
(run: `.venv/bin/python bench/feedback_import_bench.py`; DATABASE_URL picks the server, PostgreSQL advised).

It builds a cycle under the default rubric with 100 providers in a throwaway test database,
writes a CSV of ``--rows`` distinct answers (provider x rated item x respondent), then imports it
through ``manage.py feedback_import`` exactly as an analyst would: first ``--dry-run``, then for
real. It prints each step's wall and CPU time, the progress lines the command printed, the rows
stored, and the load average (the machine is shared: the wall time waits for a core). Issue 15
measured 1 min 47 s for 50,000 rows, with no output until the end. Not a timed test.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def cycle_build(*, providers: int):
    import datetime as dt

    from providers.models import Cycle, Provider
    from ratings.sample import default_rubric_get

    rubric = default_rubric_get()
    cycle = Cycle.objects.create(name="Import bench", slug="bench-import", rubric_version=rubric,
                                 period_start=dt.date(2026, 10, 1), period_end=dt.date(2026, 12, 31))
    provs = Provider.objects.bulk_create(
        [Provider(name=f"Bench provider {i:03d}", slug=f"bench-{i:03d}") for i in range(providers)]
    )
    cycle.providers.set(provs)
    return cycle, provs


def csv_write(path: Path, *, providers: list, keys: list[str], rows: int) -> None:
    """``rows`` distinct answers: every provider and rated item, then as many respondents as needed."""
    per_org = len(providers) * len(keys)
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("provider_slug,area_or_criterion,rating,source,respondent_org,comment,date\n")
        for n in range(rows):
            org, rest = divmod(n, per_org)
            p, k = divmod(rest, len(keys))
            out.write(f"{providers[p].slug},{keys[k]},{1 + n % 5},survey,Customer {org},"
                      f"\"fine, mostly\",2026-11-{1 + n % 28:02d}\n")


def _timed(argv: list[str]) -> tuple[float, float, str]:
    from django.core.management import call_command

    out, err = io.StringIO(), io.StringIO()
    start, start_cpu = time.perf_counter(), time.process_time()
    call_command(*argv, stdout=out, stderr=err)
    return time.perf_counter() - start, time.process_time() - start_cpu, out.getvalue() + err.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--providers", type=int, default=100)
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        from ratings.models import CustomerFeedback
        from reviews.models import AuditEvent
        from reviews.services import cycle_feedback_targets

        cycle, provs = cycle_build(providers=args.providers)
        accepted, _ = cycle_feedback_targets(cycle=cycle)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "feedback.csv"
            csv_write(path, providers=provs, keys=sorted(accepted), rows=args.rows)
            size = path.stat().st_size
            print(f"cycle: {len(provs)} providers, {len(accepted)} rated items; file: {args.rows} rows, "
                  f"{size / 1e6:.1f} MB")
            dry_wall, dry_cpu, _ = _timed(["feedback_import", cycle.slug, str(path), "--dry-run"])
            wall, cpu, out = _timed(["feedback_import", cycle.slug, str(path)])
        stored = CustomerFeedback.objects.filter(cycle=cycle).count()
        audited = AuditEvent.objects.filter(model="ratings.customerfeedback").count()
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"dry run: {dry_wall:6.1f} s wall, {dry_cpu:6.1f} s CPU")
        print(f"import:  {wall:6.1f} s wall, {cpu:6.1f} s CPU (the web/command process; PostgreSQL's own time "
              "is in the wall time only)")
        print(f"stored: {stored} feedback rows, {audited} audit events")
        lines = out.strip().splitlines()
        print(f"the command printed {len(lines)} lines; first and last: {lines[:1]} ... {lines[-2:]}")
        assert stored == args.rows, (stored, args.rows)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
