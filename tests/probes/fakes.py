"""A fake SSH transport for unit tests: scripted answers per host, no sockets.

``FakePool`` has the same surface as ``probes.transport.SshPool`` (``connection``, ``close``,
``connects``); its connections answer ``run`` from a handler ``(endpoint, command_text) ->
CommandResult | Exception`` and record every command they were given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from probes.transport import Command, CommandResult, Credentials, Endpoint, HostKey

Handler = Callable[[Endpoint, str], CommandResult | BaseException]


def ok(stdout: str = "", *, duration_s: float = 0.01, command: str = "") -> CommandResult:
    return CommandResult(command=command, exit_code=0, stdout=stdout, stderr="", duration_s=duration_s)


@dataclass
class FakeConnection:
    endpoint: Endpoint
    handler: Handler
    log: list[tuple[str, str]]
    connect_s: float = 0.05
    host_key: HostKey = field(default_factory=lambda: HostKey("ssh-ed25519", "SHA256:fake"))

    def run(
        self, command: Command, *, timeout_s: float, max_output_bytes: int | None = None
    ) -> CommandResult:
        assert isinstance(command, Command)
        text = command.render()
        self.log.append((self.endpoint.host, text))
        answer = self.handler(self.endpoint, text)
        if isinstance(answer, BaseException):
            raise answer
        return CommandResult(
            command=text,
            exit_code=answer.exit_code,
            stdout=answer.stdout,
            stderr=answer.stderr,
            duration_s=answer.duration_s,
            timed_out=answer.timed_out,
        )


@dataclass
class FakeTransport:
    """Build with a handler; pass ``.pool`` wherever a ``pool_factory`` is accepted."""

    handler: Handler
    log: list[tuple[str, str]] = field(default_factory=list)
    connect_errors: dict[str, BaseException] = field(default_factory=dict)
    pools: list[FakePool] = field(default_factory=list)

    def pool(self, *, credentials: Credentials, **_: object) -> FakePool:
        pool = FakePool(self, credentials)
        self.pools.append(pool)
        return pool


class FakePool:
    def __init__(self, transport: FakeTransport, credentials: Credentials) -> None:
        self.transport = transport
        self.credentials = credentials
        self.connects = 0
        self.closed = False
        self._conns: dict[tuple[object, ...], FakeConnection] = {}

    def connection(self, endpoint: Endpoint) -> FakeConnection:
        if endpoint.jump is not None:  # like SshPool: the jump host is connected first
            self.connection(endpoint.jump)
        error = self.transport.connect_errors.get(endpoint.host)
        if error is not None:
            raise error
        if endpoint.key not in self._conns:
            self.connects += 1
            self._conns[endpoint.key] = FakeConnection(endpoint, self.transport.handler, self.transport.log)
        return self._conns[endpoint.key]

    def close(self) -> None:
        self.closed = True
