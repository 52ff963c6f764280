"""A living cluster (issue 18): the exemplary operator replaces a node between two runs of a
node-scope probe, through the runner as production runs it (ClusterAccess with only the login node
pinned, the scheduler's inventory read at run time, nodes reached with srun as a tenant's job).

The second run records the replaced node as departed (with what Slurm said), probes its successor,
and has no ``error`` finding. The stored node list still names the old nodes: it is only a hint.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from django.utils import timezone

from probes import services
from probes.matrix import host_key_of
from probes.models import ClusterAccess, Finding, ProbeRun, TenantAccount
from providers.models import Cluster
from testbed import api
from testbed.pytest_helpers import prefixed_name, running_testbed
from tests.factories import ClusterFactory

pytestmark = [pytest.mark.testbed, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _register(info: api.TestbedInfo) -> Cluster:
    cluster = ClusterFactory(gpu_model="", gpu_count=0, orchestrator=Cluster.Orchestrator.SLURM)
    access = ClusterAccess.objects.create(
        cluster=cluster,
        login_host=info.login_addr,
        login_port=info.ssh_port,
        compute_nodes="\n".join(n["address"] for n in info.nodes.values()),  # typed once, goes stale
        api_base_url=info.api_url,
        max_concurrency=4,
    )
    assert access.inventory_source == "scheduler" and access.node_access == "scheduler"  # the defaults
    services.cluster_access_set_api_token(access=access, token=info.api_token)
    key = host_key_of(info.login_host_key)
    services.host_key_pin(
        cluster=cluster, host=info.login_addr, port=info.ssh_port, key_type=key.key_type, fingerprint=key.fingerprint
    )
    for t in info.tenants:
        account = TenantAccount(cluster=cluster, label=f"tenant-{t.id}", username=t.user)
        services.tenant_account_set_secrets(account=account, private_key=Path(t.private_key).read_text())
    return cluster


def _replaced(name: str, old: str, *, timeout_s: float = 90) -> str:
    """Wait until the operator has replaced ``old``: it is gone and a new node is ready and idle."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _, body = api.provider_call(name, "GET", "/v1/nodes")
        nodes = {n["name"]: n for n in body.get("nodes", [])}
        fresh = [
            n for n in nodes.values()
            if n["name"] not in ("node1", old) and n["status"] == "ready" and n.get("slurm_state", "").lower().startswith("idle")
        ]  # fmt: skip
        if old not in nodes and fresh:
            return fresh[0]["name"]
        time.sleep(1)
    raise AssertionError(f"the operator did not replace {old} in {timeout_s:g} s: {nodes}")


def _run(cluster: Cluster, minute: int) -> ProbeRun:
    slot = timezone.now().replace(second=0, microsecond=0) + dt.timedelta(minutes=minute)
    (run,) = services.probe_runs_start(cluster=cluster, probe_ids=["node_inventory"], slot=slot, send=False)
    result = services.probe_run_execute(run_id=run.pk, worker="test")
    while result.status == "retry":  # as the Celery task does (a node that just booted may refuse once)
        time.sleep(result.retry_in or 1)
        result = services.probe_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    return run


def test_a_node_the_operator_replaces_is_departed_and_its_successor_probed_without_an_error(settings):  # type: ignore[no-untyped-def]
    settings.OPGRADE_PROBE_RETRY_BASE_S = 1
    name = prefixed_name("lv")
    with running_testbed("exemplary", name=name, nodes=2) as info:
        cluster = _register(info)
        before = _run(cluster, 0)
        assert before.status == ProbeRun.Status.DONE, (before.error_code, before.error_message)
        old_address = info.nodes["node2"]["address"]
        assert Finding.objects.filter(run=before, target=old_address, metric="", outcome="pass").exists()

        code, _ = api.provider_call(name, "POST", "/v1/nodes/node2/report-faulty", {"reason": "xid 79"})
        assert code == 202
        successor = _replaced(name, "node2")
        new_address = api.info(name).nodes[successor]["address"]

        after = _run(cluster, 1)
        findings = Finding.objects.filter(run=after)
        assert after.status == ProbeRun.Status.DONE, (after.error_code, after.error_message)
        assert not findings.filter(outcome="error").exists(), [f.summary for f in findings]
        targets = set(findings.values_list("target", flat=True))
        assert new_address in targets and old_address not in targets
        probed = findings.get(target=new_address, metric="")
        assert probed.outcome == "pass" and probed.evidence["cmd"].startswith(f"srun --nodelist={successor} ")

        inventory = ClusterAccess.objects.get(cluster=cluster).inventory
        (gone,) = [d for d in inventory["departed"] if d["name"] == "node2"]
        assert gone["address"] == old_address and gone["scheduler_said"]
        assert successor in [j["name"] for j in inventory["joined"]]
        assert [n["name"] for n in inventory["nodes"]] == sorted(["node1", successor])
