"""Direct SSH to a node that admits a tenant only with a job there (pam_slurm_adopt, the testbed's
``ssh.restrict_to_jobs``): the context holds a short job on the node, connects again, and cancels
the job at close; no job placed means the node is refused by the scheduler, never a pass."""

from __future__ import annotations

import pytest

from probes.catalog.base import ProbeContext, Tenant
from probes.transport import AuthFailed, CommandResult, Credentials, Endpoint, SchedulerRefused
from tests.probes.fakes import FakeTransport, ok

LOGIN = Endpoint(host="10.0.0.1", port=22)
NODE = Endpoint(host="10.0.0.11", port=22, jump=LOGIN, job_node="node1")


def _ctx(transport: FakeTransport, **settings: object) -> ProbeContext:
    return ProbeContext(
        provider="p", cluster="c", login=LOGIN, nodes=[NODE],
        tenants=[Tenant(label="tenant-a", credentials=Credentials(username="a", private_key="k"))],
        settings=settings, pool_factory=transport.pool,
    )  # fmt: skip


def _refused_until_running(state: str = "RUNNING", submit: CommandResult | None = None) -> FakeTransport:
    transport = FakeTransport(handler=lambda e, t: ok())
    transport.connect_errors[NODE.host] = AuthFailed("Authentication failed")

    def handler(endpoint: Endpoint, text: str) -> CommandResult:
        if text.startswith("sbatch "):
            return submit or ok("4242\n")
        if text.startswith("squeue "):
            if state == "RUNNING":
                transport.connect_errors.pop(NODE.host, None)  # sshd now finds the tenant's job
            return ok(state + "\n")
        return ok()

    transport.handler = handler
    return transport


def test_a_node_that_refuses_a_tenant_without_a_job_is_reached_with_a_held_job_cancelled_at_close() -> None:
    transport = _refused_until_running()
    ctx = _ctx(transport)
    conn = ctx.ssh(NODE)
    assert conn.endpoint == NODE
    ctx.ssh(NODE)  # one hold per tenant and node
    sent = [t for h, t in transport.log if h == LOGIN.host]
    assert sum(t.startswith("sbatch ") for t in sent) == 1
    assert "--nodelist=node1" in sent[0] and "--job-name=opgrade-ssh-hold" in sent[0]
    ctx.close()
    assert [t for h, t in transport.log][-1] == "scancel 4242"


def test_no_job_started_on_the_node_is_a_scheduler_refusal_and_the_pending_job_is_cancelled() -> None:
    transport = _refused_until_running(state="PENDING")
    ctx = _ctx(transport, **{"ssh_job_hold.wait_s": 1})
    with pytest.raises(SchedulerRefused, match="needs a running job of the tenant there"):
        ctx.ssh(NODE)
    assert [t for _, t in transport.log][-1] == "scancel 4242"
    ctx.close()


def test_a_refused_submission_is_a_scheduler_refusal() -> None:
    refused = CommandResult(
        command="", exit_code=1, stdout="", stderr="sbatch: error: Invalid node name specified", duration_s=0.1
    )
    transport = _refused_until_running(submit=refused)
    with pytest.raises(SchedulerRefused, match="scheduler refused one"):
        _ctx(transport).ssh(NODE)


def test_without_a_scheduler_name_the_refusal_stays_an_auth_failure() -> None:
    transport = _refused_until_running()
    bare = Endpoint(host=NODE.host, port=22, jump=LOGIN)
    with pytest.raises(AuthFailed):
        _ctx(transport).ssh(bare)
    assert not any(t.startswith("sbatch ") for _, t in transport.log)


def test_a_job_step_killed_at_its_deadline_is_cancelled_so_it_does_not_hold_the_node() -> None:
    from probes.transport import Command, SchedulerConnection

    transport = FakeTransport(handler=lambda e, t: ok())

    def handler(endpoint: Endpoint, text: str) -> CommandResult:
        if text.startswith("srun "):
            return CommandResult(command=text, exit_code=None, stdout="", stderr="", duration_s=5, timed_out=True)
        return ok()

    transport.handler = handler
    login = _ctx(transport).ssh(LOGIN)
    node = Endpoint(host=NODE.host, port=22, jump=LOGIN, scheduler_node="node1")
    result = SchedulerConnection(login, node).run(Command("sleep 100"), timeout_s=5)  # type: ignore[arg-type]
    assert result.timed_out
    srun, cancel = [t for _, t in transport.log]
    name = srun.split("--job-name=")[1].split()[0]
    assert name.startswith("opgrade-probe-") and cancel == f'scancel -u "$(id -un)" -n {name}'
