"""Direct SSH on a living cluster, trusted through the provider's host CA (issue 18.2), through the
runner as production runs it: the scheduler's inventory read at run time, compute nodes reached by
direct SSH through the login node, only the login node's key and the testbed's host CA pinned.

A node the operator adds as a replacement is probed through its host certificate with no pin of
its own; the same cluster with the CA unpinned reports it unverified, never a pass.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from django.utils import timezone

from probes import services
from probes.models import ClusterAccess, Finding, HostCAPin, HostKeyPin, ProbeRun, TenantAccount
from probes.transport import host_ca_parse
from providers.models import Cluster
from testbed import api
from testbed.pytest_helpers import prefixed_name, running_testbed, ssh_run
from tests.factories import ClusterFactory

pytestmark = [pytest.mark.testbed, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _register(info: api.TestbedInfo) -> Cluster:
    cluster = ClusterFactory(gpu_model="", gpu_count=0, orchestrator=Cluster.Orchestrator.SLURM)
    access = ClusterAccess.objects.create(
        cluster=cluster, login_host=info.login_addr, login_port=info.ssh_port, max_concurrency=4,
        node_access=ClusterAccess.NodeAccess.SSH,  # the scheduler's inventory, direct SSH to the nodes
    )  # fmt: skip
    login = host_ca_parse(info.login_host_key)
    services.host_key_pin(
        cluster=cluster, host=info.login_addr, port=info.ssh_port, key_type=login.key_type,
        fingerprint=login.fingerprint,
    )  # fmt: skip
    ca = services.host_ca_preview(public_key=info.host_ca_public_key)  # what the analyst is shown
    services.host_ca_pin(access=access, public_key=info.host_ca_public_key, fingerprint=ca.fingerprint)
    for t in info.tenants:
        account = TenantAccount(cluster=cluster, label=f"tenant-{t.id}", username=t.user)
        services.tenant_account_set_secrets(account=account, private_key=Path(t.private_key).read_text())
    return cluster


def _run(cluster: Cluster, minute: int) -> ProbeRun:
    slot = timezone.now().replace(second=0, microsecond=0) + dt.timedelta(minutes=minute)
    (run,) = services.probe_runs_start(cluster=cluster, probe_ids=["ssh_reachable"], slot=slot, send=False)
    result = services.probe_run_execute(run_id=run.pk, worker="test")
    while result.status == "retry":
        time.sleep(result.retry_in or 1)
        result = services.probe_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    return run


def test_a_replacement_node_is_probed_over_direct_ssh_through_its_certificate_with_no_pin_of_its_own(settings):  # type: ignore[no-untyped-def]
    settings.OPGRADE_PROBE_RETRY_BASE_S = 1
    name = prefixed_name("hcl")
    with running_testbed("exemplary", name=name, nodes=1) as info:
        cluster = _register(info)
        first = _run(cluster, 0)
        old = info.nodes["node1"]["address"]
        assert first.status == ProbeRun.Status.DONE and not first.flagged, (first.error_code, first.error_message)
        assert Finding.objects.get(run=first, target=old).outcome == "pass"

        code, _ = api.provider_call(name, "POST", "/v1/nodes/node1/report-faulty", {"reason": "xid 79"})
        assert code == 202
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            nodes = {n["name"]: n for n in api.provider_call(name, "GET", "/v1/nodes")[1].get("nodes", [])}
            fresh = [n for n in nodes.values() if n["status"] == "ready" and n.get("slurm_state", "").lower().startswith("idle")]
            if "node1" not in nodes and fresh:
                break
            time.sleep(1)
        else:
            raise AssertionError(f"node1 was not replaced: {nodes}")
        new = fresh[0]["address"]

        second = _run(cluster, 1)
        findings = {f.target: f for f in Finding.objects.filter(run=second)}
        assert second.status == ProbeRun.Status.DONE and not second.flagged, [f.summary for f in findings.values()]
        assert findings[new].outcome == "pass" and old not in findings
        assert not HostKeyPin.objects.filter(cluster=cluster, host=new).exists()  # no pin of its own

        HostCAPin.objects.filter(access__cluster=cluster).delete()  # without the CA: unverified, not trusted
        third = _run(cluster, 2)
        refused = Finding.objects.get(run=third, target=new)
        assert refused.outcome == "error" and refused.evidence["error_code"] == "host_key_unverified"
        assert third.flagged


def test_with_ssh_restricted_to_jobs_direct_ssh_holds_a_job_fails_closed_without_one_and_the_scheduler_path_still_probes_the_node(settings):  # type: ignore[no-untyped-def]
    settings.OPGRADE_PROBE_MAX_ATTEMPTS = 1
    name = prefixed_name("hcr")
    with running_testbed("exemplary", name=name, nodes=1, overrides={"ssh": {"restrict_to_jobs": True}}) as info:
        cluster = _register(info)
        node = info.nodes["node1"]["address"]
        # sshd refuses a tenant without a job there (the certificate verified first): the run does
        # what a tenant does, holds a short job on node1, connects, and cancels the job after
        direct = _run(cluster, 0)
        probed = Finding.objects.get(run=direct, target=node)
        assert direct.status == ProbeRun.Status.DONE and not direct.flagged, (direct.error_code, direct.error_message)
        assert probed.outcome == "pass", probed.summary
        left = ssh_run(info, "a", "squeue -h -u $USER -t PENDING,RUNNING -o %j")
        assert left.returncode == 0 and "opgrade-ssh-hold" not in left.stdout, left.stdout

        # no job can be placed (another tenant holds node1 whole): unreachable by the provider's
        # policy now, an error that is neither a pass nor held against our credentials
        busy = ssh_run(info, "b", "sbatch --parsable --exclusive -w node1 -t 5 -o /dev/null --wrap 'sleep 300'")
        job = busy.stdout.strip().split(";")[0]
        assert busy.returncode == 0 and job.isdigit(), busy.stderr
        try:
            refused_run = _run(cluster, 1)
            refused = Finding.objects.get(run=refused_run, target=node)
            assert refused.outcome == "error" and refused.evidence["error_code"] == "scheduler_refused", refused.summary
            assert "needs a running job" in refused.summary and not refused_run.flagged
        finally:
            ssh_run(info, "b", f"scancel {job}")

        ClusterAccess.objects.filter(cluster=cluster).update(node_access=ClusterAccess.NodeAccess.SCHEDULER)
        through_srun = _run(cluster, 2)
        probed = Finding.objects.get(run=through_srun, target=node)
        assert through_srun.status == ProbeRun.Status.DONE, (through_srun.error_code, through_srun.error_message)
        assert probed.outcome == "pass" and probed.evidence["cmd"].startswith("srun --nodelist=node1 ")
