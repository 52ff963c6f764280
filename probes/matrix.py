"""The probe x testbed matrix, as a library: a probe context for a running testbed, the catalog
run against it in-process, and the table of outcomes.

:func:`testbed_context` builds a :class:`ProbeContext` from ``testbed.api.info`` (pinned host
keys, tenant keys, the metrics/log endpoints, the provider API) as the runner would build it for a
real cluster; :func:`catalog_run` runs every probe (or some) against it exactly as the runner would
call it (unmet requirements and disruptive probes without opt-in give ``not_applicable``), the
disruptive ones last and each only once the pool has settled; :func:`matrix_table` prints probe x
profile. ``manage.py probe_matrix`` (the command), :mod:`probes.red_team`, the quickstart's
testbed cluster and the integration tests use them; the testbed itself is imported only when a
context is built, so importing this module starts nothing.
"""

from __future__ import annotations

import base64
import hashlib
import time
import traceback
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probes import secret_binding
from probes.catalog import probe_get, probe_list
from probes.catalog._support import Abort, provider_nodes, slurm_nodes, wait_for
from probes.catalog.base import (
    FindingDraft,
    Outcome,
    Probe,
    ProbeContext,
    ProviderApi,
    Requirement,
    Tenant,
)
from probes.egress import origin_of
from probes.transport import Command as ProbeCommand
from probes.transport import Credentials, Endpoint, HostKey, TransportError, ssh_origin

# Testbed-scale waits for the disruptive probes (a testbed node is replaced in seconds, not hours),
# and the testbed's declared scale: the runner merges settings["facts"] into the probe facts, so a
# registered testbed cluster is judged on the catalog's `scale: testbed` rows, and its values are
# restated on the real-world scale of the rubric's anchors (probes.thresholds.real_scale_value).
TESTBED_FACTS: dict[str, str] = {"scale": "testbed"}
TESTBED_SETTINGS: dict[str, Any] = {
    "facts": TESTBED_FACTS,
    "node_ready_time.ready_timeout_s": 60,
    "failure_detection_time.detect_timeout_s": 45,
    "node_replacement_time.replace_timeout_s": 60,
    "node_replacement_time.victim_stable_s": 10,  # two health-check intervals of the testbed
    "alert_on_fault.alert_timeout_s": 30,
    "job_requeue_after_node_loss.requeue_timeout_s": 240,
    "metrics_freshness.visible_timeout_s": 60,
    "log_ingest_latency.visible_timeout_s": 30,
    "node_ready_time.poll_s": 0.25,
}


# the testbed controller's tenant-facing services: slurmctld, slurmd, slurmdbd, syslog (nginx and
# the provider API are allowed as the published metrics/log/API endpoints they are)
TESTBED_ALLOWED_LISTENERS = "6817/tcp 6818/tcp 6819/tcp 514/tcp 514/udp"


def host_key_of(public_line: str) -> HostKey:
    """``ssh-ed25519 AAAA... comment`` -> the pinned form (type + OpenSSH SHA256 fingerprint)."""
    kind, blob = public_line.split()[:2]
    digest = hashlib.sha256(base64.b64decode(blob)).digest()
    return HostKey(key_type=kind, fingerprint="SHA256:" + base64.b64encode(digest).decode().rstrip("="))


def testbed_context(
    name: str,
    *,
    disruptive: bool = False,
    settings: Mapping[str, Any] | None = None,
    node_access: str = "scheduler",
) -> ProbeContext:
    """A probe context for testbed ``name``, as the runner would build it for a real cluster.

    ``node_access``: "scheduler" (the runner's default) reaches a compute node as a tenant's job
    does, ``srun --nodelist`` from the login node; "ssh" connects to it directly through the login
    node with its pinned host key, holding a short job there first where the node's sshd admits
    only tenants with a job (``ssh.restrict_to_jobs``, like pam_slurm_adopt).
    """
    from testbed import api as testbed_api

    if node_access not in ("scheduler", "ssh"):
        raise ValueError(f"node_access is 'scheduler' or 'ssh', not {node_access!r}")
    info = testbed_api.info(name)
    login = Endpoint(host=info.login_addr, port=info.ssh_port, host_keys=(host_key_of(info.login_host_key),))
    ready = [
        (node, n)
        for node, n in sorted(info.nodes.items(), key=lambda kv: int(kv[0].removeprefix("node") or 0))
        if n.get("status") == "ready"
    ]
    if node_access == "scheduler":
        nodes = [Endpoint(host=n["address"], port=22, jump=login, scheduler_node=node) for node, n in ready]
    else:
        nodes = [
            Endpoint(host=n["address"], port=22, host_keys=(host_key_of(n["host_key"]),), jump=login, job_node=node)
            for node, n in ready
            if n.get("host_key")
        ]
    tenants = [
        Tenant(
            label=f"tenant-{t.id}",
            credentials=Credentials(
                username=t.user, private_key=Path(t.private_key).read_text(), password=t.http_password,
                # SSH logs in with the key; the password would go only to the testbed's login node
                password_origins=frozenset({ssh_origin(login.host, login.port)}),
            ),
            # the testbed's own web endpoints are the ones its passwords were issued for
            http_origins=frozenset(secret_binding.web_origins(
                {"metrics_url": info.metrics_url, "pushgateway_url": info.pushgateway_url, "logs_url": info.logs_url}
            )),
        )
        for t in info.tenants
    ]
    return ProbeContext(
        provider=f"testbed-{info.profile}",
        cluster=name,
        login=login,
        nodes=nodes,
        tenants=tenants,
        facts={**TESTBED_FACTS, "gpu_model": "", "gpu_count": "0", "orchestrator": "slurm"},
        capabilities={Requirement.SSH, Requirement.SLURM, Requirement.PROVIDER_API, Requirement.TWO_TENANTS},
        api=ProviderApi(base_url=info.api_url, token=info.api_token, origin=origin_of(info.api_url)),
        settings={
            "metrics_url": info.metrics_url,
            "pushgateway_url": info.pushgateway_url,
            "logs_url": info.logs_url,
            "syslog_addr": info.syslog_addr,
            "shared_log_dirs": [info.log_dir],
            # the provider's surface on a testbed: its directory, its controller, its web services
            "exposure_extra_roots": [str(Path(info.slurm_conf).parents[1])],
            "management_addrs": [info.controller_addr],
            "provider_listeners.allowed": TESTBED_ALLOWED_LISTENERS,
            "freshness_sink_url": f"http://{info.controller_addr}/healthz",
            "serving_url": getattr(info, "serving_url", ""),  # serving.enabled: node1's LLM endpoint
            **TESTBED_SETTINGS,
            **dict(settings or {}),
        },
        disruptive_allowed=disruptive,
        max_concurrency=8,
    )


@dataclass
class ProbeResult:
    probe_id: str
    findings: list[FindingDraft] = field(default_factory=list)
    seconds: float = 0.0
    disruptive: bool = False
    settled_s: float | None = None  # disruptive probes: how long the pool took to settle before it

    @property
    def outcome(self) -> str:
        """The worst outcome over the probe's findings (fail > timeout > declined > error > warn > pass > n/a)."""
        order = ["fail", "provider_error", "timeout", "declined", "error", "warn", "pass", "not_applicable"]
        outcomes = {str(f.outcome) for f in self.findings}
        return next((o for o in order if o in outcomes), "none")

    @property
    def critical(self) -> bool:
        return any(f.critical for f in self.findings)

    def cell(self) -> str:
        values = [f"{f.value:g}{f.unit}" for f in self.findings if f.value is not None]
        text = self.outcome + ("!" if self.critical else "")
        return f"{text} {','.join(values[:2])}".strip()


def probe_execute(probe: Probe, ctx: ProbeContext) -> list[FindingDraft]:
    """Run one probe over its targets the way the runner does, in-process (for the matrix and tests)."""
    skipped = probe.skip(ctx)
    if skipped is not None:
        outcome, why = skipped
        return [FindingDraft(target="cluster", outcome=outcome, metric=probe.metric.name, summary=why)]

    def one(target: Any) -> list[FindingDraft]:
        try:
            return list(probe.execute(ctx, target))
        except TransportError as exc:
            return [
                FindingDraft(
                    target=target.name,
                    outcome=Outcome.ERROR,
                    metric=probe.metric.name,
                    summary=f"could not measure: {exc}",
                    evidence={"error_code": exc.code},
                )
            ]
        except Exception as exc:  # a probe bug is our error, never the provider's
            return [
                FindingDraft(
                    target=target.name,
                    outcome=Outcome.ERROR,
                    metric=probe.metric.name,
                    summary=f"probe error: {type(exc).__name__}: {exc}",
                    evidence={"trace": traceback.format_exc()[-1500:]},
                )
            ]

    targets = probe.targets(ctx)
    with ThreadPoolExecutor(max_workers=max(1, min(ctx.max_concurrency, len(targets) or 1))) as pool:
        return [d for drafts in pool.map(one, targets) for d in drafts]


def pool_size(ctx: ProbeContext) -> int | None:
    """How many nodes the provider API lists as ready (None without an API or when it errs)."""
    if ctx.api is None:
        return None
    try:
        return sum(1 for n in provider_nodes(ctx) if n.get("status") == "ready")
    except Abort:
        return None


OWN_JOBS = ProbeCommand("squeue -h -t {states} -o {fmt}", states="RUNNING,CONFIGURING,COMPLETING", fmt="%i")


def pool_settle(ctx: ProbeContext, size: int, *, timeout_s: float = 180, poll_s: float = 1.0) -> float | None:
    """Wait until the pool is back to ``size`` ready nodes, none booting, faulty or releasing,
    every one healthy in Slurm, and no job of our tenants still occupying a node from an earlier
    probe (it would hold a node the next fault probe needs; a held job occupies none); returns the
    seconds waited, or None if it did not settle."""

    def calm() -> bool | None:
        try:
            listed = provider_nodes(ctx)
            healthy = {n.name for n in slurm_nodes(ctx) if n.healthy_in_pool}
        except Abort:
            return None
        ready = {n.get("name") for n in listed if n.get("status") == "ready"}
        settled = len(ready) >= size and all(n.get("status") == "ready" for n in listed) and ready <= healthy
        if settled and ctx.login is not None:
            for tenant in ctx.tenants:
                jobs = ctx.ssh(ctx.login, tenant=tenant.label).run(OWN_JOBS, timeout_s=20)
                if not jobs.ok or jobs.stdout.strip():
                    return None
        return True if settled else None

    done, waited = wait_for(calm, timeout_s=timeout_s, poll_s=poll_s)
    return round(waited, 1) if done else None


def catalog_run(
    ctx: ProbeContext,
    probe_ids: Iterable[str] | None = None,
    *,
    progress: Any = None,
    settle_timeout_s: float = 180,
) -> dict[str, ProbeResult]:
    """Run the catalog (or ``probe_ids``) against ``ctx``; one :class:`ProbeResult` per probe.

    Order: the non-disruptive probes first, the audit last among them (it installs and runs a
    tool on the login node, whose load would disturb the timing probes), then the disruptive
    probes one at a time, each only once the pool has settled back to its size at the start (a
    node added by node_ready_time released, the last fault's node replaced): a fault probe then
    measures its own fault, not the previous probe's tail.
    """
    classes = [probe_get(p) for p in probe_ids] if probe_ids else probe_list()
    classes.sort(key=lambda cls: (cls.disruptive, cls.id == "clustermax_audit"))
    results: dict[str, ProbeResult] = {}
    size = pool_size(ctx) if ctx.disruptive_allowed else None
    try:
        for cls in classes:
            settled: float | None = None
            if cls.disruptive and ctx.disruptive_allowed and size:
                settled = pool_settle(ctx, size, timeout_s=settle_timeout_s)
            start = time.monotonic()
            findings = probe_execute(cls(), ctx)
            results[cls.id] = ProbeResult(
                cls.id, findings, round(time.monotonic() - start, 2), cls.disruptive, settled_s=settled
            )
            if progress:
                progress(results[cls.id])
    finally:
        ctx.close()
    return results


def matrix_table(columns: Mapping[str, Mapping[str, ProbeResult]]) -> str:
    """Probe rows x profile columns of "outcome[!] value" cells (! marks a critical finding)."""
    names = list(columns)
    probes = sorted({p for col in columns.values() for p in col})
    width = max(len(p) for p in probes) + 2
    lines = [f"{'probe':<{width}}" + "".join(f"{n:<28}" for n in names)]
    for p in probes:
        lines.append(
            f"{p:<{width}}"
            + "".join(f"{columns[n][p].cell() if p in columns[n] else '-':<28}" for n in names)
        )
    return "\n".join(lines)
