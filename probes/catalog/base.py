"""The probe interface: what a probe declares, what it is given, and what it returns.

A probe is a small self-describing class in its own module of ``probes/catalog/``. It declares
(as class attributes, i.e. data) the question it answers, its scope and requirements, whether it is
disruptive, its timeout, its metric and its thresholds (with per-GPU-model entries). Its
:meth:`Probe.execute` is called once per :class:`Target` with a :class:`ProbeContext` and returns
:class:`FindingDraft` objects; the runner (``probes/services.py``) persists them as immutable
Finding rows.

Rules every probe follows:

* Talk to hosts only through ``ctx.ssh(endpoint)`` (``probes.transport``), with
  :class:`~probes.transport.Command` templates; never build shell text from values.
* Parse in pure functions (``probes/parsers/`` or the probe's module): text in, frozen values out.
* Keep "could not measure" apart from "measured bad": a transport failure or unparsable output is
  ``error``, a target where the question does not apply is ``not_applicable``, never ``pass``.
  Unmet requirements are turned into ``not_applicable`` (the question does not apply) or
  ``declined`` (the provider withholds what it needs) by the runner before ``execute`` is called
  (:meth:`Probe.skip`).
* Evidence is bounded and redacted: use :meth:`ProbeContext.evidence`.

This module imports no Django models and reads no clock (timings come from the transport).
"""

from __future__ import annotations

import hashlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from probes.egress import HttpCredential
from probes.transport import (
    AuthFailed,
    CommandResult,
    Credentials,
    Endpoint,
    JobHold,
    SchedulerConnection,
    SshConnection,
    SshPool,
)
from rubric.spec import Area, Direction, Outcome  # the shared vocabulary


class Scope(StrEnum):
    NODE = "node"  # once per host: the login node and every compute node
    CLUSTER = "cluster"  # once per cluster, usually from the login node
    TENANT_PAIR = "tenant_pair"  # once per (observer, victim) pair of tenant accounts


class Requirement(StrEnum):
    SSH = "ssh"
    SLURM = "slurm"
    GPU = "gpu"
    PROVIDER_API = "provider_api"
    TWO_TENANTS = "two_tenants"


# What the provider gives (or withholds) rather than what the cluster is: a probe missing one of
# these is declined, not inapplicable.
PROVIDED_BY_PROVIDER = frozenset({Requirement.SSH, Requirement.PROVIDER_API, Requirement.TWO_TENANTS})


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    direction: Direction


@dataclass(frozen=True)
class Threshold:
    """One row of a probe's threshold table. Empty ``match`` is the default row.

    ``pass_at``/``warn_at`` are inclusive bounds in the metric's direction: for ``higher``,
    value >= pass_at passes; for ``lower``, value <= pass_at passes.
    """

    pass_at: float
    warn_at: float | None = None
    match: Mapping[str, str] = field(default_factory=dict)
    reference: str = ""

    @property
    def ref(self) -> str:
        keys = ",".join(f"{k}={v}" for k, v in sorted(self.match.items()))
        return keys or "default"


@dataclass(frozen=True)
class Thresholds:
    """A probe's threshold table: the first row whose ``match`` fits the facts wins."""

    rows: tuple[Threshold, ...] = ()

    def select(self, facts: Mapping[str, str]) -> Threshold | None:
        for row in self.rows:
            if all(facts.get(k, "").lower() == v.lower() for k, v in row.match.items()):
                return row
        return None

    def evaluate(self, value: float, direction: Direction, facts: Mapping[str, str]) -> tuple[Outcome, str]:
        """(outcome, threshold ref). With no row for these facts there is no bar to hold the value
        against, so the outcome is ``not_applicable`` (the value is still recorded)."""
        row = self.select(facts)
        if row is None:
            return Outcome.NOT_APPLICABLE, "none"

        def meets(bound: float) -> bool:
            return value >= bound if direction is Direction.HIGHER else value <= bound

        if meets(row.pass_at):
            return Outcome.PASS, row.ref
        if row.warn_at is not None and meets(row.warn_at):
            return Outcome.WARN, row.ref
        return Outcome.FAIL, row.ref


@dataclass(frozen=True)
class Target:
    """What one execution of a probe is about: a node, the cluster, or a tenant pair."""

    kind: Scope
    name: str
    endpoint: Endpoint | None = None
    tenants: tuple[str, ...] = ()


@dataclass(frozen=True)
class FindingDraft:
    """A finding before it is stored. The runner adds run, probe id/version, attempt and times."""

    target: str
    outcome: Outcome
    metric: str = ""
    value: float | None = None
    unit: str = ""
    summary: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    critical: bool = False
    threshold_ref: str = ""


@dataclass(frozen=True)
class Tenant:
    """A tenant account the probes may act as. Credentials stay out of reprs and evidence."""

    label: str
    credentials: Credentials
    #: the origins (scheme://host:port) the password was entered for: the only ones it goes to over HTTP
    http_origins: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ProviderApi:
    base_url: str
    token: str = field(default="", repr=False)
    #: the origin the token was entered for (probes.egress): the only one it is sent to
    origin: str = ""

    @property
    def credential(self) -> HttpCredential:
        return HttpCredential(kind="bearer", origins=frozenset([self.origin] if self.origin else []), secret=self.token)


EVIDENCE_TEXT_BYTES = 4096


class ProbeContext:
    """Everything a probe may use about the cluster under test, built by the runner.

    SSH connections are pooled per tenant account for the whole run (one per host), and closed by
    the runner. ``redact`` removes every secret the context knows about from evidence text.
    """

    def __init__(
        self,
        *,
        provider: str,
        cluster: str,
        login: Endpoint | None,
        nodes: Sequence[Endpoint] = (),
        tenants: Sequence[Tenant] = (),
        facts: Mapping[str, str] | None = None,
        capabilities: Iterable[Requirement] = (),
        api: ProviderApi | None = None,
        settings: Mapping[str, Any] | None = None,
        disruptive_allowed: bool = False,
        max_concurrency: int = 8,
        pool_factory: Any = SshPool,
    ) -> None:
        self.provider = provider
        self.cluster = cluster
        self.login = login
        self.nodes = tuple(nodes)
        self.tenants = tuple(tenants)
        self.facts: Mapping[str, str] = dict(facts or {})  # gpu_model, gpu_count, orchestrator ...
        self.capabilities = frozenset(capabilities)
        self.api = api
        self.settings: Mapping[str, Any] = dict(settings or {})
        self.disruptive_allowed = disruptive_allowed
        self.max_concurrency = max_concurrency
        self._pool_factory = pool_factory
        self._pools: dict[str, Any] = {}
        # jobs held on nodes whose sshd admits a tenant only with a job there: (tenant, node) -> hold
        self._holds: dict[tuple[str, str], JobHold] = {}
        self._hold_locks: dict[tuple[str, str], threading.Lock] = {}
        self._holds_guard = threading.Lock()

    # -- SSH --------------------------------------------------------------------------------------

    def tenant(self, label: str | None = None) -> Tenant:
        if not self.tenants:
            raise LookupError("this cluster has no tenant account")
        if label is None:
            return self.tenants[0]
        for tenant in self.tenants:
            if tenant.label == label:
                return tenant
        raise LookupError(f"no tenant account labelled {label!r}")

    def ssh(self, endpoint: Endpoint, *, tenant: str | None = None) -> SshConnection:
        """The run's connection to ``endpoint`` as ``tenant`` (default: the first account)."""
        account = self.tenant(tenant)
        pool = self._pools.get(account.label)
        if pool is None:
            pool = self._pools[account.label] = self._pool_factory(credentials=account.credentials)
        if endpoint.scheduler_node and endpoint.jump is not None:
            # a node reached as a tenant's job: srun from the login node, no SSH to the node itself
            return SchedulerConnection(pool.connection(endpoint.jump), endpoint)  # type: ignore[return-value]
        if not (endpoint.job_node and endpoint.jump is not None):
            return pool.connection(endpoint)
        try:
            return pool.connection(endpoint)
        except AuthFailed as refused:
            # A node whose sshd admits a tenant only with a job there (pam_slurm_adopt): do what a
            # tenant does, hold a short job on it and connect again. No job placed: SchedulerRefused.
            self._job_hold(account.label, pool, endpoint, why=f" (refused without one: {refused})")
            return pool.connection(endpoint)

    def _job_hold(self, label: str, pool: Any, endpoint: Endpoint, *, why: str) -> None:
        """Hold a job of tenant ``label`` on ``endpoint``'s node until :meth:`close` (once per pair)."""
        assert endpoint.jump is not None
        with self._holds_guard:
            lock = self._hold_locks.setdefault((label, endpoint.job_node), threading.Lock())
        with lock:
            held = self._holds.get((label, endpoint.job_node))
            if held is not None and held.job_id:
                return
            wait_s = float(self.settings.get("ssh_job_hold.wait_s") or 30)
            hold = JobHold(pool.connection(endpoint.jump), endpoint.job_node, wait_s=wait_s)
            hold.start(why=why)
            self._holds[(label, endpoint.job_node)] = hold

    def close(self) -> None:
        for hold in list(self._holds.values()):  # before the login connections they use close
            hold.release()
        self._holds.clear()
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()

    # -- evidence ---------------------------------------------------------------------------------

    def secrets(self) -> list[str]:
        found = [self.api.token] if self.api and self.api.token else []
        for tenant in self.tenants:
            creds = tenant.credentials
            found += [s for s in (creds.password, creds.passphrase) if s]
        return found

    def redact(self, text: str) -> str:
        for secret in self.secrets():
            text = text.replace(secret, "***")
        return text

    def evidence(self, result: CommandResult, **extra: Any) -> dict[str, Any]:
        """Bounded, redacted evidence for one command: what ran, how it ended, what it said."""
        stdout, stderr = self.redact(result.stdout), self.redact(result.stderr)
        return {
            "cmd": self.redact(result.command),
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "duration_s": round(result.duration_s, 3),
            "stdout": stdout[:EVIDENCE_TEXT_BYTES],
            "stderr": stderr[:EVIDENCE_TEXT_BYTES],
            "stdout_sha256": hashlib.sha256(result.stdout.encode()).hexdigest(),
            "truncated": result.truncated
            or len(stdout) > EVIDENCE_TEXT_BYTES
            or len(stderr) > EVIDENCE_TEXT_BYTES,
            **extra,
        }


class Probe(ABC):
    """Base class of every probe. Subclasses set the class attributes and implement ``execute``."""

    id: ClassVar[str]
    version: ClassVar[int]
    area: ClassVar[Area]
    question: ClassVar[str]
    scope: ClassVar[Scope]
    requirements: ClassVar[frozenset[Requirement]] = frozenset({Requirement.SSH})
    disruptive: ClassVar[bool] = False
    timeout_s: ClassVar[int] = 60
    metric: ClassVar[Metric]
    thresholds: ClassVar[Thresholds] = Thresholds()

    # -- what the runner calls ------------------------------------------------------------------

    @classmethod
    def unmet_requirements(cls, ctx: ProbeContext) -> frozenset[Requirement]:
        return cls.requirements - ctx.capabilities

    @classmethod
    def skip(cls, ctx: ProbeContext) -> tuple[Outcome, str] | None:
        """Why this probe does not run on ``ctx``, as the outcome to record, or None when it runs.

        ``not_applicable`` only where the question does not apply to this cluster (no GPU, another
        scheduler); ``declined`` where the provider did not allow or provide what the probe needs
        (no disruptive opt-in, no provider API, no tenant accounts or SSH access): the engine
        scores a declined criterion at the worst anchor, so refusing a test never helps.
        """
        unmet = cls.unmet_requirements(ctx)
        inapplicable = unmet - PROVIDED_BY_PROVIDER
        if inapplicable:
            return Outcome.NOT_APPLICABLE, f"does not apply: requires {', '.join(sorted(inapplicable))}"
        if unmet:
            return Outcome.DECLINED, f"declined: the provider gives no {', '.join(sorted(unmet))}"
        if cls.disruptive and not ctx.disruptive_allowed:
            return Outcome.DECLINED, "declined: disruptive, and the provider has not opted in to fault tests"
        return None

    def targets(self, ctx: ProbeContext) -> list[Target]:
        """Default targets by scope. Override for something else (e.g. only GPU nodes)."""
        if self.scope is Scope.NODE:
            hosts = ([ctx.login] if ctx.login else []) + list(ctx.nodes)
            return [Target(kind=Scope.NODE, name=node_name(e), endpoint=e) for e in hosts]
        if self.scope is Scope.TENANT_PAIR:
            labels = [t.label for t in ctx.tenants]
            return [
                Target(kind=Scope.TENANT_PAIR, name=f"{a}->{b}", endpoint=ctx.login, tenants=(a, b))
                for a in labels
                for b in labels
                if a != b
            ]
        return [Target(kind=Scope.CLUSTER, name="cluster", endpoint=ctx.login)]

    @abstractmethod
    def execute(self, ctx: ProbeContext, target: Target) -> Sequence[FindingDraft]:
        """Measure one target; return its findings (at least one)."""

    # -- helpers for subclasses -----------------------------------------------------------------

    def finding(
        self,
        target: Target,
        outcome: Outcome,
        *,
        value: float | None = None,
        summary: str = "",
        evidence: Mapping[str, Any] | None = None,
        critical: bool = False,
        metric: Metric | None = None,
        threshold_ref: str = "",
    ) -> FindingDraft:
        m = metric or self.metric
        return FindingDraft(
            target=target.name,
            outcome=outcome,
            metric=m.name,
            value=value,
            unit=m.unit if value is not None else "",
            summary=summary[:500],
            evidence=dict(evidence or {}),
            critical=critical,
            threshold_ref=threshold_ref,
        )

    def judge(self, ctx: ProbeContext, value: float) -> tuple[Outcome, str]:
        """Outcome of a measured value against the threshold table, for this cluster's facts."""
        return self.thresholds.evaluate(value, self.metric.direction, ctx.facts)

    def timed(
        self,
        ctx: ProbeContext,
        target: Target,
        seconds: float,
        *,
        observed: bool,
        evidence: Mapping[str, Any],
        summary: str,
    ) -> list[FindingDraft]:
        """The finding of a bounded wait for an event: judged against the thresholds when the
        event was seen after ``seconds``, a timeout (censored at the deadline, the outcome
        table's worst value) when the wait ran out."""
        if not observed:
            return [self.finding(target, Outcome.TIMEOUT, value=seconds, evidence=evidence, summary=summary)]
        outcome, ref = self.judge(ctx, seconds)
        return [self.finding(target, outcome, value=seconds, evidence=evidence, threshold_ref=ref, summary=summary)]

    @classmethod
    def describe(cls) -> dict[str, Any]:
        """The probe's declaration as plain data (admin, API, docs)."""
        return {
            "id": cls.id,
            "version": cls.version,
            "area": str(cls.area),
            "question": cls.question,
            "scope": str(cls.scope),
            "requirements": sorted(str(r) for r in cls.requirements),
            "disruptive": cls.disruptive,
            "timeout_s": cls.timeout_s,
            "metric": {
                "name": cls.metric.name,
                "unit": cls.metric.unit,
                "direction": str(cls.metric.direction),
            },
            "thresholds": [
                {"match": dict(t.match), "pass_at": t.pass_at, "warn_at": t.warn_at, "reference": t.reference}
                for t in cls.thresholds.rows
            ],
        }


def node_name(endpoint: Endpoint) -> str:
    """A target name for a host: ``host`` or ``host:port`` when the port is not 22."""
    return endpoint.host if endpoint.port == 22 else f"{endpoint.host}:{endpoint.port}"
