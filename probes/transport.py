"""SSH transport: the one module that talks to provider hosts, and the only one importing paramiko.

Probes never open sockets themselves. They ask an :class:`SshPool` (one per probe run and tenant
account) for an :class:`SshConnection` to an :class:`Endpoint`, and run :class:`Command` objects on
it. The pool keeps ONE authenticated SSH connection per host for the whole run and opens a new
channel per command, so a three-command probe pays for one handshake, not three.

Safety properties this module guarantees, so that no caller has to remember them:

* Host keys are pinned. Each endpoint carries the fingerprints an analyst recorded through an explicit
  action (see :func:`host_key_fetch`). The key offered during key exchange is compared with the pins
  BEFORE any authentication message is sent; a mismatch raises :class:`HostKeyChanged` and an
  endpoint without pins raises :class:`HostKeyNotPinned` (the behaviour of paramiko's
  ``RejectPolicy``, done at the ``Transport`` level so that the order "verify, then authenticate"
  is explicit and no agent or ``~/.ssh`` key is ever offered).
* Every phase has a deadline: TCP connect, the server's banner, the key exchange, authentication,
  opening a channel, and every command. At a command's deadline the remote process GROUP is killed:
  by a remote ``timeout -s KILL`` wrapper (which also fires when the client died, e.g. a worker
  SIGKILLed mid-run) and, a small grace later, by the client itself with ``kill -KILL -- -PGID``
  over a second channel (hosts without GNU ``timeout``, or a stuck remote side).
* Output is capped per stream; what is cut is flagged ``truncated``.
* Commands are built from fixed templates. Every value is passed through ``shlex.quote``; nothing a
  provider supplies is ever executed as shell text.
* Compute nodes are reached through the login node as a jump host (an SSH ``direct-tcpip`` channel),
  as on real managed clusters; the node's own host key is still verified against its pins.
* A password goes only to the SSH origin it was typed for (issue 24). ``Credentials.password_origins``
  holds the ``ssh://host:port`` origins (:func:`ssh_origin`) of the login node(s) the tenant's password
  was entered for; :func:`connect` refuses with :class:`PasswordNotBound` BEFORE opening a socket when
  password authentication would go to any other origin, whatever the caller passes. A compute node
  reached through the login node as its jump host (``node_access`` ``ssh``) counts as that login
  node's origin: it is the provider's node behind the login node the password was typed for, the
  login node's sshd opens the channel to it, and its own host key is still checked against its pins
  (or a pinned host CA) before the password is sent. A node reached directly (no jump) is an origin
  of its own and gets the password only if it was typed for it. Private-key authentication discloses
  no secret: only a signature made with the key leaves, never the key, and the key's passphrase is
  used here to decrypt the key in memory and is never sent to any host.
* A node no analyst pinned (one an operator just added) is trusted only through an OpenSSH HOST
  certificate signed by a host CA the analyst pinned for the cluster. paramiko negotiates the
  ``*-cert-v01@openssh.com`` host-key algorithms and checks that the server signed the key exchange
  with the key inside the certificate, but it checks nothing about the certificate itself (no CA,
  type, principals or validity), so :func:`_host_certificate_verify` does that with ``cryptography``.
  Anything short of a valid certificate raises :class:`HostKeyUnverified` with a reason, before
  authentication, like a changed key.

Errors are typed: ``transient`` ones (refused, reset, timeouts) may be retried with backoff by the
caller; the others (changed host key, failed authentication) must end the run at once.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import secrets
import select
import shlex
import socket
import string
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
from cryptography.exceptions import InvalidSignature
from cryptography.exceptions import UnsupportedAlgorithm as UnsupportedAlgorithmError
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    SSHCertificate,
    SSHCertificateType,
    load_ssh_public_identity,
)

__all__ = [
    "AuthFailed",
    "Command",
    "CommandResult",
    "CommandTemplateError",
    "ConnectionLost",
    "Credentials",
    "CredentialsInvalid",
    "Endpoint",
    "HandshakeFailed",
    "HostKey",
    "HostKeyChanged",
    "HostKeyNotPinned",
    "HostKeyUnverified",
    "HostUnreachable",
    "Limits",
    "NodeDeparted",
    "SchedulerConnection",
    "SchedulerRefused",
    "SshConnection",
    "SshPool",
    "Timeouts",
    "TransportError",
    "check_private_key",
    "connect",
    "host_ca_parse",
    "host_key_fetch",
]

# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


class TransportError(Exception):
    """Base of every error this module raises. ``transient`` says whether a retry may help."""

    transient: bool = False
    code: str = "transport_error"


class HostUnreachable(TransportError):
    """TCP connect refused, timed out, or the jump host could not open a channel to the node."""

    transient = True
    code = "host_unreachable"


class HandshakeFailed(TransportError):
    """No SSH banner, key exchange failed or timed out: the host answered but not as an SSH server."""

    transient = True
    code = "handshake_failed"


class ConnectionLost(TransportError):
    """The connection dropped after it was set up (reset, keepalive failure, channel refused)."""

    transient = True
    code = "connection_lost"


class HostKeyChanged(TransportError):
    """The host offered a key that matches none of its pins. No credential was sent."""

    code = "host_key_changed"

    def __init__(self, *, endpoint: str, offered: HostKey, pinned: tuple[HostKey, ...]) -> None:
        self.endpoint = endpoint
        self.offered = offered
        self.pinned = pinned
        super().__init__(
            f"host key changed for {endpoint}: offered {offered.key_type} {offered.fingerprint}, "
            f"pinned {', '.join(p.fingerprint for p in pinned)}"
        )


class HostKeyNotPinned(TransportError):
    """The endpoint has no pinned key yet: an analyst must record one first. No credential was sent."""

    code = "host_key_not_pinned"

    def __init__(self, *, endpoint: str, offered: HostKey) -> None:
        self.endpoint = endpoint
        self.offered = offered
        super().__init__(f"no pinned host key for {endpoint} (it offered {offered.fingerprint})")


class HostKeyUnverified(TransportError):
    """The host's key could not be verified through a pinned host CA. No credential was sent.

    ``reason`` is one of :data:`UNVERIFIED_REASONS`, so that a report (and a test) can tell a
    stale certificate from a forged one.
    """

    code = "host_key_unverified"

    def __init__(self, *, endpoint: str, offered: HostKey, reason: str, detail: str) -> None:
        if reason not in UNVERIFIED_REASONS:
            raise ValueError(f"unknown reason {reason!r}")
        self.endpoint = endpoint
        self.offered = offered
        self.reason = reason
        super().__init__(f"host key of {endpoint} unverified ({reason}): {detail}")


#: Why a host's key was not trusted through its certificate.
UNVERIFIED_REASONS = {
    "no_certificate": "offered a plain key that is not pinned, and no certificate",
    "malformed_certificate": "the certificate could not be read",
    "not_host_certificate": "a user certificate offered as a host certificate",
    "untrusted_ca": "signed by a CA no analyst pinned for this cluster",
    "bad_signature": "the CA's signature on the certificate does not verify",
    "key_mismatch": "the certificate is for another key than the one the host proved it holds",
    "wrong_principal": "the certificate does not name this node",
    "not_yet_valid": "the certificate's validity starts in the future",
    "expired": "the certificate's validity ended",
    "critical_options": "the certificate carries critical options a host certificate must not have",
}


class SchedulerRefused(TransportError):
    """The scheduler did not start the command on the node now (busy, drained, no allocation)."""

    code = "scheduler_refused"
    transient = True


class NodeDeparted(TransportError):
    """The scheduler no longer knows the node: it left the inventory during the run (replaced)."""

    code = "node_departed"


class AuthFailed(TransportError):
    """The server refused our credentials. Retrying would not help and may lock the account."""

    code = "auth_failed"


class PasswordNotBound(TransportError):
    """A password asked to go to an SSH origin it was not typed for: nothing was sent (no socket
    was even opened). The analyst must type the password again for the new login host and port."""

    code = "password_not_bound"

    def __init__(self, *, endpoint: str, origin: str, bound: frozenset[str]) -> None:
        self.origin = origin
        self.bound = bound
        entered = ", ".join(sorted(bound)) or "no login node"
        super().__init__(
            f"{endpoint}: the tenant's password was not sent to {origin}: it was entered for {entered}. "
            "Enter it again for this login host and port (tenant page or tenants step)."
        )


class CredentialsInvalid(TransportError):
    """The stored private key cannot be read (unknown type or wrong passphrase)."""

    code = "credentials_invalid"


class CommandTemplateError(ValueError):
    """A command template is malformed or its values do not match its placeholders."""


# ---------------------------------------------------------------------------------------------
# Value types
# ---------------------------------------------------------------------------------------------

# For RSA the key type on the wire is "ssh-rsa" while the signature algorithms are these two.
_HOST_KEY_ALGORITHMS = {
    "ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256"),
}
_CERT_SUFFIX = "-cert-v01@openssh.com"
# Offered first where host CAs are pinned, so that a host with a certificate presents it.
_CERT_ALGORITHMS = tuple(
    f"{t}{_CERT_SUFFIX}"
    for t in ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "rsa-sha2-512", "rsa-sha2-256")
)
# ... then the plain ones, so that a host without a certificate is refused as such ("no_certificate")
# rather than failing the key exchange as if it were no SSH server.
_PLAIN_ALGORITHMS = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")
_CA_KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")


@dataclass(frozen=True)
class HostKey:
    """A pinned (or offered) host key: its type and OpenSSH-style SHA256 fingerprint."""

    key_type: str
    fingerprint: str

    def __post_init__(self) -> None:
        if not self.fingerprint.startswith("SHA256:"):
            raise ValueError("fingerprint must be OpenSSH's SHA256:<base64> form")

    @classmethod
    def of(cls, key: paramiko.PKey) -> HostKey:
        return cls(key_type=key.get_name(), fingerprint=key.fingerprint)


def ssh_origin(host: str, port: int = 22) -> str:
    """``ssh://host:port`` of an SSH server, host lower-cased, an IPv6 address in brackets; the unit a
    tenant password is bound to (see the module docstring). "" for no host."""
    host = str(host or "").strip().lower().rstrip(".")
    if not host:
        return ""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"ssh://{shown}:{int(port or 22)}"


def _password_origin(endpoint: Endpoint) -> str:
    """The origin a password sent to ``endpoint`` counts against: the first hop's (the login node a
    jumped compute node is reached through), else the endpoint's own."""
    first = endpoint
    while first.jump is not None:
        first = first.jump
    return ssh_origin(first.host, first.port)


@dataclass(frozen=True)
class Credentials:
    """One tenant account. Secrets are excluded from ``repr`` so they never reach a log line.

    ``password`` is offered only to the SSH origins in ``password_origins`` (``ssh://host:port`` of
    the login node it was typed for; empty: to none), and only when there is no private key.
    ``private_key`` never leaves this process (the server sees a signature made with it), and
    ``passphrase`` only decrypts the key here: it is never sent to any host.
    """

    username: str
    private_key: str | None = field(default=None, repr=False)
    passphrase: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    password_origins: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.username:
            raise ValueError("username is required")
        if not self.private_key and not self.password:
            raise ValueError("either a private key or a password is required")


@dataclass(frozen=True)
class Endpoint:
    """Where to connect: host, port, the pinned host keys, and optionally a jump host."""

    host: str
    port: int = 22
    host_keys: tuple[HostKey, ...] = ()
    jump: Endpoint | None = None
    # Host CAs an analyst pinned (OpenSSH public-key lines): a host whose key is not in
    # ``host_keys`` is trusted when it presents a host certificate signed by one of them that
    # names ``principal`` (the node's name as the inventory gave it).
    host_cas: tuple[str, ...] = ()
    principal: str = ""
    # The node's name in the scheduler: when set, commands reach the node as a tenant's job does
    # (``srun --nodelist`` on the jump host, see :class:`SchedulerConnection`), not over SSH.
    scheduler_node: str = ""
    # Direct SSH only: the node's name in the scheduler. Where the node's sshd admits a tenant
    # only with a running job there (``pam_slurm_adopt``), the run holds a short job on it
    # (:class:`JobHold`) and connects again; see ``ProbeContext.ssh``.
    job_node: str = ""

    def __post_init__(self) -> None:
        if not self.host or any(c.isspace() for c in self.host):
            raise ValueError(f"invalid host {self.host!r}")
        if not 0 < self.port < 65536:
            raise ValueError(f"invalid port {self.port}")
        if self.scheduler_node and self.jump is None:
            raise ValueError("a node reached through the scheduler needs the login node as its jump host")
        if self.host_cas and not self.principal:
            raise ValueError("an endpoint trusted through host CAs needs the principal its certificate must name")

    @property
    def label(self) -> str:
        if self.scheduler_node:
            return f"{self.scheduler_node} (srun via {self.jump.label if self.jump else '?'})"
        hop = f" via {self.jump.label}" if self.jump else ""
        return f"{self.host}:{self.port}{hop}"

    @property
    def key(self) -> tuple[object, ...]:
        # the trust anchors are part of the identity: a connection verified as one principal (or
        # against one set of pins) is never handed out for another
        return (
            self.host, self.port, self.jump.key if self.jump else None, self.scheduler_node,
            self.host_keys, self.host_cas, self.principal,
        )  # fmt: skip


@dataclass(frozen=True)
class Timeouts:
    """Deadlines for each phase of a connection, in seconds."""

    connect_s: float = 10.0
    banner_s: float = 10.0
    handshake_s: float = 15.0
    auth_s: float = 15.0
    channel_open_s: float = 10.0
    keepalive_s: int = 15
    # Wrap each command in the host's `timeout -s KILL <deadline>` as well, so that a hung command
    # dies even when this client dies mid-run. Costs two short-lived processes per command on the
    # host; turn off for very high fan-out where the client-side kill is enough.
    remote_backstop: bool = True


@dataclass(frozen=True)
class Limits:
    """Caps on what one command may bring back."""

    max_output_bytes: int = 64 * 1024


class Command:
    """A shell command built from a FIXED template with every value ``shlex.quote``-d.

    Templates are constants written in our code (``"nvidia-smi --query-gpu={fields} --format=csv"``);
    values may come from anywhere, including a provider, because each one is quoted as a single
    shell word. Placeholders are ``{name}``; literal braces are written ``{{`` and ``}}``. Positional
    fields, format specs and conversions are refused so that a value can only ever be one word.
    """

    __slots__ = ("_rendered", "template", "values")

    def __init__(self, template: str, /, **values: str | int | float) -> None:
        names: set[str] = set()
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise CommandTemplateError(f"malformed template {template!r}: {exc}") from exc
        for _literal, name, spec, conversion in parsed:
            if name is None:
                continue
            if not name.isidentifier():
                raise CommandTemplateError(f"placeholder {{{name}}} must be a plain name")
            if spec or conversion:
                raise CommandTemplateError(f"placeholder {{{name}}} may not carry a format or conversion")
            names.add(name)
        missing, extra = names - values.keys(), values.keys() - names
        if missing or extra:
            raise CommandTemplateError(
                f"template {template!r}: missing values {sorted(missing)}, unused values {sorted(extra)}"
            )
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise CommandTemplateError(f"value {key!r} must be str, int or float")
        self.template = template
        self.values: Mapping[str, str | int | float] = dict(values)
        self._rendered = template.format_map({k: shlex.quote(str(v)) for k, v in values.items()})

    def render(self) -> str:
        """The shell text to send: the template with each value quoted."""
        return self._rendered

    def __repr__(self) -> str:
        return f"Command({self._rendered!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Command) and other._rendered == self._rendered

    def __hash__(self) -> int:
        return hash(self._rendered)


@dataclass(frozen=True)
class CommandResult:
    """What one command did. ``exit_code`` is None when it was killed at its deadline."""

    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def truncated(self) -> bool:
        return self.stdout_truncated or self.stderr_truncated


# ---------------------------------------------------------------------------------------------
# Connections
# ---------------------------------------------------------------------------------------------

# The first line on stderr reports the remote process-group id, so that the client can kill the
# whole group at the deadline. sshd puts each session in its own session (setsid), so the shell
# that runs our text is a group leader and `exec` keeps its pid. Background children inherit it.
_PGID_MARKER = b"OPGRADE-PGID="
_WRAPPER = (
    'echo "OPGRADE-PGID=$$" >&2; '
    "if command -v timeout >/dev/null 2>&1; then exec timeout -s KILL {backstop} sh -c {script}; "
    "else exec sh -c {script}; fi"
)
# Without the backstop the script runs in the login shell itself (no extra process on the host);
# the deadline is then enforced by the client alone.
_WRAPPER_NO_BACKSTOP = 'echo "OPGRADE-PGID=$$" >&2; eval {script}'
_KILL_GROUP = "kill -s KILL -- {neg_pgid} 2>/dev/null; true"
_READ_CHUNK = 32 * 1024
_POLL_S = 0.1


class _CappedBuffer:
    """Collects at most ``cap`` bytes; keeps draining (and discarding) the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        self.data.extend(chunk)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class _StderrBuffer(_CappedBuffer):
    """Stderr with the leading PGID marker line parsed off before the cap applies."""

    def __init__(self, cap: int) -> None:
        super().__init__(cap)
        self._head = bytearray()
        self.pgid: int | None = None
        self._head_done = False

    def feed(self, chunk: bytes) -> None:
        if self._head_done:
            super().feed(chunk)
            return
        self._head.extend(chunk)
        if b"\n" not in self._head and len(self._head) < 64:
            return
        line, _, rest = bytes(self._head).partition(b"\n")
        self._head_done = True
        if line.startswith(_PGID_MARKER) and line[len(_PGID_MARKER) :].isdigit():
            self.pgid = int(line[len(_PGID_MARKER) :])
        else:  # not our marker: keep everything as ordinary stderr
            rest = bytes(self._head)
        super().feed(rest)

    def flush(self) -> None:
        if not self._head_done:
            self._head_done = True
            super().feed(bytes(self._head))


class SshConnection:
    """One authenticated SSH connection to one host. Thread-safe: each command is its own channel."""

    def __init__(
        self,
        *,
        transport: paramiko.Transport,
        endpoint: Endpoint,
        host_key: HostKey,
        timeouts: Timeouts,
        limits: Limits,
        connect_s: float,
        verified_by: str = "pinned key",
    ) -> None:
        self._transport = transport
        self.endpoint = endpoint
        self.host_key = host_key
        # how the host's key was trusted: "pinned key" or the certificate and its CA
        self.verified_by = verified_by
        self.timeouts = timeouts
        self.limits = limits
        self.connect_s = connect_s
        self._sftp: paramiko.SFTPClient | None = None
        self._sftp_lock = threading.Lock()

    @property
    def is_active(self) -> bool:
        return self._transport.is_active()

    def _open_session(self) -> paramiko.Channel:
        try:
            return self._transport.open_session(timeout=self.timeouts.channel_open_s)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionLost(f"{self.endpoint.label}: could not open a channel: {exc}") from exc

    def run(
        self, command: Command, *, timeout_s: float, max_output_bytes: int | None = None
    ) -> CommandResult:
        """Run one command with a deadline; at the deadline kill its remote process group.

        Returns a result in every case the command itself decides (any exit code, timeout,
        truncation); raises :class:`ConnectionLost` only when the connection itself fails.
        """
        if not isinstance(command, Command):
            raise TypeError("run() takes a Command built from a fixed template, not a string")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        cap = max_output_bytes or self.limits.max_output_bytes
        text = command.render()
        if self.timeouts.remote_backstop:
            wrapped = Command(_WRAPPER, backstop=f"{timeout_s:.3f}", script=text).render()
        else:
            wrapped = Command(_WRAPPER_NO_BACKSTOP, script=text).render()

        channel = self._open_session()
        out, err = _CappedBuffer(cap), _StderrBuffer(cap)
        start = time.monotonic()
        # At the deadline the client kills the group itself (SSH "signal" request, then `kill` over
        # a second channel). The remote `timeout -s KILL` started a little after `start`, so it
        # fires just after: the backstop for a client that died or a connection that hung.
        hard_deadline = start + timeout_s
        killed_by_client = False
        try:
            self._send_exec(channel, wrapped)
            while True:
                if channel.event.is_set() and not channel.event_ready:  # the server refused the exec
                    raise ConnectionLost(f"{self.endpoint.label}: the server refused to run the command")
                self._drain(channel, out, err)
                if channel.exit_status_ready():
                    self._drain(channel, out, err)
                    break
                if not self._transport.is_active():
                    raise ConnectionLost(f"{self.endpoint.label}: connection dropped during a command")
                remaining = hard_deadline - time.monotonic()
                if remaining <= 0:
                    killed_by_client = True
                    break
                select.select([channel], [], [], min(remaining, _POLL_S))
        except (paramiko.SSHException, OSError, EOFError) as exc:
            channel.close()
            raise ConnectionLost(f"{self.endpoint.label}: {exc}") from exc
        err.flush()
        if killed_by_client:
            self._kill_group(channel, err.pgid)
            exit_code: int | None = None
        else:
            status = channel.recv_exit_status()
            exit_code = None if status == -1 else status  # -1: ended by a signal, no exit status
        channel.close()
        duration = time.monotonic() - start
        # A KILL from the backstop ends the session with a signal (exit status -1 / 137).
        timed_out = killed_by_client or (exit_code in (None, 137) and duration >= timeout_s)
        if timed_out:
            exit_code = None
        return CommandResult(
            command=text,
            exit_code=exit_code,
            stdout=out.text(),
            stderr=err.text(),
            duration_s=duration,
            timed_out=timed_out,
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
        )

    def _send_exec(self, channel: paramiko.Channel, command: str) -> None:
        """Send the exec request WITHOUT blocking on the server's reply.

        ``Channel.exec_command`` waits for the reply with no timeout, so an overloaded server could
        hold us past the command's deadline before our own loop even starts. The reply (success or
        failure) still arrives on ``channel.event``, which the loop checks.
        """
        message = paramiko.Message()
        message.add_byte(paramiko.common.cMSG_CHANNEL_REQUEST)
        message.add_int(channel.remote_chanid)
        message.add_string("exec")
        message.add_boolean(True)
        message.add_string(command)
        channel._event_pending()
        self._transport._send_user_message(message)

    @staticmethod
    def _drain(channel: paramiko.Channel, out: _CappedBuffer, err: _StderrBuffer) -> None:
        while channel.recv_ready():
            out.feed(channel.recv(_READ_CHUNK))
        while channel.recv_stderr_ready():
            err.feed(channel.recv_stderr(_READ_CHUNK))

    def _kill_group(self, channel: paramiko.Channel, pgid: int | None) -> None:
        """Kill the command's remote process group, fast path first.

        1. An SSH ``signal`` channel request: OpenSSH answers it with ``killpg`` on the session
           (for non-root users under privilege separation, i.e. real tenants), no new process.
        2. ``kill -KILL -- -PGID`` over a second channel on the same connection, which works
           everywhere the marker told us the group id.
        """
        try:
            message = paramiko.Message()
            message.add_byte(paramiko.common.cMSG_CHANNEL_REQUEST)
            message.add_int(channel.remote_chanid)
            message.add_string("signal")
            message.add_boolean(False)
            message.add_string("KILL")
            self._transport._send_user_message(message)
        except (paramiko.SSHException, OSError, EOFError, AttributeError):
            pass
        if pgid is None:  # marker never arrived; the remote backstop will still fire
            return
        try:
            killer = self._open_session()
            killer.exec_command(Command(_KILL_GROUP, neg_pgid=f"-{pgid}").render())
            killer.settimeout(self.timeouts.channel_open_s)
            killer.recv_exit_status()
            killer.close()
        except (TransportError, paramiko.SSHException, OSError, EOFError):
            pass  # best effort; the backstop covers us

    # -- files ----------------------------------------------------------------------------------

    def _sftp_client(self) -> paramiko.SFTPClient:
        with self._sftp_lock:
            if self._sftp is None:
                try:
                    self._sftp = paramiko.SFTPClient.from_transport(self._transport)
                except (paramiko.SSHException, OSError, EOFError) as exc:
                    raise ConnectionLost(f"{self.endpoint.label}: SFTP unavailable: {exc}") from exc
                if self._sftp is None:
                    raise ConnectionLost(f"{self.endpoint.label}: SFTP unavailable")
                self._sftp.get_channel().settimeout(self.timeouts.channel_open_s * 6)
            return self._sftp

    def put(self, data: bytes | Path, remote_path: str, *, mode: int | None = None) -> int:
        """Upload bytes or a local file (a helper script, a wheel); returns the size written."""
        sftp = self._sftp_client()
        payload = data.read_bytes() if isinstance(data, Path) else data
        try:
            with sftp.open(remote_path, "wb") as fh:
                fh.set_pipelined(True)
                fh.write(payload)
            if mode is not None:
                sftp.chmod(remote_path, mode)
        except (paramiko.SSHException, EOFError) as exc:
            raise ConnectionLost(f"{self.endpoint.label}: upload failed: {exc}") from exc
        return len(payload)

    def get(self, remote_path: str, *, max_bytes: int | None = None) -> tuple[bytes, bool]:
        """Download a file; returns (bytes, truncated). Reads at most ``max_bytes``."""
        cap = max_bytes or self.limits.max_output_bytes
        sftp = self._sftp_client()
        try:
            with sftp.open(remote_path, "rb") as fh:
                fh.prefetch()
                data = fh.read(cap + 1)
        except (paramiko.SSHException, EOFError) as exc:
            raise ConnectionLost(f"{self.endpoint.label}: download failed: {exc}") from exc
        return data[:cap], len(data) > cap

    # -- jump host ------------------------------------------------------------------------------

    def open_tunnel(self, host: str, port: int, *, timeout_s: float) -> paramiko.Channel:
        """A direct-tcpip channel from this host to host:port (this host acts as a jump host)."""
        try:
            return self._transport.open_channel(
                "direct-tcpip", (host, port), ("127.0.0.1", 0), timeout=timeout_s
            )
        except paramiko.ChannelException as exc:
            raise HostUnreachable(f"{host}:{port} via {self.endpoint.label}: {exc}") from exc
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionLost(f"jump host {self.endpoint.label}: {exc}") from exc

    def close(self) -> None:
        with self._sftp_lock:
            if self._sftp is not None:
                self._sftp.close()
                self._sftp = None
        self._transport.close()


def _open_socket(
    endpoint: Endpoint, timeouts: Timeouts, via: SshConnection | None
) -> socket.socket | paramiko.Channel:
    if via is not None:
        return via.open_tunnel(endpoint.host, endpoint.port, timeout_s=timeouts.connect_s)
    try:
        sock = socket.create_connection((endpoint.host, endpoint.port), timeout=timeouts.connect_s)
    except OSError as exc:  # refused, timed out, no route, DNS failure
        raise HostUnreachable(f"{endpoint.label}: {exc}") from exc
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _handshake(
    sock: socket.socket | paramiko.Channel,
    endpoint: Endpoint,
    timeouts: Timeouts,
    key_types: tuple[str, ...],
) -> tuple[paramiko.Transport, HostKey]:
    """Banner + key exchange, within deadlines. Returns the transport and the key the host offered."""
    transport = paramiko.Transport(sock)
    transport.banner_timeout = timeouts.banner_s
    transport.handshake_timeout = timeouts.handshake_s
    transport.auth_timeout = timeouts.auth_s
    if key_types:
        algorithms: list[str] = []
        for key_type in key_types:
            algorithms.extend(_HOST_KEY_ALGORITHMS.get(key_type, (key_type,)))
        try:
            transport.get_security_options().key_types = tuple(algorithms)
        except ValueError as exc:
            transport.close()
            raise HandshakeFailed(f"{endpoint.label}: unsupported pinned key type: {exc}") from exc
    done = threading.Event()
    try:
        transport.start_client(event=done)
        finished = done.wait(timeouts.banner_s + timeouts.handshake_s)
    except (paramiko.SSHException, OSError, EOFError) as exc:
        transport.close()
        raise HandshakeFailed(f"{endpoint.label}: {exc}") from exc
    if not finished or not transport.is_active():
        error = transport.get_exception()
        transport.close()
        reason = error or "timed out waiting for banner or key exchange"
        raise HandshakeFailed(f"{endpoint.label}: {reason}")
    return transport, HostKey.of(transport.get_remote_server_key())


def _key_types_to_offer(endpoint: Endpoint) -> tuple[str, ...]:
    pinned = tuple(dict.fromkeys(k.key_type for k in endpoint.host_keys))
    if not endpoint.host_cas:
        return pinned
    return _CERT_ALGORITHMS + (pinned or _PLAIN_ALGORITHMS)


def _openssh_fingerprint(blob: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def host_ca_parse(text: str) -> HostKey:
    """Check an OpenSSH public-key line as a host CA to pin; returns its type and fingerprint.

    Raises ValueError for anything that is not one plain public key of a type OpenSSH signs
    certificates with (a certificate, a private key or two keys are refused).
    """
    line = text.strip()
    if not line or "\n" in line or "PRIVATE KEY" in line:
        raise ValueError("expected one OpenSSH public key line (e.g. 'ssh-ed25519 AAAA... comment')")
    parts = line.split()
    if len(parts) < 2 or parts[0] not in _CA_KEY_TYPES:
        raise ValueError(f"a host CA is a plain public key of type {', '.join(_CA_KEY_TYPES)}")
    try:
        identity = load_ssh_public_identity(f"{parts[0]} {parts[1]}".encode())
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a readable OpenSSH public key: {exc}") from exc
    if isinstance(identity, SSHCertificate):
        raise ValueError("a certificate is not a CA key")
    return HostKey(key_type=parts[0], fingerprint=_openssh_fingerprint(base64.b64decode(parts[1])))


def _ca_blob(line: str) -> bytes:
    parts = line.split()
    return base64.b64decode(parts[1]) if len(parts) >= 2 else b""


def _host_certificate_verify(
    transport: paramiko.Transport, endpoint: Endpoint, offered: HostKey, *, now: float
) -> str:
    """Check the certificate the host presented against the endpoint's pinned host CAs.

    paramiko has already checked that the host signed the key exchange with the key inside the
    certificate (``Transport._verify_key`` builds the key from the certificate blob), i.e. that
    the host holds the certified key; everything about the certificate itself is checked here:
    the CA is one an analyst pinned, its signature verifies, it is a HOST certificate, it names
    ``endpoint.principal``, it is valid now, it carries no critical option, and its key is the
    key the host proved (checked again, not assumed). Returns a short description for the log.
    """

    def refuse(reason: str, detail: str) -> HostKeyUnverified:
        return HostKeyUnverified(endpoint=endpoint.label, offered=offered, reason=reason, detail=detail)

    negotiated = transport.host_key_type or ""
    proved = transport.get_remote_server_key()
    blob = getattr(proved, "public_blob", None)
    if not negotiated.endswith(_CERT_SUFFIX) or blob is None:
        raise refuse("no_certificate", f"it offered {offered.key_type} {offered.fingerprint}, no pin matches")
    try:
        cert = load_ssh_public_identity(blob.key_type.encode() + b" " + base64.b64encode(blob.key_blob))
    except (ValueError, TypeError, UnsupportedAlgorithmError) as exc:
        raise refuse("malformed_certificate", str(exc)[:200]) from exc
    if not isinstance(cert, SSHCertificate):
        raise refuse("malformed_certificate", "not a certificate")
    key_id = cert.key_id.decode("utf-8", errors="replace")[:100]
    if cert.type is not SSHCertificateType.HOST:
        raise refuse("not_host_certificate", f"certificate {key_id!r} is a {cert.type.name.lower()} certificate")
    ca = cert.signature_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
    ca_fp = _openssh_fingerprint(_ca_blob(ca.decode()))
    if not any(_ca_blob(ca.decode()) == _ca_blob(pinned) for pinned in endpoint.host_cas):
        raise refuse("untrusted_ca", f"certificate {key_id!r} is signed by {ca_fp}, which is not pinned")
    try:
        cert.verify_cert_signature()
    except InvalidSignature as exc:
        raise refuse("bad_signature", f"certificate {key_id!r} claims {ca_fp} but its signature fails") from exc
    certified = cert.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).split()
    if len(certified) < 2 or certified[1].decode() != proved.get_base64():
        raise refuse("key_mismatch", f"certificate {key_id!r} certifies another key than the host holds")
    principals = [p.decode("utf-8", errors="replace") for p in cert.valid_principals]
    if endpoint.principal not in principals:
        # an empty list means "any host" to OpenSSH: a CA's wildcard is not evidence for this node
        named = ", ".join(principals[:10]) or "no principal (any host)"
        raise refuse("wrong_principal", f"certificate {key_id!r} names {named}, not {endpoint.principal!r}")
    if now < cert.valid_after:
        raise refuse("not_yet_valid", f"certificate {key_id!r} is valid from {cert.valid_after} (unix time)")
    if now >= cert.valid_before:
        raise refuse("expired", f"certificate {key_id!r} expired at {cert.valid_before} (unix time)")
    if cert.critical_options:
        names = ", ".join(k.decode("utf-8", errors="replace") for k in cert.critical_options)[:200]
        raise refuse("critical_options", f"certificate {key_id!r} carries {names}")
    return f"certificate {key_id!r} for {endpoint.principal} signed by {ca_fp}"


def _load_private_key(credentials: Credentials) -> paramiko.PKey:
    assert credentials.private_key is not None
    for key_class in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return key_class.from_private_key(
                io.StringIO(credentials.private_key), password=credentials.passphrase
            )
        except (paramiko.SSHException, ValueError, TypeError):
            continue
    raise CredentialsInvalid("the private key could not be read (unsupported type or wrong passphrase)")


def check_private_key(private_key: str, passphrase: str | None = None) -> str:
    """Check that a private key can be read; returns its public fingerprint (never the key)."""
    key = _load_private_key(Credentials(username="check", private_key=private_key, passphrase=passphrase))
    return key.fingerprint


def connect(
    endpoint: Endpoint,
    credentials: Credentials,
    *,
    timeouts: Timeouts | None = None,
    limits: Limits | None = None,
    via: SshConnection | None = None,
) -> SshConnection:
    """Open, verify and authenticate one SSH connection (through ``via`` when given).

    Order matters: the host key is checked against ``endpoint.host_keys`` before the first
    authentication message, so a wrong host never sees a key signature or password. Without a
    private key, the password is offered only when the endpoint's SSH origin (its first hop's, for a
    node behind the login node) is one it was typed for: otherwise :class:`PasswordNotBound` is
    raised before any socket is opened. The passphrase only decrypts the key here; it is never sent.
    """
    timeouts = timeouts or Timeouts()
    limits = limits or Limits()
    started = time.monotonic()
    pkey = _load_private_key(credentials) if credentials.private_key else None
    if pkey is None:
        origin = _password_origin(endpoint)
        if origin not in credentials.password_origins:
            raise PasswordNotBound(endpoint=endpoint.label, origin=origin, bound=credentials.password_origins)
    sock = _open_socket(endpoint, timeouts, via)
    transport, offered = _handshake(sock, endpoint, timeouts, _key_types_to_offer(endpoint))
    verified_by = "pinned key"
    if not endpoint.host_keys and not endpoint.host_cas:
        transport.close()
        raise HostKeyNotPinned(endpoint=endpoint.label, offered=offered)
    if offered not in endpoint.host_keys:
        if not endpoint.host_cas:
            transport.close()
            raise HostKeyChanged(endpoint=endpoint.label, offered=offered, pinned=endpoint.host_keys)
        try:
            verified_by = _host_certificate_verify(transport, endpoint, offered, now=time.time())
        except HostKeyUnverified:
            transport.close()
            raise
    try:
        if pkey is not None:
            transport.auth_publickey(credentials.username, pkey)
        else:
            transport.auth_password(credentials.username, credentials.password, fallback=False)
    except paramiko.AuthenticationException as exc:
        transport.close()
        if "timeout" in str(exc).lower():
            raise HandshakeFailed(f"{endpoint.label}: authentication timed out") from exc
        raise AuthFailed(f"{endpoint.label}: authentication refused for {credentials.username!r}") from exc
    except (paramiko.SSHException, OSError, EOFError) as exc:
        transport.close()
        raise ConnectionLost(f"{endpoint.label}: during authentication: {exc}") from exc
    if not transport.is_authenticated():
        transport.close()
        raise AuthFailed(f"{endpoint.label}: authentication incomplete for {credentials.username!r}")
    transport.set_keepalive(timeouts.keepalive_s)
    return SshConnection(
        transport=transport,
        endpoint=endpoint,
        host_key=offered,
        timeouts=timeouts,
        limits=limits,
        connect_s=time.monotonic() - started,
        verified_by=verified_by,
    )


def host_key_fetch(
    *,
    host: str,
    port: int = 22,
    key_type: str | None = None,
    via: SshConnection | None = None,
    timeouts: Timeouts | None = None,
) -> HostKey:
    """Read the host key a server offers, for an analyst to inspect and pin. Sends no credential.

    This is the ONLY way a first fingerprint enters the system, and it is meant to be called from
    an explicit analyst action that shows the result before it is stored.
    """
    timeouts = timeouts or Timeouts()
    endpoint = Endpoint(host=host, port=port)
    sock = _open_socket(endpoint, timeouts, via)
    transport, offered = _handshake(sock, endpoint, timeouts, (key_type,) if key_type else ())
    transport.close()
    return offered


class SshPool:
    """The connections of one probe run for one tenant account: one per host, reused, closed at the end.

    Jump hosts are connected once and shared by every node behind them. Safe to use from the
    threads of a bounded fan-out; two threads asking for the same host wait for one connection.
    A handshake that timed out is tried once more (``handshake_retries`` counts them).
    """

    RETRY_PAUSE_S = 1.0

    def __init__(
        self,
        *,
        credentials: Credentials,
        timeouts: Timeouts | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.credentials = credentials
        self.timeouts = timeouts or Timeouts()
        self.limits = limits or Limits()
        self._connections: dict[tuple[object, ...], SshConnection] = {}
        self._locks: dict[tuple[object, ...], threading.Lock] = {}
        self._guard = threading.Lock()
        self.connects = 0  # how many handshakes this pool paid for (reuse shows as a low number)
        self.handshake_retries = 0  # handshakes that timed out and were tried once more

    def connection(self, endpoint: Endpoint) -> SshConnection:
        with self._guard:
            lock = self._locks.setdefault(endpoint.key, threading.Lock())
        with lock:
            existing = self._connections.get(endpoint.key)
            if existing is not None and existing.is_active:
                return existing
            via = self.connection(endpoint.jump) if endpoint.jump else None
            try:
                conn = connect(endpoint, self.credentials, timeouts=self.timeouts, limits=self.limits, via=via)
            except HandshakeFailed as exc:
                # A loaded sshd can answer its banner late or drop a connection before it (MaxStartups;
                # CI saw one at load 9 on 2 cores): one more attempt, as OpenSSH's ConnectionAttempts
                # would. Only for a missing banner or a timeout: a refused algorithm says the same
                # thing twice. Bounded: at most two handshakes.
                if "timed out" not in str(exc) and "banner" not in str(exc):
                    raise
                self.handshake_retries += 1
                time.sleep(self.RETRY_PAUSE_S)
                conn = connect(endpoint, self.credentials, timeouts=self.timeouts, limits=self.limits, via=via)
            with self._guard:
                self._connections[endpoint.key] = conn
                self.connects += 1
            return conn

    def close(self) -> None:
        with self._guard:
            # Nodes behind a jump host first, then the jump hosts themselves.
            ordered = sorted(self._connections.values(), key=lambda c: c.endpoint.jump is None)
            self._connections.clear()
        for conn in ordered:
            conn.close()

    def __enter__(self) -> SshPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# Nodes reached through the scheduler
# ---------------------------------------------------------------------------------------------

_SRUN = (
    "srun --nodelist={node} --nodes=1 --ntasks=1 --quiet --immediate={wait} --time={minutes} "
    "--job-name={name} bash -c {script}"
)
_SRUN_ERROR = ("srun: error:", "srun: Required node not available", "srun: Job allocation")
_NODE_UNKNOWN = ("Invalid node name", "invalid node name", "not found")


class SchedulerConnection:
    """A compute node reached the way a tenant reaches it: a short job step from the login node.

    ``run`` sends ``srun --nodelist=NODE -N1 -n1 --immediate=... --time=... bash -c <command>``
    over the tenant's connection to the login node, so the node needs no SSH access and no host
    key of its own (the login node's pin covers the channel), and the tenant's Slurm limits,
    accounts and job containers apply. The allocation waits at most ``--immediate`` seconds; a
    refusal by the scheduler raises :class:`SchedulerRefused` (transient) and a node the scheduler
    no longer knows :class:`NodeDeparted`, so neither is mistaken for the command's own failure.
    """

    job_name = "opgrade-probe"

    def __init__(self, login: SshConnection, endpoint: Endpoint) -> None:
        if not endpoint.scheduler_node:
            raise ValueError("not a scheduler endpoint")
        self.login = login
        self.endpoint = endpoint
        self.host_key = login.host_key  # the only host this path authenticates
        self.connect_s = 0.0  # no handshake of its own: the login node's connection is reused

    @staticmethod
    def wrap(node: str, command: Command, *, timeout_s: float, name: str = "") -> Command:
        wait = max(1, min(30, int(timeout_s // 2)))
        minutes = max(1, -(-int(timeout_s) // 60) + 1)
        return Command(
            _SRUN, node=node, wait=wait, minutes=minutes, name=name or SchedulerConnection.job_name,
            script=command.render(),
        )

    def run(
        self, command: Command, *, timeout_s: float, max_output_bytes: int | None = None
    ) -> CommandResult:
        if not isinstance(command, Command):
            raise TypeError("run() takes a Command built from a fixed template, not a string")
        node = self.endpoint.scheduler_node
        # a name of its own, so that a step killed at its deadline can be cancelled (below)
        name = f"{self.job_name}-{secrets.token_hex(4)}"
        wrapped = self.wrap(node, command, timeout_s=timeout_s, name=name)
        # the allocation may take up to --immediate seconds before the command's own deadline starts
        wait = max(1, min(30, int(timeout_s // 2)))
        result = self.login.run(wrapped, timeout_s=timeout_s + wait + 5, max_output_bytes=max_output_bytes)
        if result.timed_out or result.exit_code is None:
            # srun killed at the deadline leaves its allocation running until --time: on a node with
            # few CPUs it would hold the node from the next command (and from other tenants' work)
            with contextlib.suppress(TransportError):
                self.login.run(Command('scancel -u "$(id -un)" -n {name}', name=name), timeout_s=15)
        if result.exit_code not in (0, None) and "still not ready" in result.stderr:
            # a node that just (re)joined: its first allocation's prolog may not be done; once more
            time.sleep(2)
            result = self.login.run(wrapped, timeout_s=timeout_s + wait + 5, max_output_bytes=max_output_bytes)
        said = result.stderr.strip()
        if result.exit_code not in (0, None) and not result.stdout.strip() and said.startswith(_SRUN_ERROR):
            if any(marker in said for marker in _NODE_UNKNOWN) or self._gone(node):
                raise NodeDeparted(f"{node}: the scheduler no longer lists it: {said[:300]}")
            raise SchedulerRefused(f"{node}: the scheduler did not run the command: {said[:300]}")
        return result

    def _gone(self, node: str) -> bool:
        """Slurm answers "nodes are busy" for a node slot that went back to FUTURE (hidden): ask."""
        try:
            shown = self.login.run(Command("scontrol -o show node {node}", node=node), timeout_s=15)
        except TransportError:
            return False
        text = shown.stdout + shown.stderr
        return "not found" in text or "State=FUTURE" in text

    def put(self, *_: object, **__: object) -> int:
        raise SchedulerRefused(f"{self.endpoint.label}: no file transfer through the scheduler")

    def get(self, *_: object, **__: object) -> tuple[bytes, bool]:
        raise SchedulerRefused(f"{self.endpoint.label}: no file transfer through the scheduler")

    def close(self) -> None:  # the login node's connection belongs to the pool
        return None


_HOLD = (
    "sbatch --parsable --nodelist={node} --nodes=1 --ntasks=1 --time={minutes} --job-name={name} "
    "--output=/dev/null --wrap {wrap}"
)


class JobHold:
    """A short job of the tenant's on one node, held while the run reaches that node over SSH.

    On clusters whose compute nodes admit a tenant only while it has a running job there
    (``pam_slurm_adopt``, the testbed's ``ssh.restrict_to_jobs``), a tenant who wants a shell on a
    node first gets an allocation on it. ``start`` submits ``sbatch --nodelist=NODE --wrap 'sleep
    N'`` from the login node and waits until it runs; a job the scheduler does not start within
    ``wait_s`` is cancelled and :class:`SchedulerRefused` raised (the node is unreachable by the
    provider's policy now: never a pass, and like a refused ``srun``, not held against the
    operator's credentials). ``release`` cancels the job.
    """

    job_name = "opgrade-ssh-hold"

    def __init__(self, login: SshConnection, node: str, *, hold_s: int = 1800, wait_s: float = 30) -> None:
        if not node:
            raise ValueError("a job hold needs the node's scheduler name")
        self.login = login
        self.node = node
        self.hold_s = hold_s
        self.wait_s = wait_s
        self.job_id = ""

    def start(self, *, why: str = "") -> str:
        submit = Command(
            _HOLD, node=self.node, minutes=max(1, -(-self.hold_s // 60) + 1), name=self.job_name,
            wrap=f"sleep {int(self.hold_s)}",
        )  # fmt: skip
        result = self.login.run(submit, timeout_s=30)
        job_id = result.stdout.strip().split(";")[0]
        if result.exit_code != 0 or not job_id.isdigit():
            said = (result.stderr or result.stdout).strip()[:300]
            raise SchedulerRefused(
                f"{self.node}: SSH to this node needs a running job of the tenant there{why}, and the "
                f"scheduler refused one: {said}"
            )
        self.job_id = job_id
        deadline = time.monotonic() + self.wait_s
        state = ""
        while time.monotonic() < deadline:
            shown = self.login.run(Command("squeue -h -j {job} -o %T", job=job_id), timeout_s=15)
            state = shown.stdout.strip()
            if state == "RUNNING":
                return job_id
            if shown.exit_code == 0 and state not in ("PENDING", "CONFIGURING", ""):
                break
            time.sleep(0.5)
        self.release()
        raise SchedulerRefused(
            f"{self.node}: SSH to this node needs a running job of the tenant there{why}, and the "
            f"scheduler did not start one within {self.wait_s:g}s (job state {state or 'unknown'})"
        )

    def release(self) -> None:
        job_id, self.job_id = self.job_id, ""
        if not job_id:
            return
        with contextlib.suppress(TransportError):  # the job ends by its --time anyway
            self.login.run(Command("scancel {job}", job=job_id), timeout_s=15)
