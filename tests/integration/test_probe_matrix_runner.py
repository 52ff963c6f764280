"""Catalog probes through the probe runner: a testbed registered as a cluster, findings in PostgreSQL.

The matrix module calls probes in-process; this one goes the way production does: ClusterAccess
with pinned host keys, tenant accounts whose secrets are encrypted at rest (the tenant's web
password doubles as the metrics/log API login), ``probe_runs_start`` and ``probe_run_execute``
(claim, fan-out over targets, immutable Finding rows).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from probes import services
from probes.matrix import host_key_of
from probes.models import ClusterAccess, Finding, TenantAccount
from providers.models import Cluster
from testbed.pytest_helpers import prefixed_name, running_testbed
from tests.factories import ClusterFactory

pytestmark = [pytest.mark.testbed, pytest.mark.integration, pytest.mark.django_db(transaction=True)]
PROBES = [
    "scheduler_privacy",
    "tenant_metric_isolation",
    "kernel_pending_reboot",
    "metrics_coverage",
    "gpu_inventory",
]


def test_runner_stores_critical_isolation_findings_for_a_leaky_testbed():
    # the typed list (addresses, no scheduler names) over direct SSH: only where compute nodes admit
    # a tenant without a job there, which the bundled profiles no longer do (ssh.restrict_to_jobs)
    with running_testbed(
        "leaky", name=prefixed_name("rlk"), nodes=2, overrides={"ssh": {"restrict_to_jobs": False}}
    ) as info:
        cluster = ClusterFactory(gpu_model="", gpu_count=0, orchestrator=Cluster.Orchestrator.SLURM)
        nodes = [n for n in info.nodes.values() if n["status"] == "ready"]
        ClusterAccess.objects.create(
            cluster=cluster,
            login_host=info.login_addr,
            login_port=info.ssh_port,
            compute_nodes="\n".join(n["address"] for n in nodes),
            # the typed list over direct SSH with pinned keys; tests/integration/test_living_cluster.py
            # covers the scheduler's inventory and srun
            inventory_source=ClusterAccess.InventorySource.LISTED,
            node_access=ClusterAccess.NodeAccess.SSH,
            api_base_url=info.api_url,
            max_concurrency=4,
            settings={
                "metrics_url": info.metrics_url,
                "pushgateway_url": info.pushgateway_url,
                "logs_url": info.logs_url,
                "syslog_addr": info.syslog_addr,
            },
        )
        for host, line in [
            (info.login_addr, info.login_host_key),
            *[(n["address"], n["host_key"]) for n in nodes],
        ]:
            key = host_key_of(line)
            services.host_key_pin(
                cluster=cluster, host=host, port=22, key_type=key.key_type, fingerprint=key.fingerprint
            )
        for t in info.tenants:
            account = TenantAccount(cluster=cluster, label=f"tenant-{t.id}", username=t.user)
            services.tenant_account_set_secrets(
                account=account, private_key=Path(t.private_key).read_text(), password=t.http_password
            )
        runs = services.probe_runs_start(cluster=cluster, probe_ids=PROBES, send=False)
        for run in runs:
            result = services.probe_run_execute(run_id=run.pk, worker="test")
            assert result.status == "done", (run.probe_id, result)

    findings = {(f.probe_id, f.target): f for f in Finding.objects.filter(run__cluster=cluster)}
    for probe in ("scheduler_privacy", "tenant_metric_isolation"):
        pair = findings[(probe, "tenant-a->tenant-b")]
        assert pair.outcome == "fail" and pair.critical, pair.summary
    kernels = [f for (p, _), f in findings.items() if p == "kernel_pending_reboot"]
    assert len(kernels) == 3 and all(f.outcome == "fail" and f.critical for f in kernels)  # login + 2 nodes
    coverage = findings[("metrics_coverage", "cluster")]
    # leaky scrapes only every other node (node2 of two), and that only every 60 s
    assert coverage.outcome == "fail" and coverage.value <= 0.5 and coverage.metric == "coverage_ratio"
    assert not coverage.critical
    assert findings[("gpu_inventory", "cluster")].outcome == "not_applicable"
    stored = repr([f.evidence for f in findings.values()])
    assert not any(t.http_password in stored for t in info.tenants)
