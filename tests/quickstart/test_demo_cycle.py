"""The quick start's demo cycle end to end: real testbeds, a real Celery worker on Redis, PostgreSQL.

``manage.py demo_cycle`` brings up three testbeds (exemplary, leaky, flaky) as three providers,
sends the probe catalog to a Celery worker started here as a subprocess (pointed at pytest-django's
test database, hence ``transaction=True``), adds doc reviews and customer feedback, scores the cycle
and publishes the report. The well-run provider must end in a better tier than the leaky one, every
probe run must have been executed by the worker (not in-process), and a second run must reuse what
the first one stored. As in ``make demo``, the one slow fault probe (job requeue, ~150 s a cluster)
is left out by default.
"""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from probes.models import Finding, ProbeRun
from providers.models import Cycle
from quickstart.evidence import PROVIDERS
from quickstart.services import SLOW_PROBES
from ratings.models import ScoreSnapshot
from reports.models import Report
from testbed.pytest_helpers import prefixed_name, require_testbed, serving_exclusive

pytestmark = [pytest.mark.testbed, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
PREFIX = prefixed_name("q")  # testbeds ptqaurora, ptqboreal, ptqcirrus (prefix from OPGRADE_TESTBED_PREFIX)
TIER_ORDER = ["platinum", "gold", "silver", "bronze", "underperforming", "not_rated"]


def _purge_broker() -> None:
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(
        "probes", "default", "unacked", "unacked_index", "unacked_mutex"
    )


@pytest.fixture
def celery_worker(tmp_path: Path) -> Iterator[Path]:
    """A real worker on both queues, on the test database; stopped by pid (its process group)."""
    _purge_broker()
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    log = tmp_path / "worker.log"
    argv = [
        sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "probes,default", "-c", "6",
        "-n", f"quickstart-{os.getpid()}@%h", "--without-gossip", "--without-mingle", "-l", "info",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while " ready." not in log.read_text(errors="replace") and process.poll() is None:
            assert time.monotonic() < deadline, "worker not ready after 90 s"
            time.sleep(0.5)
        assert process.poll() is None, log.read_text(errors="replace")[-3000:]
        yield log
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        _purge_broker()


@pytest.fixture
def demo_testbeds() -> Iterator[list[str]]:
    require_testbed()
    names = [f"{PREFIX}{p.testbed}" for p in PROVIDERS]
    yield names
    if os.environ.get("OPGRADE_TESTBED_KEEP") != "1":
        from testbed import api

        for name in names:
            api.down(name)


def _changed(a: object, b: object, path: str = "") -> list[str]:
    """The paths at which two report documents differ (what a re-run changed), with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b), key=str)
                for p in _changed(a.get(k), b.get(k), f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in _changed(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:160]} -> {str(b)[:160]}"]


def _demo(*extra: str) -> str:
    out = io.StringIO()
    # the demo's three LLM servers measure under the machine's serving lock: no other shard's beside them
    with serving_exclusive(what="the demo cycle"):
        call_command("demo_cycle", "--prefix", PREFIX, "--probe-timeout", "600", *extra, stdout=out)
    return out.getvalue()


@pytest.mark.timeout(3000)  # two demo runs; the first may wait for the serving lock
def test_the_demo_cycle_publishes_a_report_that_ranks_the_exemplary_provider_above_the_leaky_one(
    celery_worker: Path, demo_testbeds: list[str]
) -> None:
    output = _demo()
    # the command's own time, without the wait for the serving lock
    first_run_s = float(re.search(r"Demo cycle ready in (\d+) s", output).group(1))

    cycle = Cycle.objects.get()
    report = Report.objects.get(cycle=cycle, status=Report.Status.PUBLISHED)
    snapshot = ScoreSnapshot.objects.filter(cycle=cycle).latest("created_at")
    tiers = {a.provider.slug: a for a in snapshot.assignments.select_related("provider")}
    aurora, borealis = tiers["aurora-compute"], tiers["borealis-cloud"]
    assert TIER_ORDER.index(aurora.tier) < TIER_ORDER.index(borealis.tier), output[-4000:]
    assert aurora.composite > borealis.composite
    assert f"/reports/{report.pk}/" in output and "REPORT_URL=" in output

    # the catalog's runs; the scheduled availability samples for the cost section (issue 16) beside them
    runs = ProbeRun.objects.filter(cycle=cycle, schedule__isnull=True)
    samples = ProbeRun.objects.filter(cycle=cycle, schedule__isnull=False)
    assert samples.count() == 3 * 2 * 2 and set(samples.values_list("status", flat=True)) <= {"done", "error"}
    costs = {c["provider"]: c for c in report.content["costs"]["clusters"]}
    assert all(costs[slug]["availability"]["measured_samples"] > 0 for slug in costs), costs
    # issue 16's done-criterion: the better-run provider (well-chosen serving configuration) has the
    # lower cost per useful Mtok, both intervals separated, though its price per GPU-hour is higher
    well, badly = costs["aurora-compute"], costs["borealis-cloud"]
    assert well["known"] and badly["known"], (well["reason"], badly["reason"], well["notes"], badly["notes"])
    assert len(well["throughput"]["replicates"]) >= 3 and len(badly["throughput"]["replicates"]) >= 3
    w, b = well["cost_per_useful_mtok"], badly["cost_per_useful_mtok"]
    print(f"cost per useful Mtok: aurora {w}, borealis {b}")
    assert w["high"] is not None and b["low"] > w["high"], (w, b)
    assert well["price"]["effective_per_gpu_hour"] > badly["price"]["effective_per_gpu_hour"]
    # issue 28: a failed request is never useful output. Cirrus's gateway fails a share of the requests;
    # its goodput carries those failures (measured over every request of each sweep, not the lucky
    # point the frontier picks), so it is not priced by tokens it failed to deliver
    flaky = costs["cirrus-gpu"]
    rates = [r["error_rate"] for r in flaky["throughput"]["replicates"] if r.get("error_rate")]
    print("cirrus goodput", flaky["goodput"], "error rates", rates)
    if rates and flaky["goodput"]["point"] is not None:
        assert flaky["goodput"]["point"] <= 1 - 0.5 * min(rates), (flaky["goodput"], rates)
    assert runs.count() == 3 * len({r.probe_id for r in runs}) and not runs.filter(probe_id__in=SLOW_PROBES).exists()
    # every run finished within the probe timeout (the catalog grew: exposure scans, a full port
    # scan per node, disruptive probes one at a time after the pool settles)
    assert set(runs.values_list("status", flat=True)) <= {ProbeRun.Status.DONE, ProbeRun.Status.ERROR}, output[-4000:]
    claimed = set(runs.values_list("claimed_by", flat=True))
    assert claimed and not any("in-process" in c for c in claimed), claimed  # the worker ran them
    assert "NO CELERY WORKER" not in output
    # the leaky testbed's isolation breaches were measured, not assumed
    assert Finding.objects.filter(run__cluster__provider__slug="borealis-cloud", critical=True).exists()
    assert not Finding.objects.filter(run__cluster__provider__slug="aurora-compute", critical=True).exists()
    # compute grades (issue 17): on the testbed grade some cluster qualifies and some is a near miss with reasons
    grades = report.content["grades"]
    (sheet,) = [s for s in grades["sheets"] if s["grade"] == "testbed-slurm-t1@2026.1"]
    seen = [(c["cluster"], c["status"], c["shortfalls"]) for c in sheet["clusters"]]
    assert sheet["near_misses"], seen
    if not sheet["qualifying"]:
        # On a loaded, slower machine a timed probe of the well-run provider can run past its demo
        # deadline or stay unmeasured: then Aurora is a near miss for want of a measurement only (a
        # censored or unknown timing, never a measured value beyond a limit nor a failed gate).
        (aurora_sheet,) = [c for c in sheet["clusters"] if c["cluster"].startswith("aurora-compute/")]
        assert aurora_sheet["status"] == "near_miss", seen
        assert all(s["verdict"] == "unknown" or (s["gap"] is None and "deadline" in (s["gap_text"] or ""))
                   for s in aurora_sheet["shortfalls"]), seen
        print("grade: Aurora a near miss for want of a measurement:", aurora_sheet["shortfalls"])
    near = next(c for c in sheet["clusters"] if c["status"] == "near_miss")
    assert near["shortfalls"] and all(s["evidence"] for s in near["shortfalls"])
    assert grades["index"][0]["points"] and grades["tracking"] and "near miss" in output

    # a second run reuses everything of the same day: no new runs, reviews or feedback, same report
    total = runs.count() + samples.count()
    again = _demo()
    assert ProbeRun.objects.filter(cycle=cycle).count() == total
    assert "already imported" in again and "0 assigned, 0 submitted" in again
    republished = Report.objects.get(cycle=cycle, status=Report.Status.PUBLISHED)
    assert republished.pk == report.pk, _changed(report.content, republished.content)
    # the quick start stays bounded: each probe phase waits at most --probe-timeout (600 s here), the
    # rest takes about two minutes (504 s in all on a fast CI machine, 760 s on a slow, loaded one
    # whose non-disruptive phase ran out of time)
    print(f"demo cycle: first run {first_run_s:.0f} s")
    assert first_run_s < 2 * 600 + 300, f"the demo cycle took {first_run_s:.0f} s"
