"""Host certificates and SSH restricted to tenants with a job, on a live testbed (issue 18.2-3).

One exemplary testbed with ``ssh.restrict_to_jobs`` on: its compute nodes present host
certificates from the testbed's host CA, so Opgrade's transport, with only the CA pinned,
reaches a node that did not exist when the analyst pinned anything (the operator's
replacement). A tenant without a job on a node is refused at authentication (after the
certificate was verified), while ``srun --nodelist`` from the login node works.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from probes.transport import (
    AuthFailed,
    Command,
    Credentials,
    Endpoint,
    HostKeyNotPinned,
    HostKeyUnverified,
    SchedulerConnection,
    SshPool,
    host_ca_parse,
)
from testbed import api
from testbed.pytest_helpers import prefixed_name, running_testbed, ssh_run

pytestmark = pytest.mark.testbed


def wait_for(check: Callable[[], Any], *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


@contextmanager
def job_on(info: api.TestbedInfo, node: str) -> Iterator[str]:
    """Tenant a holds a running job on ``node`` for the duration."""
    proc = ssh_run(info, "a", f"sbatch --parsable -w {node} -N1 -n1 --time=5 -o /dev/null --wrap 'sleep 300'")
    assert proc.returncode == 0, proc.stderr
    job = proc.stdout.strip().split(";")[0]
    try:
        wait_for(lambda: ssh_run(info, "a", f"squeue -h -j {job} -o %T").stdout.strip() == "RUNNING",
                 timeout=60, what=f"job {job} running on {node}")  # fmt: skip
        yield job
    finally:
        ssh_run(info, "a", f"scancel {job}")


def test_nodes_are_trusted_through_their_host_certificate_and_ssh_needs_a_job_there() -> None:
    with running_testbed(
        "exemplary", name=prefixed_name("hca"), nodes=1, overrides={"ssh": {"restrict_to_jobs": True}}
    ) as info:
        ca = info.host_ca_public_key
        assert ca.startswith("ssh-ed25519 ")
        printed = subprocess.run(
            [sys.executable, "-m", "testbed", "host-ca", info.name], capture_output=True, text=True, timeout=60
        )
        assert printed.stdout.strip() == ca, printed.stderr
        tenant = info.tenant("a")
        creds = Credentials(username=tenant.user, private_key=Path(tenant.private_key).read_text())
        login = Endpoint(host=info.login_addr, port=info.ssh_port, host_keys=(host_ca_parse(info.login_host_key),))
        (name, node), = info.nodes.items()

        def by_cert(address: str, principal: str) -> Endpoint:
            return Endpoint(host=address, port=22, jump=login, host_cas=(ca,), principal=principal)

        with SshPool(credentials=creds) as pool:
            login_conn = pool.connection(login)  # the login node takes tenants as before
            # no job on the node: its certificate verifies, then sshd refuses the tenant
            with pytest.raises(AuthFailed):
                pool.connection(by_cert(node["address"], name))
            with pytest.raises(HostKeyNotPinned):  # neither pin nor CA: not even tried
                pool.connection(Endpoint(host=node["address"], port=22, jump=login))
            # the tenant's path needs no SSH to the node at all
            srun = SchedulerConnection(login_conn, Endpoint(host=node["address"], jump=login, scheduler_node=name))
            assert srun.run(Command("hostname"), timeout_s=60).stdout.strip() == name
            with job_on(info, name):
                conn = pool.connection(by_cert(node["address"], name))
                assert conn.run(Command("hostname"), timeout_s=30).stdout.strip() == name
                assert conn.verified_by.startswith(f"certificate '{name}.") and f"for {name} " in conn.verified_by

        # the operator replaces the node; nobody pins anything for its successor
        code, _ = api.provider_call(info.name, "POST", f"/v1/nodes/{name}/report-faulty", {"reason": "ECC errors"})
        assert code == 202

        def replaced() -> list[dict[str, Any]] | None:
            _, body = api.provider_call(info.name, "GET", "/v1/nodes")
            fresh = [n for n in body["nodes"] if n["name"] != name and n["status"] == "ready"]
            return fresh if name not in {n["name"] for n in body["nodes"]} and fresh else None

        new = wait_for(replaced, timeout=60, what="the operator to replace the node")[0]
        wait_for(lambda: f"{new['name']} idle" in ssh_run(info, "a", "sinfo -h -N -o '%N %t'").stdout,
                 timeout=30, what=f"{new['name']} idle")  # fmt: skip
        with SshPool(credentials=creds) as pool, job_on(info, new["name"]):
            conn = pool.connection(by_cert(new["address"], new["name"]))
            assert conn.run(Command("hostname"), timeout_s=30).stdout.strip() == new["name"]
            assert f"for {new['name']} " in conn.verified_by
            # the certificate binds the name: the same node under the departed node's name is refused
            with pytest.raises(HostKeyUnverified) as caught:
                pool.connection(by_cert(new["address"], name))
            assert caught.value.reason == "wrong_principal"
