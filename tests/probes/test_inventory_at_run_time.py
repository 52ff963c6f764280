"""The inventory at run time (issue 18), with a fake transport: every run reads the scheduler's nodes
on the login node, a replaced node is recorded as departed and its successor probed, nodes are reached
through srun as a tenant's job, and direct SSH never trusts a node without a pinned key."""

from __future__ import annotations

import datetime as dt

import pytest

from probes import services
from probes.inventory import InventoryNode, inventory_diff, parse_sinfo_inventory
from probes.models import ClusterAccess, Finding, HostKeyPin, ProbeRun, TenantAccount
from probes.transport import Command, CommandResult, HostKey
from tests.factories import ClusterFactory
from tests.probes.fakes import FakeTransport, ok

pytestmark = pytest.mark.django_db

KEY = HostKey("ssh-ed25519", "SHA256:login")
SLOT = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def cluster(settings):  # type: ignore[no-untyped-def]
    settings.OPGRADE_PROBE_MAX_ATTEMPTS = 1
    cluster = ClusterFactory(gpu_count=0, gpu_model="")
    # the typed list still names node2: with an inventory read at run time it is only a hint
    ClusterAccess.objects.create(cluster=cluster, login_host="login", compute_nodes="10.0.0.12", max_concurrency=2)
    HostKeyPin.objects.create(cluster=cluster, host="login", port=22, key_type=KEY.key_type, fingerprint=KEY.fingerprint)
    account = TenantAccount(cluster=cluster, label="tenant-a", username="alice")
    services.tenant_account_set_secrets(account=account, password="s3cret-pw")
    return cluster


class Slurm:
    """A scheduler on the login node: sinfo lists ``nodes``; srun runs on a listed node only."""

    def __init__(self, *nodes: str) -> None:
        self.nodes = list(nodes)

    def __call__(self, endpoint, cmd):  # type: ignore[no-untyped-def]
        if cmd.startswith("sinfo"):
            return ok("".join(f"{n}|10.0.0.{10 + int(n[4:])}|idle|none\n" for n in self.nodes))
        if cmd.startswith("scontrol -o show node"):
            name = cmd.split()[-1]
            if name in self.nodes:
                return ok(f"NodeName={name} State=IDLE\n")
            return CommandResult(cmd, 1, "", f"Node {name} not found\n", 0.01)
        if cmd.startswith("srun "):
            node = cmd.split("--nodelist=")[1].split()[0]
            if node not in self.nodes:
                return CommandResult(cmd, 1, "", "srun: error: Unable to allocate resources: Invalid node name specified\n", 0.01)
        return ok()


def run_probe(cluster, probe_id: str, fake: FakeTransport, minute: int = 0) -> ProbeRun:  # type: ignore[no-untyped-def]
    (run,) = services.probe_runs_start(
        cluster=cluster, probe_ids=[probe_id], slot=SLOT + dt.timedelta(minutes=minute), send=False
    )
    services.probe_run_execute(run_id=run.pk, worker="w1", pool_factory=fake.pool)
    run.refresh_from_db()
    return run


def test_sinfo_inventory_lists_each_node_once_with_its_address_and_whether_a_tenant_could_use_it() -> None:
    nodes = parse_sinfo_inventory(
        "node1|10.0.0.11|idle|none\nnode1|10.0.0.11|idle|none\nnode2|10.0.0.12|drained|healthcheck: xid\n"
        "node3|10.0.0.13|down*|Not responding\nnode4||mixed|none\n"
    )
    assert [(n.name, n.address, n.usable) for n in nodes] == [
        ("node1", "10.0.0.11", True), ("node2", "10.0.0.12", False), ("node3", "10.0.0.13", False),
        ("node4", "node4", True),
    ]  # fmt: skip
    assert nodes[1].reason == "healthcheck: xid"


def test_the_first_read_is_a_baseline_and_later_reads_record_departed_and_joined_nodes() -> None:
    one, two, eight = (InventoryNode(n, f"10.0.0.{i}", "idle") for n, i in [("node1", 11), ("node2", 12), ("node8", 18)])
    first = inventory_diff({}, [one, two], source="scheduler", at="t1")
    assert (first["departed"], first["joined"]) == ([], [])
    second = inventory_diff(first, [one, eight], source="scheduler", at="t2", said={"node2": "Node node2 not found"})
    (gone,) = second["departed"]
    assert (gone["name"], gone["address"], gone["at"], gone["last_seen"]) == ("node2", "10.0.0.12", "t2", "t1")
    assert gone["scheduler_said"] == "Node node2 not found"
    assert [j["name"] for j in second["joined"]] == ["node8"]
    assert [n["name"] for n in second["nodes"]] == ["node1", "node8"]


def test_a_replaced_node_is_recorded_departed_and_its_successor_probed_through_srun_without_an_error(cluster) -> None:  # type: ignore[no-untyped-def]
    slurm = Slurm("node1", "node2")
    fake = FakeTransport(slurm)
    first = run_probe(cluster, "ssh_reachable", fake)
    assert first.status == ProbeRun.Status.DONE
    assert sorted(Finding.objects.filter(run=first).values_list("target", flat=True)) == [
        "10.0.0.11", "10.0.0.12", "login",
    ]  # fmt: skip

    slurm.nodes = ["node1", "node8"]  # the operator replaced node2 with node8
    fake.log.clear()
    second = run_probe(cluster, "ssh_reachable", fake, minute=1)
    findings = Finding.objects.filter(run=second)
    assert second.status == ProbeRun.Status.DONE and not second.flagged
    assert sorted(findings.values_list("target", flat=True)) == ["10.0.0.11", "10.0.0.18", "login"]
    assert not findings.filter(outcome="error").exists()
    # nodes are reached as a tenant's job: srun from the login node, never an SSH hop to the node
    assert {host for host, _ in fake.log} == {"login"}
    assert any(cmd.startswith("srun --nodelist=node8 ") for _, cmd in fake.log)
    inventory = ClusterAccess.objects.get(cluster=cluster).inventory
    (gone,) = inventory["departed"]
    assert gone["name"] == "node2" and gone["scheduler_said"] == "Node node2 not found"
    assert [j["name"] for j in inventory["joined"]] == ["node8"]


def test_a_node_that_leaves_during_the_run_is_departed_not_an_error(cluster) -> None:  # type: ignore[no-untyped-def]
    slurm = Slurm("node1", "node2")
    inner = slurm.__call__

    def answer(endpoint, cmd):  # type: ignore[no-untyped-def]
        if cmd.startswith("srun --nodelist=node2 "):
            slurm.nodes = ["node1"]  # replaced between the inventory read and its probe
        return inner(endpoint, cmd)

    run = run_probe(cluster, "ssh_reachable", FakeTransport(answer))
    assert run.status == ProbeRun.Status.DONE
    assert sorted(Finding.objects.filter(run=run).values_list("target", flat=True)) == ["10.0.0.11", "login"]
    inventory = ClusterAccess.objects.get(cluster=cluster).inventory
    assert [d["name"] for d in inventory["departed"]] == ["node2"]
    assert "Invalid node name" in inventory["departed"][0]["scheduler_said"]
    assert [n["name"] for n in inventory["nodes"]] == ["node1"]


def test_a_node_slurm_calls_busy_but_no_longer_lists_is_departed_too(cluster) -> None:  # type: ignore[no-untyped-def]
    slurm = Slurm("node1", "node2")

    def answer(endpoint, cmd):  # type: ignore[no-untyped-def]
        if cmd.startswith("srun --nodelist=node2 "):
            slurm.nodes = ["node1"]  # its slot went back to FUTURE: srun only says "busy"
            return CommandResult(cmd, 1, "", "srun: error: Unable to allocate resources: Requested nodes are busy\n", 0.01)
        return slurm(endpoint, cmd)

    run = run_probe(cluster, "ssh_reachable", FakeTransport(answer))
    assert run.status == ProbeRun.Status.DONE
    assert not Finding.objects.filter(run=run, outcome="error").exists()
    assert [d["name"] for d in ClusterAccess.objects.get(cluster=cluster).inventory["departed"]] == ["node2"]


def test_with_direct_ssh_a_new_node_without_a_pinned_key_is_reported_unverified_and_never_connected(cluster) -> None:  # type: ignore[no-untyped-def]
    ClusterAccess.objects.filter(cluster=cluster).update(node_access=ClusterAccess.NodeAccess.SSH)
    HostKeyPin.objects.create(cluster=cluster, host="10.0.0.11", port=22, key_type=KEY.key_type, fingerprint=KEY.fingerprint)
    fake = FakeTransport(Slurm("node1", "node8"))
    run = run_probe(cluster, "ssh_reachable", fake)
    assert run.status == ProbeRun.Status.DONE and run.flagged
    by_target = {f.target: f for f in Finding.objects.filter(run=run)}
    assert by_target["10.0.0.11"].outcome == "pass"
    unverified = by_target["10.0.0.18"]
    assert unverified.outcome == "error" and unverified.summary.startswith("unverified")
    assert unverified.evidence["error_code"] == "host_key_unverified"
    assert "10.0.0.18" not in {host for host, _ in fake.log}


def test_a_scheduler_refusal_is_a_transient_failure_not_the_commands_own_exit(cluster) -> None:  # type: ignore[no-untyped-def]
    def answer(endpoint, cmd):  # type: ignore[no-untyped-def]
        if cmd.startswith("srun "):
            return CommandResult(cmd, 1, "", "srun: error: Unable to allocate resources: Requested node configuration is not available\n", 0.01)
        return Slurm("node1")(endpoint, cmd)

    run = run_probe(cluster, "ssh_reachable", FakeTransport(answer))
    node = Finding.objects.get(run=run, target="10.0.0.11")
    assert node.outcome == "error" and node.evidence["error_code"] == "scheduler_refused"
    assert node.evidence["transient"] is True


def test_the_srun_wrapper_quotes_the_command_as_one_word_and_bounds_the_allocation() -> None:
    from probes.transport import SchedulerConnection

    wrapped = SchedulerConnection.wrap("node8", Command("echo {x}", x="a; rm -rf /"), timeout_s=60).render()
    assert wrapped.startswith("srun --nodelist=node8 --nodes=1 --ntasks=1 --quiet --immediate=30 --time=2 ")
    assert wrapped.endswith("bash -c 'echo '\"'\"'a; rm -rf /'\"'\"''")


def test_a_listed_cluster_keeps_its_typed_nodes_and_reads_no_inventory(cluster) -> None:  # type: ignore[no-untyped-def]
    ClusterAccess.objects.filter(cluster=cluster).update(
        inventory_source=ClusterAccess.InventorySource.LISTED, node_access=ClusterAccess.NodeAccess.SSH
    )
    HostKeyPin.objects.create(cluster=cluster, host="10.0.0.12", port=22, key_type=KEY.key_type, fingerprint=KEY.fingerprint)
    fake = FakeTransport(lambda ep, cmd: ok())
    run = run_probe(cluster, "ssh_reachable", fake)
    assert sorted(Finding.objects.filter(run=run).values_list("target", flat=True)) == ["10.0.0.12", "login"]
    assert not any(cmd.startswith("sinfo") for _, cmd in fake.log)
    assert ClusterAccess.objects.get(cluster=cluster).inventory == {}


def test_the_admin_shows_the_inventory_as_last_seen_and_the_departed_and_joined_nodes(cluster, admin_client) -> None:  # type: ignore[no-untyped-def]
    slurm = Slurm("node1", "node2")
    fake = FakeTransport(slurm)
    run_probe(cluster, "ssh_reachable", fake)
    slurm.nodes = ["node1", "node8"]
    run_probe(cluster, "ssh_reachable", fake, minute=1)
    access = ClusterAccess.objects.get(cluster=cluster)
    page = admin_client.get(f"/admin/probes/clusteraccess/{access.pk}/change/").content.decode()
    assert "inventory as last seen" in page.lower() and "node8" in page
    assert "Node node2 not found" in page and "joined by" in page
