"""The probe matrix reaches exemplary's compute nodes the way a tenant must where SSH to a node
needs a job there (``ssh.restrict_to_jobs``, on in exemplary; issue 18.3): through the scheduler by
default, or by direct SSH with a short job held on the node, cancelled when the run ends."""

from __future__ import annotations

import pytest

from probes.matrix import catalog_run
from probes.matrix import testbed_context as context_for
from testbed.pytest_helpers import prefixed_name, running_testbed, ssh_run

pytestmark = [pytest.mark.testbed, pytest.mark.integration]


def test_exemplary_nodes_are_probed_through_srun_and_over_direct_ssh_with_a_held_job() -> None:
    with running_testbed("exemplary", name=prefixed_name("mna"), nodes=1) as info:
        assert info.knobs["ssh"]["restrict_to_jobs"] is True
        node = info.nodes["node1"]["address"]
        assert ssh_run(info, "a", "hostname", host=node).returncode != 0  # no job there: refused

        through = catalog_run(context_for(info.name), ["ssh_reachable"])["ssh_reachable"]
        by_node = {f.target: f for f in through.findings}
        assert str(by_node[node].outcome) == "pass", by_node[node].summary
        assert by_node[node].evidence["cmd"].startswith("srun --nodelist=node1 ")

        direct = catalog_run(context_for(info.name, node_access="ssh"), ["ssh_reachable"])["ssh_reachable"]
        by_node = {f.target: f for f in direct.findings}
        assert str(by_node[node].outcome) == "pass", by_node[node].summary
        assert by_node[node].evidence["cmd"] == "true"  # the node's own shell, not a job step
        left = ssh_run(info, "a", "squeue -h -u $USER -t PENDING,RUNNING -o %j")
        assert left.returncode == 0 and "opgrade-ssh-hold" not in left.stdout, left.stdout  # released
