"""Probe runner services: every write the probes app makes goes through a function here.

The run lifecycle (see ``ProbeRun``):

1. ``probe_runs_start`` creates one run per probe for a cluster and scheduled slot. The run's
   idempotency key hashes (cycle, cluster, probe, target, slot), so firing the same slot twice
   creates nothing new. The Celery task is sent with ``transaction.on_commit``.
2. ``probe_run_execute`` (called by the thin task) first CLAIMS the run with one conditional
   UPDATE: pending -> running, or running-with-a-stale-heartbeat -> running (the previous worker
   died). Zero rows updated means someone else has it or it is finished: nothing is done, nothing
   written. A duplicate delivery therefore never runs a probe twice. A delivery that finds the
   run held by a claimant that is dead (or on another host) retries once the heartbeat is stale,
   so a killed pool process's run finishes without the sweeper (``_not_claimed``).
3. Targets are measured with bounded fan-out (the cluster's politeness limit). Each target's
   findings are written in their own transaction, through ``finding_record`` (the one hand-off
   to ratings), so a run redelivered after a crash resumes with the targets not yet measured and
   ends with exactly one finding per target and metric.
4. Transient transport errors (unreachable, timeouts, resets) send the run back to pending and
   the task retries with exponential backoff, up to ``OPGRADE_PROBE_MAX_ATTEMPTS``; then the
   unmeasured targets get ``error`` findings. Permanent errors (changed host key, refused
   credentials, a password not typed for the login host it would go to) end the run as ``error``
   at once, flagged for an analyst, with no retry.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import redis
from celery import current_app
from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from config.crypto import secret_decrypt, secret_encrypt
from config.errors import BadInput
from probes import secret_binding
from probes.catalog import probe_get
from probes.catalog.base import (
    FindingDraft,
    Outcome,
    Probe,
    ProbeContext,
    ProviderApi,
    Requirement,
    Scope,
    Target,
    Tenant,
)
from probes.fanout import Outcome as Outcome_
from probes.fanout import fan_out
from probes.inventory import (
    SINFO_INVENTORY,
    InventoryNode,
    departed_names,
    inventory_diff,
    inventory_endpoints,
    last_seen_nodes,
    node_departed_mid_run,
    parse_provider_nodes,
    parse_sinfo_inventory,
    scontrol_node,
)
from probes.models import (
    ClusterAccess,
    Finding,
    HostCAPin,
    HostKeyPin,
    ProbeRun,
    ProbeSchedule,
    TenantAccount,
)
from probes.parsers import ParseError
from probes.politeness import ProviderSlots
from probes.transport import (
    Credentials,
    Endpoint,
    HostKey,
    HostKeyUnverified,
    NodeDeparted,
    SshPool,
    TransportError,
    check_private_key,
    host_ca_parse,
    host_key_fetch,
)
from providers.models import Cluster, Cycle

logger = logging.getLogger(__name__)

#: The Celery task names the services send (probes.tasks registers them under these names).
PROBE_RUN_EXECUTE_TASK = "probes.probe_run_execute"
PROBE_SCHEDULE_FIRE_TASK = "probes.probe_schedule_fire"
PROBE_RUN_SWEEP_TASK = "probes.probe_run_sweep"

PoolFactory = Callable[..., Any]


class ProbeRunError(BadInput):
    """Bad input to a probe-runner service; nothing was written."""


#: A run that finished with its measurements but saw our own Redis or database falter says so here
#: (``error_code`` of a done run); findings carry ``coordination_fault`` in their evidence.
COORDINATION_FAULT = "coordination_fault"
#: Retries a run gets, beyond the provider's attempts, when only our coordination failed it.
COORDINATION_EXTRA_ATTEMPTS = 5
#: The longest pause between two attempts of a run (the backoff doubles up to it).
RETRY_DELAY_MAX_S = 300


# ------------------------------------------------------------------------------------------------
# Secrets and access
# ------------------------------------------------------------------------------------------------


def tenant_account_set_secrets(
    *,
    account: TenantAccount,
    private_key: str | None = None,
    passphrase: str | None = None,
    password: str | None = None,
) -> TenantAccount:
    """Store a tenant's key (checked readable first), passphrase or password, encrypted."""
    if private_key:
        try:
            check_private_key(private_key, passphrase or None)
        except TransportError as exc:
            raise ProbeRunError(str(exc)) from exc
        account.private_key_encrypted = secret_encrypt(private_key)
        account.passphrase_encrypted = secret_encrypt(passphrase) if passphrase else ""
    if password:
        account.password_encrypted = secret_encrypt(password)
        # typed now: bound to the web endpoints' origins and the login node's SSH origin as they are
        # now, and to no other (issue 24)
        account.password_origins = secret_binding.password_origins(account.cluster_id)
    if not account.private_key_encrypted and not account.password_encrypted:
        raise ProbeRunError("a tenant account needs a private key or a password")
    account.save()
    return account


def cluster_access_set_api_token(*, access: ClusterAccess, token: str) -> ClusterAccess:
    access.api_token_encrypted = secret_encrypt(token) if token else ""
    # typed now: bound to the API URL's origin as it is now, and to no other (issue 24)
    access.api_token_origin = secret_binding.api_token_origin(access) if token else ""
    access.save(update_fields=["api_token_encrypted", "api_token_origin"])
    return access


def _pins_by_host(cluster: Cluster) -> dict[tuple[str, int], tuple[HostKey, ...]]:
    pins: dict[tuple[str, int], list[HostKey]] = {}
    for pin in HostKeyPin.objects.filter(cluster=cluster):
        pins.setdefault((pin.host, pin.port), []).append(HostKey(pin.key_type, pin.fingerprint))
    return {k: tuple(v) for k, v in pins.items()}


def _host_cas(access: ClusterAccess | None) -> tuple[str, ...]:
    """The host CAs pinned for this cluster access (OpenSSH public-key lines)."""
    if access is None or access.pk is None:
        return ()
    return tuple(HostCAPin.objects.filter(access=access).order_by("pk").values_list("public_key", flat=True))


def compute_node_parse(line: str) -> tuple[str, int]:
    host, _, port = line.strip().rpartition(":") if line.count(":") == 1 else (line.strip(), "", "")
    if not port:
        return line.strip(), 22
    if not port.isdigit():
        raise ProbeRunError(f"bad compute node line {line!r}: expected host or host:port")
    return host, int(port)


def _listed_nodes(access: ClusterAccess) -> list[tuple[str, int]]:
    return [compute_node_parse(line) for line in access.compute_nodes.splitlines() if line.strip()]


def _reads_inventory(access: ClusterAccess | None, cluster: Cluster) -> bool:
    """Whether runs read the nodes at run time (scheduler on a Slurm cluster, or the provider API)."""
    if access is None or access.inventory_source == ClusterAccess.InventorySource.LISTED:
        return False
    if access.inventory_source == ClusterAccess.InventorySource.PROVIDER_API:
        return bool(access.api_base_url and access.api_token_encrypted)
    return cluster.orchestrator == Cluster.Orchestrator.SLURM


def cluster_endpoints(*, cluster: Cluster) -> tuple[Endpoint | None, list[Endpoint]]:
    """The login endpoint and the compute nodes behind it: the listed ones, each with its pins, or,
    where runs read the inventory, the nodes as last seen (a run replaces them with today's; before
    the first read, the listed ones are the hint)."""
    access = ClusterAccess.objects.filter(cluster=cluster).first()
    if access is None:
        return None, []
    pins = _pins_by_host(cluster)
    login = Endpoint(
        host=access.login_host,
        port=access.login_port,
        host_keys=pins.get((access.login_host, access.login_port), ()),
    )
    cas = _host_cas(access)
    if _reads_inventory(access, cluster) and "nodes" in (access.inventory or {}):
        nodes = inventory_endpoints(
            last_seen_nodes(access.inventory), login=login, pins=pins, hints=dict(_listed_nodes(access)),
            through_scheduler=access.node_access == ClusterAccess.NodeAccess.SCHEDULER, host_cas=cas,
        )  # fmt: skip
        return login, list(nodes)
    nodes = []
    for host, port in _listed_nodes(access):
        # a listed node's certificate must name it as typed here (the list is its inventory)
        nodes.append(
            Endpoint(host=host, port=port, host_keys=pins.get((host, port), ()), jump=login,
                     host_cas=cas, principal=host if cas else "")
        )  # fmt: skip
    return login, nodes


def probe_context_build(*, cluster: Cluster, pool_factory: PoolFactory = SshPool) -> ProbeContext:
    """Everything a probe may use about ``cluster``, with secrets decrypted in memory only."""
    access = ClusterAccess.objects.filter(cluster=cluster).first()
    login, nodes = cluster_endpoints(cluster=cluster)
    tenants = [
        Tenant(
            label=a.label,
            credentials=Credentials(
                username=a.username,
                private_key=secret_decrypt(a.private_key_encrypted) if a.private_key_encrypted else None,
                passphrase=secret_decrypt(a.passphrase_encrypted) if a.passphrase_encrypted else None,
                password=secret_decrypt(a.password_encrypted) if a.password_encrypted else None,
                # offered over SSH only to the login node it was typed for (probes.transport.connect)
                password_origins=frozenset(o for o in a.password_origins or () if o.startswith("ssh://")),
            ),
            http_origins=frozenset(o for o in a.password_origins or () if not o.startswith("ssh://")),
        )
        for a in TenantAccount.objects.filter(cluster=cluster).order_by("label")
    ]
    api = None
    if access is not None and access.api_base_url and access.api_token_encrypted:
        api = ProviderApi(base_url=access.api_base_url, token=secret_decrypt(access.api_token_encrypted),
                          origin=access.api_token_origin)
    capabilities = set()
    if login is not None and tenants:
        capabilities.add(Requirement.SSH)
    if cluster.orchestrator == Cluster.Orchestrator.SLURM:
        capabilities.add(Requirement.SLURM)
    if cluster.gpu_count > 0:
        capabilities.add(Requirement.GPU)
    if api is not None:
        capabilities.add(Requirement.PROVIDER_API)
    if len(tenants) >= 2:
        capabilities.add(Requirement.TWO_TENANTS)
    return ProbeContext(
        provider=cluster.provider.name,
        cluster=cluster.name,
        login=login,
        nodes=nodes,
        tenants=tenants,
        facts={
            # facts the cluster declares in its settings (a testbed's "scale": "testbed"), then the
            # cluster record's own over them
            **{str(k): str(v) for k, v in dict((access.settings if access else {}).get("facts") or {}).items()},
            "gpu_model": cluster.gpu_model,
            "gpu_count": str(cluster.gpu_count),
            "orchestrator": cluster.orchestrator,
        },
        capabilities=capabilities,
        api=api,
        settings=access.settings if access else {},
        disruptive_allowed=bool(access and access.disruptive_opt_in),
        max_concurrency=access.max_concurrency if access else 1,
        pool_factory=pool_factory,
    )


# ------------------------------------------------------------------------------------------------
# The inventory at run time
# ------------------------------------------------------------------------------------------------


def cluster_inventory_read(*, ctx: ProbeContext, access: ClusterAccess) -> tuple[InventoryNode, ...]:
    """The cluster's compute nodes now: Slurm's ``sinfo`` as the tenant on the pinned login node,
    or the provider API's ``GET /v1/nodes``. Raises TransportError (the login node) or
    ProbeRunError (an unreadable answer)."""
    if access.inventory_source == ClusterAccess.InventorySource.PROVIDER_API:
        from probes.catalog._support import CredentialNotBound, http  # the catalog's one bounded HTTP client

        if ctx.api is None:
            raise ProbeRunError("inventory from the provider API: no API URL and token stored")
        try:
            answer = http("GET", ctx.api.base_url.rstrip("/") + "/v1/nodes", auth=ctx.api.credential, timeout_s=15)
        except CredentialNotBound as exc:
            raise ProbeRunError(f"inventory: {exc.summary}"[:300]) from exc
        if not answer.ok:
            raise ProbeRunError(f"inventory: the provider API answered {answer.status} {answer.error}"[:300])
        try:
            return parse_provider_nodes(json.loads(answer.body or "{}"))
        except (ValueError, ParseError) as exc:
            raise ProbeRunError(f"inventory: unreadable provider API answer: {exc}") from exc
    if ctx.login is None:
        raise ProbeRunError("inventory: the cluster has no login node")
    result = ctx.ssh(ctx.login).run(SINFO_INVENTORY, timeout_s=30)
    if not result.ok:
        raise ProbeRunError(f"inventory: sinfo exited {result.exit_code}: {result.stderr.strip()[:200]}")
    try:
        return parse_sinfo_inventory(result.stdout)
    except ParseError as exc:
        raise ProbeRunError(f"inventory: unreadable sinfo output: {exc}") from exc


@transaction.atomic
def cluster_inventory_record(
    *, cluster: Cluster, nodes: Sequence[InventoryNode], source: str, said: dict[str, str] | None = None,
    at: datetime | None = None,
) -> dict[str, Any]:
    """Store the inventory as seen now, with the nodes that departed and joined since the last read.

    Row-locked, so that the runs of one slot (several probes reading at once) record each change
    once: the second reader compares with what the first stored.
    """
    access = ClusterAccess.objects.select_for_update().get(cluster=cluster)
    stamp = (at or timezone.now()).astimezone(UTC).isoformat(timespec="seconds")
    state = inventory_diff(access.inventory or {}, nodes, source=source, at=stamp, said=said)
    for change in ("departed", "joined"):
        for entry in [c for c in state[change] if c.get("at") == stamp]:
            logger.info("cluster %s: node %s %s (%s)", cluster.pk, entry["name"], change, entry)
    access.inventory = state
    access.save(update_fields=["inventory"])
    return state


@transaction.atomic
def cluster_inventory_node_departed(*, cluster: Cluster, name: str, said: str) -> None:
    """A node the scheduler stopped knowing between the inventory read and its probe: departed."""
    access = ClusterAccess.objects.select_for_update().get(cluster=cluster)
    if not any(n.get("name") == name for n in (access.inventory or {}).get("nodes") or []):
        return  # another run recorded it already
    stamp = timezone.now().astimezone(UTC).isoformat(timespec="seconds")
    access.inventory = node_departed_mid_run(access.inventory or {}, name=name, at=stamp, said=said)
    access.save(update_fields=["inventory"])


def cluster_inventory_refresh(*, ctx: ProbeContext, cluster: Cluster) -> bool:
    """Read the cluster's current nodes, record what changed, and make them ``ctx.nodes``.

    Returns False (and leaves ``ctx.nodes`` alone) where the cluster keeps a typed list. A
    departed node is asked about once (``scontrol show node``) so the record says what the
    scheduler said, and is no target; a joined node is simply a target.
    """
    access = ClusterAccess.objects.filter(cluster=cluster).first()
    if not _reads_inventory(access, cluster) or ctx.login is None:
        return False
    assert access is not None
    nodes = cluster_inventory_read(ctx=ctx, access=access)
    said: dict[str, str] = {}
    if access.inventory_source == ClusterAccess.InventorySource.SCHEDULER:
        for name in departed_names(access.inventory or {}, nodes)[:8]:
            try:
                answer = ctx.ssh(ctx.login).run(scontrol_node(name), timeout_s=15)
                said[name] = ctx.redact((answer.stdout or answer.stderr).strip()) or f"exit {answer.exit_code}"
            except TransportError as exc:
                said[name] = f"(not asked: {exc})"
    else:
        said = dict.fromkeys(departed_names(access.inventory or {}, nodes), "not listed by the provider API")
    cluster_inventory_record(cluster=cluster, nodes=nodes, source=access.inventory_source, said=said)
    ctx.nodes = inventory_endpoints(
        nodes, login=ctx.login, pins=_pins_by_host(cluster), hints=dict(_listed_nodes(access)),
        through_scheduler=access.node_access == ClusterAccess.NodeAccess.SCHEDULER,
        host_cas=_host_cas(access),
    )  # fmt: skip
    return True


def _unverified(target: Target) -> bool:
    """A node reached by direct SSH from a run-time inventory with no pinned key and no pinned host
    CA to check a certificate against: never trusted, not even connected to."""
    e = target.endpoint
    return bool(
        e is not None and e.jump is not None and not e.scheduler_node and not e.host_keys and not e.host_cas
    )


def _unverified_draft(probe: Probe, target: Target, error: HostKeyUnverified | None = None) -> FindingDraft:
    """The finding of a node whose key could not be verified: an error, never a pass."""
    if error is None:
        summary = (
            f"unverified: {target.name} has no pinned host key and the cluster no pinned host CA, so it was "
            "not connected to (pin its key or the provider's host CA, or reach nodes through the scheduler)"
        )
        reason = "not_pinned"
    else:
        summary = f"unverified: {error} (no credential was sent; pin the provider's host CA or the node's key)"
        reason = error.reason
    return FindingDraft(
        target=target.name,
        outcome=Outcome.ERROR,
        metric=probe.metric.name,
        summary=summary[:500],
        evidence={"error_code": "host_key_unverified", "unverified": True, "transient": False, "reason": reason},
    )


@dataclass(frozen=True)
class FetchedHostKey:
    host: str
    port: int
    key_type: str = ""
    fingerprint: str = ""
    pinned: bool = False
    error: str = ""


def host_keys_fetch(*, cluster: Cluster, pool_factory: PoolFactory = SshPool) -> list[FetchedHostKey]:
    """Read (never store) the host keys the cluster's hosts offer, for an analyst to inspect.

    The login node is read directly. Compute nodes are read through the login node, which must be
    pinned already (we authenticate to it to open the tunnel); otherwise they report that.
    """
    login, nodes = cluster_endpoints(cluster=cluster)
    if login is None:
        raise ProbeRunError("the cluster has no access endpoints yet")
    access = ClusterAccess.objects.get(cluster=cluster)
    seen = {(n.host, n.port) for n in nodes}  # the inventory as last seen, and the listed nodes too
    nodes += [Endpoint(host=h, port=p, jump=login) for h, p in _listed_nodes(access) if (h, p) not in seen]
    nodes = [Endpoint(host=n.host, port=n.port, jump=login) for n in nodes]  # keys are read over SSH
    pinned = {(p.host, p.port, p.fingerprint) for p in HostKeyPin.objects.filter(cluster=cluster)}
    out: list[FetchedHostKey] = []

    def entry(host: str, port: int, key: HostKey) -> FetchedHostKey:
        return FetchedHostKey(
            host, port, key.key_type, key.fingerprint, (host, port, key.fingerprint) in pinned
        )

    try:
        out.append(entry(login.host, login.port, host_key_fetch(host=login.host, port=login.port)))
    except TransportError as exc:
        return [FetchedHostKey(login.host, login.port, error=str(exc))]
    if not nodes:
        return out
    ctx = probe_context_build(cluster=cluster, pool_factory=pool_factory)
    try:
        via = ctx.ssh(login) if login.host_keys else None
        for node in nodes:
            if via is None:
                out.append(FetchedHostKey(node.host, node.port, error="pin the login node first"))
                continue
            try:
                out.append(
                    entry(node.host, node.port, host_key_fetch(host=node.host, port=node.port, via=via))
                )
            except TransportError as exc:
                out.append(FetchedHostKey(node.host, node.port, error=str(exc)))
    except (TransportError, LookupError) as exc:
        out += [FetchedHostKey(n.host, n.port, error=f"login node: {exc}") for n in nodes]
    finally:
        ctx.close()
    return out


def host_ca_preview(*, public_key: str) -> HostKey:
    """The type and fingerprint of a host CA an analyst pasted, to show before pinning.
    Raises ProbeRunError for anything but one plain OpenSSH public key."""
    try:
        return host_ca_parse(public_key)
    except ValueError as exc:
        raise ProbeRunError(f"not a host CA public key: {exc}") from exc


def host_ca_pin(*, access: ClusterAccess, public_key: str, fingerprint: str, user: Any = None) -> HostCAPin:
    """Pin the provider's host CA for this cluster access, as the analyst confirmed it.

    ``fingerprint`` is the one the analyst was shown: if the key does not have it (the form was
    edited between preview and confirmation) nothing is stored.
    """
    key = host_ca_preview(public_key=public_key)
    if key.fingerprint != fingerprint:
        raise ProbeRunError("the CA key is not the one whose fingerprint was confirmed; nothing pinned")
    kind, blob = public_key.split()[:2]
    pin, _ = HostCAPin.objects.get_or_create(
        access=access,
        fingerprint=key.fingerprint,
        defaults={
            "key_type": key.key_type,
            "public_key": f"{kind} {blob}",
            "recorded_by": user if user and user.is_authenticated else None,
        },
    )
    logger.info("cluster access %s: host CA %s pinned", access.pk, key.fingerprint)
    return pin


def host_key_pin(
    *, cluster: Cluster, host: str, port: int, key_type: str, fingerprint: str, user: Any = None
) -> HostKeyPin:
    """Record the fingerprint an analyst was shown. Replaces an older pin of the same key type."""
    HostKey(key_type=key_type, fingerprint=fingerprint)  # validates the form
    pin, _ = HostKeyPin.objects.update_or_create(
        cluster=cluster,
        host=host,
        port=port,
        key_type=key_type,
        defaults={
            "fingerprint": fingerprint,
            "recorded_by": user if user and user.is_authenticated else None,
        },
    )
    return pin


# ------------------------------------------------------------------------------------------------
# Creating and sending runs
# ------------------------------------------------------------------------------------------------


def probe_run_idempotency_key(
    *, cycle_id: int | None, cluster_id: int, probe_id: str, target: str, slot: datetime
) -> str:
    raw = f"{cycle_id or '-'}|{cluster_id}|{probe_id}|{target}|{slot.astimezone(UTC).isoformat()}"
    return hashlib.sha256(raw.encode()).hexdigest()


def _time_limits(probe: type[Probe], hosts: int, concurrency: int) -> tuple[int, int]:
    """Soft and hard Celery time limits, above the longest the probe may legitimately take."""
    waves = max(1, math.ceil(hosts / max(1, concurrency)))
    soft = probe.timeout_s * waves * 2 + 60
    return soft, soft + 30


class QueueUnavailable(Exception):
    """The task queue (the Celery broker) does not answer: no run was started, nothing written."""

    message = "the queue is unavailable, nothing was started"

    def __init__(self, detail: str = "") -> None:
        super().__init__(self.message + (f" ({detail})" if detail else ""))


def broker_check(*, timeout_s: float = 3.0) -> None:
    """Raise QueueUnavailable unless the broker answers now (checked before any run is written).

    Starting runs is all or nothing: the check comes first, the rows are written in one
    transaction, and the tasks are sent once it commits. A broker that fails between the check and
    the send leaves committed runs pending with no ``sent_at``: the sweeper sends them.
    """
    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0.2, timeout=timeout_s)
    except Exception as exc:  # kombu OperationalError, socket errors, timeouts: the broker is not there
        logger.warning("broker unavailable: %s: %s", type(exc).__name__, exc)
        raise QueueUnavailable() from exc


def _send_after_commit(run_id: int, soft: int, hard: int) -> None:
    """Send a committed run's task. A broker that fails now must not turn the request into an error
    after its runs were committed: the run is marked never sent, and the sweeper sends it."""
    try:
        current_app.send_task(
            PROBE_RUN_EXECUTE_TASK, args=(run_id,), queue="probes", soft_time_limit=soft, time_limit=hard
        )
    except Exception as exc:
        logger.warning("probe run %s: not sent (%s: %s); the sweeper sends it", run_id, type(exc).__name__, exc)
        try:
            ProbeRun.objects.filter(pk=run_id, status=ProbeRun.Status.PENDING).update(sent_at=None)
        except (OperationalError, InterfaceError):
            logger.warning("probe run %s: could not mark it unsent; the sweeper re-sends it later", run_id)


def probe_run_send(*, run: ProbeRun) -> None:
    """Send the run's task once the current transaction commits (never before the row exists).

    The task is sent by its registered name (``probes.tasks`` imports this module, never the
    other way round), to the ``probes`` queue with time limits above the probe's own timeout.
    A send that fails after the commit leaves the run pending and unsent for the sweeper.
    """
    probe = probe_get(run.probe_id)
    access = ClusterAccess.objects.filter(cluster_id=run.cluster_id).first()
    listed = len([x for x in (access.compute_nodes.splitlines() if access else []) if x.strip()])
    hosts = 1 + max(listed, len(last_seen_nodes(access.inventory if access else {})))
    soft, hard = _time_limits(probe, hosts, access.max_concurrency if access else 1)
    ProbeRun.objects.filter(pk=run.pk).update(sent_at=timezone.now())
    run_id = run.pk
    transaction.on_commit(lambda: _send_after_commit(run_id, soft, hard))


@transaction.atomic
def probe_runs_start(
    *,
    cluster: Cluster,
    probe_ids: Sequence[str],
    slot: datetime | None = None,
    cycle: Cycle | None = None,
    schedule: ProbeSchedule | None = None,
    send: bool = True,
) -> list[ProbeRun]:
    """Create (or find) one run per probe for this cluster and slot, and send the new ones.

    ``send=False`` leaves them pending for the caller to execute in-process (``run_probes --inline``);
    the sweeper would still pick them up if that caller died. With ``send=True`` the broker is
    checked first: QueueUnavailable, and nothing is written (the caller's transaction rolls back).
    """
    if not probe_ids:
        raise ProbeRunError("no probes given")
    probes = [probe_get(p) for p in dict.fromkeys(probe_ids)]  # UnknownProbe before any write
    if send:
        broker_check()
    slot = slot or timezone.now()
    runs = []
    for probe in probes:
        key = probe_run_idempotency_key(
            cycle_id=cycle.pk if cycle else None,
            cluster_id=cluster.pk,
            probe_id=probe.id,
            target="cluster",
            slot=slot,
        )
        run, created = ProbeRun.objects.get_or_create(
            idempotency_key=key,
            defaults={
                "cluster": cluster,
                "cycle": cycle,
                "schedule": schedule,
                "probe_id": probe.id,
                "probe_version": str(probe.version),
                "target": "cluster",
                "scheduled_for": slot,
            },
        )
        if created and send:
            probe_run_send(run=run)
        runs.append(run)
    return runs


def probe_schedule_fire(*, schedule_id: int, now: datetime | None = None) -> list[ProbeRun]:
    """Beat fired a schedule: start its probes for the current minute's slot (idempotent)."""
    schedule = (
        ProbeSchedule.objects.select_related("cluster", "cycle").filter(pk=schedule_id, enabled=True).first()
    )
    if schedule is None:
        return []
    slot = (now or timezone.now()).replace(second=0, microsecond=0)
    return probe_runs_start(
        cluster=schedule.cluster,
        probe_ids=schedule.probes,
        slot=slot,
        cycle=schedule.cycle,
        schedule=schedule,
    )


def probe_schedule_run_now(*, schedule: ProbeSchedule) -> list[ProbeRun]:
    return probe_runs_start(
        cluster=schedule.cluster, probe_ids=schedule.probes, cycle=schedule.cycle, schedule=schedule
    )


@transaction.atomic
def probe_schedule_sync(*, schedule: ProbeSchedule) -> ProbeSchedule:
    """Create or update the django-celery-beat PeriodicTask that fires ``schedule``."""
    from django_celery_beat.models import PeriodicTask

    for probe_id in schedule.probes:
        probe_get(probe_id)
    task = schedule.periodic_task or PeriodicTask(name=f"probe schedule {schedule.pk}: {schedule.name}"[:200])
    task.name = f"probe schedule {schedule.pk}: {schedule.name}"[:200]
    task.task = PROBE_SCHEDULE_FIRE_TASK
    task.args = f"[{schedule.pk}]"
    task.queue = "default"
    task.crontab = schedule.crontab
    task.interval = schedule.interval
    task.enabled = schedule.enabled
    task.save()
    if schedule.periodic_task_id != task.pk:
        schedule.periodic_task = task
        schedule.save(update_fields=["periodic_task"])
    return schedule


def probe_schedule_unsync(*, schedule: ProbeSchedule) -> None:
    """A schedule was deleted: delete the PeriodicTask that fired it, so beat stops firing it."""
    from django_celery_beat.models import PeriodicTask

    if schedule.periodic_task_id is not None:
        PeriodicTask.objects.filter(pk=schedule.periodic_task_id).delete()


SWEEPER_NAME = "probes: re-send stuck probe runs"


def probe_sweeper_schedule_ensure() -> None:
    """The stuck-run sweeper fires every minute: create or repair its PeriodicTask.

    Saved through the model (not a migration's historical model), so django-celery-beat's
    change marker moves and a running beat picks the schedule up without a restart. Runs
    after every migrate (ProbesConfig.ready); an operator who disabled it keeps it disabled.
    """
    from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks

    every_minute, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.MINUTES)
    task = PeriodicTask.objects.filter(name=SWEEPER_NAME).first() or PeriodicTask(name=SWEEPER_NAME)
    if task.pk and task.task == PROBE_RUN_SWEEP_TASK and task.interval_id == every_minute.pk and task.queue:
        # Already right (perhaps written by migration 0003, which moves no change marker):
        # leave its enabled flag and counters alone, and tell a running beat to reload.
        PeriodicTasks.update_changed()
        return
    task.task = PROBE_RUN_SWEEP_TASK
    task.interval = every_minute
    task.crontab = None
    task.queue = "default"
    task.save()


# ------------------------------------------------------------------------------------------------
# Claiming and executing
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecuteResult:
    """What a delivery of the task did. ``retry_in``: send the task again after this many seconds."""

    status: str
    retry_in: float | None = None
    findings: int = 0


def probe_worker_identity() -> str:
    """``host:pid:start`` of the calling process: who holds a claim, and how to tell it is alive.

    ``start`` is the process's start time (clock ticks after boot, from /proc; 0 where there is no
    /proc), so that a pid the kernel has since given to another process is not taken for the
    claimant.
    """
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_process_start(pid) or 0}"


def _process_start(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])  # field 22, starttime


def _claimant_alive(claimed_by: str) -> bool:
    """True only when the claim was made by another process on this host that still runs.

    A claim made on another host cannot be checked from here (nor one made by this very process:
    with the prefork pool its earlier execution is over), so it counts as possibly dead.
    """
    host, _, rest = claimed_by.rsplit("/", 1)[0].partition(":")
    pid_text, _, start_text = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    pid = int(pid_text)
    if start_text.isdigit() and int(start_text):
        return _process_start(pid) == int(start_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _not_claimed(run_id: int) -> ExecuteResult:
    """A delivery that could not claim its run: drop it, or come back once the claim is stale.

    Finished, pending again (its holder sent its own retry) or held by a live process on this host:
    the holder ends the run, so this delivery is dropped. Held by a process that is dead, or that
    this host cannot see, with a heartbeat still fresh: that is the broker redelivering a killed
    pool process's message at once, and dropping it would leave the run ``running`` for good
    wherever no beat runs the sweeper. So it retries just after the heartbeat goes stale; the
    claim then takes the run over (and resumes its unmeasured targets) or finds it finished.
    """
    run = ProbeRun.objects.filter(pk=run_id).only("status", "claimed_by", "heartbeat_at").first()
    if run is None or run.status != ProbeRun.Status.RUNNING or _claimant_alive(run.claimed_by):
        return ExecuteResult(status="not_claimed")
    now = timezone.now()
    stale_at = (run.heartbeat_at or now) + timedelta(seconds=settings.OPGRADE_PROBE_STALE_S)
    return ExecuteResult(status="held", retry_in=round(max(1.0, (stale_at - now).total_seconds() + 1), 1))


def probe_run_claim(*, run_id: int, worker: str) -> ProbeRun | None:
    """Atomically take a run: pending, or running under a dead worker (stale heartbeat).

    One UPDATE with the condition in its WHERE clause: of two concurrent deliveries exactly one
    gets a row back. Returns None when the run is finished or held by a live worker.
    """
    now = timezone.now()
    token = f"{worker}/{uuid.uuid4().hex[:12]}"[-200:]  # unique per claim, so only its holder can finish it
    stale = now - timedelta(seconds=settings.OPGRADE_PROBE_STALE_S)
    claimable = Q(status=ProbeRun.Status.PENDING) | Q(status=ProbeRun.Status.RUNNING, heartbeat_at__lt=stale)
    updated = (
        ProbeRun.objects.filter(pk=run_id)
        .filter(claimable)
        .update(
            status=ProbeRun.Status.RUNNING,
            attempt=F("attempt") + 1,
            heartbeat_at=now,
            claimed_by=token,
        )
    )
    if not updated:
        return None
    run = ProbeRun.objects.select_related("cluster__provider").get(pk=run_id)
    if run.started_at is None:
        ProbeRun.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=now)
        run.started_at = now
    return run


class _Heartbeat:
    """Refreshes the run's heartbeat from a side thread while the probe works."""

    def __init__(self, run_id: int, worker: str) -> None:
        self.run_id, self.worker = run_id, worker
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{run_id}", daemon=True)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(settings.OPGRADE_PROBE_HEARTBEAT_S):
                try:
                    ProbeRun.objects.filter(
                        pk=self.run_id, status=ProbeRun.Status.RUNNING, claimed_by=self.worker
                    ).update(heartbeat_at=timezone.now())
                except (OperationalError, InterfaceError) as exc:  # the database is away: beat on
                    logger.warning("probe run %s: heartbeat not written (%s)", self.run_id, exc)
                    _connection_drop()
        finally:
            connection.close()

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _connection_drop() -> None:
    """Close this thread's broken database connection, so the next query opens a new one."""
    try:
        connection.close()
    except Exception:  # a connection that died may fail to close; it is gone either way
        logger.debug("closing a broken database connection failed", exc_info=True)


def db_retry[R](fn: Callable[[], R], *, what: str, notes: list[str] | None = None) -> R:
    """Run ``fn`` (a short write of our own), retrying while the database is unavailable.

    PostgreSQL restarting must not cost a measurement already made: the write is retried with
    bounded exponential backoff for up to ``OPGRADE_COORDINATION_RETRY_S`` seconds, then the
    error is raised (the run is then left for the claim and the sweeper to resume). ``fn`` must be
    idempotent (our writes are: conditional updates and ``finding_record``). Inside a
    transaction nothing is retried: the outermost caller retries the whole block.
    """
    deadline = time.monotonic() + float(settings.OPGRADE_COORDINATION_RETRY_S)
    pause = 0.5
    while True:
        try:
            return fn()
        except (OperationalError, InterfaceError) as exc:
            if connection.in_atomic_block or time.monotonic() >= deadline:
                raise
            logger.warning("%s: database unavailable (%s); retrying in %.1fs", what, exc, pause)
            if notes is not None and "database unavailable" not in notes:
                notes.append("database unavailable")
            _connection_drop()
            time.sleep(pause)
            pause = min(pause * 2, 5.0)


def finding_record(
    *, run: ProbeRun, draft: FindingDraft, started_at: datetime, finished_at: datetime
) -> Finding | None:
    """Store one finding: the single hand-off of probe evidence to ratings.

    Ratings reads them through ``probes.selectors.findings_for_cycle`` and binds them to criteria
    through the rubric's probe bindings. A second write for the same
    run, target and metric (a duplicate delivery that slipped past the claim) is refused by the
    unique constraint and returns None: nothing is written twice.
    """
    try:
        with transaction.atomic():
            finding = Finding.objects.create(
                run=run,
                probe_id=run.probe_id,
                probe_version=run.probe_version,
                target=draft.target[:200],
                metric=draft.metric,
                outcome=str(draft.outcome),
                value=draft.value,
                unit=draft.unit,
                critical=draft.critical,
                summary=draft.summary[:500],
                evidence=dict(draft.evidence),
                threshold_ref=draft.threshold_ref[:200],
                started_at=started_at,
                finished_at=finished_at,
                attempt=run.attempt,
            )
    except IntegrityError:
        if not Finding.objects.filter(run=run, target=draft.target[:200], metric=draft.metric).exists():
            raise
        logger.warning(
            "probe run %s: finding for %s/%s exists; not written twice", run.pk, draft.target, draft.metric
        )
        return None
    return finding


@transaction.atomic
def probe_run_record(
    *, cluster: Cluster, cycle: Cycle | None, probe_id: str, probe_version: str, slot: datetime,
    idempotency_key: str, drafts: Iterable[FindingDraft],
) -> ProbeRun:
    """Store a finished run whose findings were produced elsewhere (the seeded sample cycle).

    The run is stored done, and each finding goes through ``finding_record``, the one writer
    of findings, so sample evidence is stored exactly as measured evidence is.
    """
    run = ProbeRun.objects.create(
        cycle=cycle, cluster=cluster, probe_id=probe_id, probe_version=probe_version, scheduled_for=slot,
        idempotency_key=idempotency_key, status=ProbeRun.Status.DONE, attempt=1, started_at=slot,
        finished_at=slot,
    )
    for draft in drafts:
        finding_record(run=run, draft=draft, started_at=slot, finished_at=slot)
    return run


@dataclass
class _TargetFailure:
    target: Target
    error: BaseException


@dataclass
class _RunState:
    failures: list[_TargetFailure] = field(default_factory=list)
    written: int = 0
    unverified: int = 0  # inventory nodes with no pinned key, reported and not connected to
    departed: int = 0  # nodes that left the inventory during the run
    coordination: list[str] = field(default_factory=list)  # faults of our own Redis / database


def _coordination_note(draft: FindingDraft, faults: Sequence[str]) -> FindingDraft:
    """Say in a measured finding's evidence that our coordination faltered around it (not the
    provider: the measurement stands)."""
    if not faults:
        return draft
    return replace(draft, evidence={**dict(draft.evidence), "coordination_fault": list(faults)[:4]})


def _error_draft(probe: Probe, target: Target, error: BaseException) -> FindingDraft:
    code = getattr(error, "code", type(error).__name__)
    evidence: dict[str, Any] = {"error_code": code, "transient": bool(getattr(error, "transient", False))}
    if getattr(error, "coordination", False):  # our Redis / database, never the provider's error
        evidence["coordination_fault"] = [str(error)[:300]]
    return FindingDraft(
        target=target.name,
        outcome=Outcome.ERROR,
        metric=probe.metric.name,
        summary=f"could not measure: {error}"[:500],
        evidence=evidence,
    )


def _finish(run: ProbeRun, *, status: str, code: str = "", message: str = "", flagged: bool = False) -> None:
    db_retry(lambda: ProbeRun.objects.filter(
        pk=run.pk, status=ProbeRun.Status.RUNNING, claimed_by=run.claimed_by
    ).update(
        status=status,
        finished_at=timezone.now(),
        error_code=code[:64],
        error_message=message[:500],
        flagged=flagged,
    ), what=f"probe run {run.pk}: finish")  # fmt: skip


def _release_for_retry(run: ProbeRun, *, code: str, message: str) -> None:
    db_retry(lambda: ProbeRun.objects.filter(
        pk=run.pk, status=ProbeRun.Status.RUNNING, claimed_by=run.claimed_by
    ).update(
        status=ProbeRun.Status.PENDING,
        error_code=code[:64],
        error_message=message[:500],
        sent_at=timezone.now(),
    ), what=f"probe run {run.pk}: release for retry")  # fmt: skip


def _measured_targets(run: ProbeRun) -> set[str]:
    return set(Finding.objects.filter(run=run).values_list("target", flat=True))


def probe_run_execute(*, run_id: int, worker: str, pool_factory: PoolFactory = SshPool) -> ExecuteResult:
    """Claim and run one probe run to a terminal state (or back to pending for a retry)."""
    run = probe_run_claim(run_id=run_id, worker=worker)
    if run is None:
        return _not_claimed(run_id)
    with _Heartbeat(run.pk, run.claimed_by):
        return _execute_claimed(run, pool_factory)


def _execute_claimed(run: ProbeRun, pool_factory: PoolFactory) -> ExecuteResult:
    probe = probe_get(run.probe_id)()
    ctx = probe_context_build(cluster=run.cluster, pool_factory=pool_factory)
    state = _RunState()
    try:
        skipped = probe.skip(ctx)  # declined (the provider withholds it) or not_applicable
        if skipped is not None:
            outcome, reason = skipped
            draft = FindingDraft(target="cluster", outcome=outcome, metric=probe.metric.name, summary=reason)
            now = timezone.now()
            written = finding_record(run=run, draft=draft, started_at=now, finished_at=now)
            _finish(run, status=ProbeRun.Status.DONE)
            return ExecuteResult(status="done", findings=int(written is not None))
        try:
            inventory_read = _inventory_refresh_for(run, probe, ctx)
            targets = probe.targets(ctx)
        except (TransportError, ProbeRunError) as exc:
            targets = [Target(kind=Scope.CLUSTER, name="cluster", endpoint=ctx.login)]
            state.failures = [_TargetFailure(targets[0], exc)]
            return _conclude(run, probe, state, targets)
        done = _measured_targets(run)
        todo = [t for t in targets if t.name not in done]
        if inventory_read:  # a node of today's inventory with no pin (direct SSH): reported, not trusted
            for target in [t for t in todo if _unverified(t)]:
                now = timezone.now()
                if finding_record(run=run, draft=_unverified_draft(probe, target), started_at=now, finished_at=now):
                    state.written += 1
                state.unverified += 1
                todo.remove(target)
        ProbeRun.objects.filter(pk=run.pk).update(
            progress_total=len(targets), progress_done=len(targets) - len(todo)
        )

        # Worker threads only talk to hosts; findings are written here, in the calling thread, as
        # each target completes (one transaction per target, so a crash loses at most the
        # targets in flight, and a redelivery resumes from the rest).
        slots = _provider_slots(run, probe, ctx)

        def measure(target: Target) -> tuple[list[FindingDraft], datetime, datetime]:
            # politeness across all workers; waits at least one lease, so a dead holder's slot frees.
            # Redis failing while we hold the slot never raises here: the lease notes it, and the
            # finding says so (the measurement stands; it is not the provider's error).
            with slots.slot(wait_s=probe.timeout_s * 2 + settings.OPGRADE_PROBE_STALE_S + 30) as lease:
                started = timezone.now()
                drafts = list(probe.execute(ctx, target))
                finished = timezone.now()
            if lease.faults:
                state.coordination.extend(f for f in lease.faults if f not in state.coordination)
            return [_coordination_note(d, lease.faults) for d in drafts], started, finished

        def record(outcome: Outcome_[Target, tuple[list[FindingDraft], datetime, datetime]]) -> None:
            if outcome.error is not None or outcome.value is None:
                state.failures.append(
                    _TargetFailure(outcome.item, outcome.error or RuntimeError("no result"))
                )
                return
            drafts, started, finished = outcome.value
            if not drafts:
                state.failures.append(
                    _TargetFailure(outcome.item, RuntimeError("the probe returned no finding"))
                )
                return

            def write() -> int:  # one transaction per target; retried whole while the database is away
                written = 0
                with transaction.atomic():
                    for draft in drafts:
                        if finding_record(run=run, draft=draft, started_at=started, finished_at=finished):
                            written += 1
                    if written:
                        ProbeRun.objects.filter(pk=run.pk).update(progress_done=F("progress_done") + 1)
                return written

            state.written += db_retry(write, what=f"probe run {run.pk}: findings of {outcome.item.name}",
                                      notes=state.coordination)

        fan_out(todo, measure, max_concurrency=ctx.max_concurrency, on_done=record)
        return _conclude(run, probe, state, targets)
    finally:
        ctx.close()


def _inventory_refresh_for(run: ProbeRun, probe: Probe, ctx: ProbeContext) -> bool:
    """Read today's nodes before choosing targets. Node-scope probes need it (a failure is the
    run's); for the others a failed read leaves the nodes as last seen."""
    if probe.scope is Scope.NODE:
        return cluster_inventory_refresh(ctx=ctx, cluster=run.cluster)
    try:
        return cluster_inventory_refresh(ctx=ctx, cluster=run.cluster)
    except (TransportError, ProbeRunError, LookupError) as exc:
        logger.warning("probe run %s: inventory not read, nodes as last seen: %s", run.pk, exc)
        return False


def _provider_slots(run: ProbeRun, probe: Probe, ctx: ProbeContext) -> ProviderSlots:
    """The provider-wide session semaphore (Redis): the cluster's limit, shared by every worker."""
    return ProviderSlots(
        # bounded socket waits: a Redis that hangs is handled like one that refuses (a coordination fault)
        client=redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5),
        provider_key=str(run.cluster.provider_id),
        limit=ctx.max_concurrency,
        lease_s=float(settings.OPGRADE_PROBE_STALE_S),  # a dead worker's slots free as its runs do
    )


def _conclude(run: ProbeRun, probe: Probe, state: _RunState, targets: list[Target]) -> ExecuteResult:
    # A node that left the scheduler's inventory during the run is a departure, not an error.
    for failure in [f for f in state.failures if isinstance(f.error, NodeDeparted)]:
        node = failure.target.endpoint.scheduler_node if failure.target.endpoint else failure.target.name
        cluster_inventory_node_departed(cluster=run.cluster, name=node, said=str(failure.error))
        state.failures.remove(failure)
        state.departed += 1
        ProbeRun.objects.filter(pk=run.pk, progress_total__gt=0).update(progress_total=F("progress_total") - 1)
    # A node whose certificate did not verify is reported unverified (with why), like a node with
    # no pin: a finding of its own, not a run error, and never a pass.
    now = timezone.now()
    for failure in [f for f in state.failures if isinstance(f.error, HostKeyUnverified)]:
        assert isinstance(failure.error, HostKeyUnverified)
        with transaction.atomic():
            if finding_record(
                run=run, draft=_unverified_draft(probe, failure.target, failure.error), started_at=now,
                finished_at=now,
            ):  # fmt: skip
                state.written += 1
                ProbeRun.objects.filter(pk=run.pk, progress_done__lt=F("progress_total")).update(
                    progress_done=F("progress_done") + 1
                )
        state.failures.remove(failure)
        state.unverified += 1
    permanent = [f for f in state.failures if not getattr(f.error, "transient", False)]
    transient = [f for f in state.failures if getattr(f.error, "transient", False)]
    # Targets that did not run because our own coordination was down are not the provider's
    # failures: they get retries of their own (bounded), beyond the provider's attempts.
    ours = bool(transient) and all(getattr(f.error, "coordination", False) for f in transient)
    limit = settings.OPGRADE_PROBE_MAX_ATTEMPTS + (COORDINATION_EXTRA_ATTEMPTS if ours else 0)
    if transient and not permanent and run.attempt < limit:
        first = transient[0].error
        _release_for_retry(run, code=getattr(first, "code", "transient"), message=str(first))
        delay = min(settings.OPGRADE_PROBE_RETRY_BASE_S * 2 ** (run.attempt - 1), RETRY_DELAY_MAX_S)
        return ExecuteResult(status="retry", retry_in=delay, findings=state.written)
    now = timezone.now()
    for failure in state.failures:  # a target we gave up on is finished too: it counts in n of m
        with transaction.atomic():
            draft = _error_draft(probe, failure.target, failure.error)
            if finding_record(run=run, draft=draft, started_at=now, finished_at=now):
                state.written += 1
                ProbeRun.objects.filter(pk=run.pk, progress_done__lt=F("progress_total")).update(
                    progress_done=F("progress_done") + 1
                )
    if permanent:
        first = permanent[0].error
        code = getattr(first, "code", type(first).__name__)
        flagged = code in {"host_key_changed", "host_key_not_pinned", "auth_failed", "credentials_invalid",
                           "password_not_bound"}
        _finish(run, status=ProbeRun.Status.ERROR, code=code, message=str(first), flagged=flagged)
        return ExecuteResult(status="error", findings=state.written)
    if state.failures and len(state.failures) >= len(targets):
        first = state.failures[0].error
        _finish(run, status=ProbeRun.Status.ERROR, code=getattr(first, "code", "error"), message=str(first))
        return ExecuteResult(status="error", findings=state.written)
    if state.coordination:  # done, and the run says our coordination faltered (not the provider)
        _finish(run, status=ProbeRun.Status.DONE, flagged=state.unverified > 0, code=COORDINATION_FAULT,
                message=("our coordination faltered, measurements kept: " + "; ".join(state.coordination)))
        return ExecuteResult(status="done", findings=state.written)
    _finish(run, status=ProbeRun.Status.DONE, flagged=state.unverified > 0)
    return ExecuteResult(status="done", findings=state.written)


def probe_run_fail(*, run_id: int, code: str, message: str) -> None:
    """End a run that hit its Celery soft time limit: mark it error (its findings so far stay)."""
    ProbeRun.objects.filter(pk=run_id, status=ProbeRun.Status.RUNNING).update(
        status=ProbeRun.Status.ERROR,
        finished_at=timezone.now(),
        error_code=code[:64],
        error_message=message[:500],
    )


def probe_runs_sweep(*, now: datetime | None = None) -> list[int]:
    """Re-send runs whose worker died (stale heartbeat) or whose message was lost (never claimed)."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.OPGRADE_PROBE_STALE_S)
    lost = now - timedelta(seconds=settings.OPGRADE_PROBE_RESEND_PENDING_S)
    stuck = ProbeRun.objects.filter(
        Q(status=ProbeRun.Status.RUNNING, heartbeat_at__lt=stale)
        | Q(status=ProbeRun.Status.PENDING, sent_at__lt=lost)
        | Q(status=ProbeRun.Status.PENDING, sent_at__isnull=True, created_at__lt=lost)
    )
    resent = []
    with transaction.atomic():
        for run in stuck.select_for_update(skip_locked=True):
            probe_run_send(run=run)
            resent.append(run.pk)
    return resent


def probe_runs_wait(*, run_ids: Iterable[int]) -> list[ProbeRun]:
    return list(ProbeRun.objects.filter(pk__in=list(run_ids)).order_by("probe_id"))
