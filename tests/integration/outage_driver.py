"""The other side of the coordination-outage tests: a Django process on the test's private servers.

``tests/integration/test_coordination_outages.py`` runs this module as a subprocess whose
DATABASE_URL and REDIS_URL name the PostgreSQL and Redis the test started (never the shared
ones), and sends it one JSON command per line on stdin; it answers one JSON line per command on
stdout. It plays the analyst (the workbench's "Run missing probes" and the API's start, through
Django's test client, which reports a 500 as a status instead of raising) and reads the rows for
the test's assertions. A command that meets an outage answers ``{"error": ...}`` and the process
lives on: its database connection is dropped and the next command opens a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

import tests.probes.worker_probes  # noqa: E402,F401  (the test-only probe ids, as in the worker)
from probes import services  # noqa: E402
from probes.models import ClusterAccess, Finding, ProbeRun  # noqa: E402
from providers.models import Cluster, Cycle  # noqa: E402
from tests.factories import AreaFactory, ClusterFactory, CriterionFactory, CycleFactory, ProviderFactory  # noqa: E402

PROBE = "test_paused_node"
_client: Client | None = None


def _admin_client() -> Client:
    global _client
    if _client is None:
        user = get_user_model().objects.filter(username="outage-admin").first() or get_user_model().objects.create_superuser(
            username="outage-admin", password="x", email="outage-admin@example.invalid"
        )
        client = Client(raise_request_exception=False)
        client.force_login(user)
        _client = client
    return _client


def setup(*, clusters: int, nodes: int, pause_s: float, concurrency: int) -> dict[str, Any]:
    area = AreaFactory(key="outage")
    CriterionFactory(area=area, key="outage-paused", evidence_kinds=["probe"], probe_id=PROBE)
    # a provider per cluster: each has its own session slots, so the runs measure side by side
    providers = [ProviderFactory(slug=f"outage-{i}", name=f"Outage provider {i}") for i in range(clusters)]
    cycle = CycleFactory(rubric_version=area.rubric_version, slug="outage", providers=providers)
    ids = []
    for i, provider in enumerate(providers):
        cluster = ClusterFactory(provider=provider, name=f"outage-{i}", gpu_count=0, gpu_model="",
                                 orchestrator=Cluster.Orchestrator.KUBERNETES)
        ClusterAccess.objects.create(
            cluster=cluster, login_host="127.0.0.1", login_port=22,
            # never connected to: the probe talks to no host, it only takes its time per node
            compute_nodes="\n".join(f"127.0.0.1:{20000 + n}" for n in range(nodes)),
            inventory_source=ClusterAccess.InventorySource.LISTED, node_access=ClusterAccess.NodeAccess.SSH,
            max_concurrency=concurrency, settings={"pause_s": pause_s},
        )
        ids.append(cluster.pk)
    _admin_client()
    return {"clusters": ids, "cycle": cycle.slug}


def start_runs(*, cluster: int) -> dict[str, Any]:
    runs = services.probe_runs_start(cluster=Cluster.objects.get(pk=cluster), probe_ids=[PROBE])
    return {"runs": [r.pk for r in runs]}


def workbench_run_missing(*, cycle: str) -> dict[str, Any]:
    response = _admin_client().post(reverse("workbench:probes_run", args=[cycle]))
    said = [str(m) for m in getattr(response.wsgi_request, "_messages", [])]
    return {"status": response.status_code, "messages": said, "body": response.content[:300].decode(errors="replace")}


def api_start(*, cluster: int) -> dict[str, Any]:
    response = _admin_client().post(
        "/api/v1/probe-runs/start/", {"cluster": cluster, "probes": [PROBE]}, content_type="application/json"
    )
    try:
        body = response.json()
    except ValueError:
        body = response.content[:300].decode(errors="replace")
    return {"status": response.status_code, "body": body}


def state() -> dict[str, Any]:
    runs = [
        {"id": r.pk, "status": r.status, "attempt": r.attempt, "error_code": r.error_code,
         "error_message": r.error_message, "progress": [r.progress_done, r.progress_total], "cycle": r.cycle_id}
        for r in ProbeRun.objects.order_by("pk")
    ]  # fmt: skip
    findings = [
        {"run": f.run_id, "target": f.target, "metric": f.metric, "outcome": f.outcome,
         "coordination_fault": "coordination_fault" in (f.evidence or {})}
        for f in Finding.objects.order_by("pk")
    ]  # fmt: skip
    return {"runs": runs, "findings": findings, "cycles": Cycle.objects.count()}


def sweep() -> dict[str, Any]:
    return {"resent": services.probe_runs_sweep()}


COMMANDS = {f.__name__: f for f in (setup, start_runs, workbench_run_missing, api_start, state, sweep)}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        with contextlib.suppress(Exception):  # as a web server does between requests: a fresh connection
            connection.close()
        try:
            answer = COMMANDS[command.pop("command")](**command)
        except Exception as exc:  # an outage: say so, drop the broken connection, keep serving
            answer = {"error": f"{type(exc).__name__}: {exc}"[:500], "trace": traceback.format_exc()[-1500:]}
            with contextlib.suppress(Exception):  # a dead connection may fail to close; it is gone
                connection.close()
        sys.stdout.write(json.dumps(answer, default=str) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
