"""A fake transport that knows which tenant is asking: ``handler(user, host, command) -> CommandResult``.

The catalog's tenant-pair probes run commands as two different accounts; their unit tests need
answers that depend on who asks (tenant B sees its canary, tenant A must not).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from probes.catalog.base import ProbeContext, Requirement, Tenant
from probes.transport import Command, CommandResult, Credentials, Endpoint, HostKey

Handler = Callable[[str, str, str], CommandResult]
LOGIN = Endpoint(host="10.200.9.3", host_keys=(HostKey("ssh-ed25519", "SHA256:login"),))
NODES = [
    Endpoint(host=f"10.200.9.1{i}", host_keys=(HostKey("ssh-ed25519", "SHA256:n"),), jump=LOGIN)
    for i in (1, 2)
]


def result(stdout: str = "", *, exit_code: int = 0, stderr: str = "") -> CommandResult:
    return CommandResult(command="", exit_code=exit_code, stdout=stdout, stderr=stderr, duration_s=0.01)


@dataclass
class _Conn:
    user: str
    endpoint: Endpoint
    handler: Handler
    log: list[tuple[str, str, str]]
    connect_s: float = 0.01
    host_key: HostKey = field(default_factory=lambda: HostKey("ssh-ed25519", "SHA256:fake"))

    def run(
        self, command: Command, *, timeout_s: float, max_output_bytes: int | None = None
    ) -> CommandResult:
        text = command.render()
        self.log.append((self.user, self.endpoint.host, text))
        r = self.handler(self.user, self.endpoint.host, text)
        return CommandResult(
            command=text,
            exit_code=r.exit_code,
            stdout=r.stdout,
            stderr=r.stderr,
            duration_s=r.duration_s,
            timed_out=r.timed_out,
        )


@dataclass
class FakeCluster:
    handler: Handler
    log: list[tuple[str, str, str]] = field(default_factory=list)

    def pool(self, *, credentials: Credentials, **_: Any) -> Any:
        cluster = self

        class Pool:
            def connection(self, endpoint: Endpoint) -> _Conn:
                return _Conn(credentials.username, endpoint, cluster.handler, cluster.log)

            def close(self) -> None:
                pass

        return Pool()

    def context(self, **kwargs: Any) -> ProbeContext:
        tenants = [
            Tenant(label=f"tenant-{x}", credentials=Credentials(username=f"user-{x}", private_key="k"))
            for x in ("a", "b")
        ]
        return ProbeContext(
            provider="p",
            cluster="c",
            login=LOGIN,
            nodes=NODES,
            tenants=tenants,
            **{
                "facts": {"scale": "testbed"},
                "capabilities": {Requirement.SSH, Requirement.SLURM, Requirement.TWO_TENANTS},
                "pool_factory": self.pool,
                **kwargs,
            },
        )
