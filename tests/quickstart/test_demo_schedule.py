"""The demo's scheduled run (issue 18, "Done when"): after the demo's disruptive probes have replaced
nodes, Celery beat fires the whole non-disruptive catalog on every demo cluster; every run finishes
and no ``error`` finding is caused by a replaced node.

The three demo testbeds, providers and cycle are set up by the demo's own services; only the
disruptive probes of the cycle run (the rest of the catalog is what the schedule runs), on a real
worker; then ``manage.py demo_schedule`` (what scripts/demo.sh runs after demo_cycle) resets the
schedules and a real beat (DatabaseScheduler) fires them. Worker and beat are subprocesses on
pytest-django's test database (hence ``transaction=True``), stopped by pid (their process groups).
"""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import time

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from probes.catalog import probe_list
from probes.models import ClusterAccess, ProbeRun, ProbeSchedule
from probes.selectors import next_scheduled_runs
from quickstart import services
from quickstart.evidence import PROVIDERS
from rubric.models import RubricVersion
from testbed.pytest_helpers import prefixed_name, require_testbed, serving_exclusive
from tests.integration.test_scheduled_replacement import Daemons, daemons  # noqa: F401  (fixture)

pytestmark = [pytest.mark.testbed, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# testbeds <prefix>saurora, <prefix>sboreal, <prefix>scirrus: names are at most 10 characters, so the
# session prefix is at most 3 (CI: "ci")
PREFIX = prefixed_name("s")


@pytest.fixture
def demo_testbeds():  # type: ignore[no-untyped-def]
    require_testbed()
    yield
    if os.environ.get("OPGRADE_TESTBED_KEEP") != "1":
        from testbed import api

        for spec in PROVIDERS:
            api.down(f"{PREFIX}{spec.testbed}")


@pytest.mark.timeout(1800)
def test_after_the_disruptive_probes_beat_runs_the_non_disruptive_catalog_without_a_replaced_node_error(
    daemons: Daemons,  # noqa: F811
    demo_testbeds: None,
) -> None:
    t0 = time.monotonic()
    say = print
    rubric, _ = services.demo_rubric_load()
    assert isinstance(rubric, RubricVersion)
    analyst = get_user_model().objects.create_user(username="analyst")
    infos = services.demo_testbeds_up(prefix=PREFIX, say=say)
    clusters = [
        services.demo_provider_connect(spec=spec, info=infos[spec.slug], analyst=analyst, say=say) for spec in PROVIDERS
    ]
    listed = {c.pk: set(ClusterAccess.objects.get(cluster=c).compute_nodes.split()) for c in clusters}
    cycle = services.demo_cycle_ensure(rubric=rubric, providers=[c.provider for c in clusters], day=timezone.now().date())
    daemons.start("worker", "worker", "-Q", "probes,default", "-c", "6", "-n", f"ds-{os.getpid()}@%h",
                  "--without-gossip", "--without-mingle", "-l", "info")  # fmt: skip
    deadline = time.monotonic() + 120
    while " ready." not in daemons.log("worker"):
        assert time.monotonic() < deadline and daemons.alive(), daemons.logs()
        time.sleep(1)
    daemons.start("beat", "beat", "-l", "info", "--pidfile", str(daemons.tmp / "beat.pid"))
    setup_s = time.monotonic() - t0

    # the demo's disruptive probes (fault injection, node replacement), as demo_cycle runs them
    non_disruptive = [p.id for p in probe_list() if not p.disruptive and not p.id.startswith("test_")]
    t1 = time.monotonic()
    runs = services.demo_probes_run(
        cycle=cycle, clusters=clusters, slot=timezone.now(), timeout_s=600,
        skip=[*non_disruptive, *services.SLOW_PROBES], say=say,
    )  # fmt: skip
    disruptive_s = time.monotonic() - t1
    assert runs and all(r.status in ProbeRun.TERMINAL for r in runs), [(r.probe_id, r.status) for r in runs]
    assert {r.probe_id for r in runs} >= {"node_replacement_time", "failure_detection_time"}

    out = io.StringIO()
    t2 = time.monotonic()
    with serving_exclusive(what="the demo's scheduled run"):  # it fires serving_goodput on three servers
        call_command("demo_schedule", "--prefix", PREFIX, "--timeout", "900", stdout=out)
    scheduled_s = time.monotonic() - t2
    output = out.getvalue()
    print(output)
    print(f"FIGURES setup_s={setup_s:.0f} disruptive_s={disruptive_s:.0f} scheduled_s={scheduled_s:.0f}")

    summary = dict(re.findall(r"(\w+)=(\d+)", output.split("SCHEDULED_RUN", 1)[1].splitlines()[0]))
    assert summary["unfinished"] == "0" and summary["errors_replaced"] == "0", output
    assert int(summary["runs"]) == 3 * len(non_disruptive), output
    for cluster in clusters:
        schedule = ProbeSchedule.objects.get(cluster=cluster)
        assert sorted(schedule.probes) == sorted(non_disruptive) and schedule.cycle is None
        fired = ProbeRun.objects.filter(schedule=schedule)
        assert {r.probe_id for r in fired} == set(non_disruptive)
        assert all(r.status in ProbeRun.TERMINAL for r in fired)
        assert all(r.claimed_by and "in-process" not in r.claimed_by for r in fired)  # the worker ran them
        (upcoming,) = next_scheduled_runs(cluster=cluster)
        assert upcoming.at is not None and upcoming.at > timezone.now() + dt.timedelta(hours=23)
    # the exemplary operator replaced a node during the disruptive probes: the proof is not vacuous
    aurora = ClusterAccess.objects.get(cluster=clusters[0])
    current = {n["address"] for n in aurora.inventory["nodes"]}
    assert listed[clusters[0].pk] - current, (listed[clusters[0].pk], current)
    assert aurora.inventory.get("departed"), aurora.inventory
    assert "probes.probe_schedule_fire" in daemons.log("beat")
