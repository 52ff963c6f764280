"""Shared machinery of the catalog's probes: definitions from data, commands, HTTP, canaries.

* :class:`CatalogProbe` takes a probe's declaration (question, area, scope, requirements,
  disruptive flag, timeout, metrics, thresholds) from ``probes/thresholds/catalog.yaml``, so the
  numbers live in data and the module holds only the procedure.
* :func:`run` runs a fixed :class:`~probes.transport.Command` as a tenant and turns a timeout into
  :class:`Abort` (outcome ``timeout``) so probes read straight through.
* :func:`http` is the only place the catalog speaks HTTP (the tenant-facing metrics and log
  APIs, the provider API): http(s) only, to addresses the egress policy allows, a credential
  only to the origin it was bound to (``probes.egress``), no redirects, bounded time and size;
  its evidence is redacted and never holds the answer's body.
* :func:`new_nonce` makes canary names for the canary method (domain.md).

Not pure (it talks to hosts); the parsing it leads to is in ``probes/parsers``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import requests
from requests.auth import HTTPBasicAuth

from probes.catalog.base import (
    Area,
    Direction,
    FindingDraft,
    Metric,
    Outcome,
    Probe,
    ProbeContext,
    Requirement,
    Scope,
    Target,
    Threshold,
    Thresholds,
)
from probes.egress import CheckedAdapter, HttpCredential, origin_of, url_refusal
from probes.parsers import ParseError
from probes.parsers.redaction import clean, redact
from probes.thresholds import definition
from probes.transport import Command, CommandResult, Endpoint

T = TypeVar("T")
HTTP_MAX_BYTES = 1 << 20


class Abort(Exception):
    """End this target's measurement early with ``outcome`` (error, timeout, not_applicable...)."""

    def __init__(self, outcome: Outcome, summary: str, evidence: Mapping[str, Any] | None = None) -> None:
        super().__init__(summary)
        self.outcome = outcome
        self.summary = summary
        self.evidence = dict(evidence or {})


def _thresholds(rows: Iterable[Mapping[str, Any]]) -> Thresholds:
    return Thresholds(
        tuple(
            Threshold(
                pass_at=float(r["pass_at"]),
                warn_at=None if r.get("warn_at") is None else float(r["warn_at"]),
                match={str(k): str(v) for k, v in (r.get("match") or {}).items()},
                reference=str(r.get("reference", "")),
            )
            for r in rows
        )
    )


class CatalogProbe(Probe):
    """A probe whose declaration comes from catalog.yaml: ``class X(CatalogProbe, definition="x")``."""

    metrics: ClassVar[dict[str, Metric]]
    thresholds_by_metric: ClassVar[dict[str, Thresholds]]
    defaults: ClassVar[dict[str, Any]]

    def __init_subclass__(cls, definition: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if definition is None:
            return
        spec = _definition(definition)
        cls.id = definition
        cls.version = int(spec["version"])
        cls.area = Area(spec["area"])
        cls.question = str(spec["question"])
        cls.scope = Scope(spec["scope"])
        cls.requirements = frozenset(Requirement(r) for r in spec.get("requires", []))
        cls.disruptive = bool(spec.get("disruptive", False))
        cls.timeout_s = int(spec.get("timeout_s", 60))
        cls.metrics = {
            name: Metric(
                name=name, unit=str(m.get("unit", "")), direction=Direction(m.get("direction", "higher"))
            )
            for name, m in spec["metrics"].items()
        }
        cls.metric = next(iter(cls.metrics.values()))
        cls.thresholds_by_metric = {
            m: _thresholds(rows) for m, rows in (spec.get("thresholds") or {}).items()
        }
        cls.thresholds = cls.thresholds_by_metric.get(cls.metric.name, Thresholds())
        cls.defaults = dict(spec.get("settings") or {})

    # -- helpers ------------------------------------------------------------------------------

    def setting(self, ctx: ProbeContext, key: str) -> Any:
        """``ctx.settings["<probe id>.<key>"]``, else ``ctx.settings[key]``, else the catalog default."""
        for name in (f"{self.id}.{key}", key):
            if name in ctx.settings:
                return ctx.settings[name]
        return self.defaults.get(key)

    def judge_metric(self, ctx: ProbeContext, metric: str, value: float) -> tuple[Outcome, str]:
        m = self.metrics[metric]
        return self.thresholds_by_metric.get(metric, Thresholds()).evaluate(value, m.direction, ctx.facts)

    def execute(self, ctx: ProbeContext, target: Target) -> list[FindingDraft]:
        try:
            return list(self.measure(ctx, target))
        except Abort as stop:
            return [self.finding(target, stop.outcome, summary=stop.summary, evidence=stop.evidence)]

    def measure(self, ctx: ProbeContext, target: Target) -> Iterable[FindingDraft]:
        raise NotImplementedError


def _definition(probe_id: str) -> dict[str, Any]:
    return definition(probe_id)


# -- SSH ------------------------------------------------------------------------------------------


def run(
    ctx: ProbeContext,
    endpoint: Endpoint | None,
    command: Command,
    *,
    tenant: str | None = None,
    timeout_s: float = 30,
    what: str = "command",
    max_output_bytes: int | None = None,
) -> CommandResult:
    """Run ``command`` as ``tenant``; a deadline hit raises :class:`Abort` (timeout). Output beyond
    ``max_output_bytes`` (default: the transport's limit) is cut and flagged on the result."""
    if endpoint is None:
        raise Abort(Outcome.NOT_APPLICABLE, "no login node is configured")
    result = ctx.ssh(endpoint, tenant=tenant).run(command, timeout_s=timeout_s, max_output_bytes=max_output_bytes)
    if result.timed_out:
        raise Abort(Outcome.TIMEOUT, f"{what} did not finish in {timeout_s:g} s", ctx.evidence(result))
    return result


def tenant_labels(ctx: ProbeContext) -> list[str]:
    return [t.label for t in ctx.tenants]


def compute_nodes(ctx: ProbeContext) -> list[Endpoint]:
    """Compute nodes, or the login node when the cluster lists none."""
    if ctx.nodes:
        return list(ctx.nodes)
    return [ctx.login] if ctx.login else []


# -- time -----------------------------------------------------------------------------------------


def wait_for[T](
    check: Callable[[], T | None], *, timeout_s: float, poll_s: float = 1.0
) -> tuple[T | None, float]:
    """Call ``check`` until it returns something, at most ``timeout_s``; returns (value, seconds waited)."""
    start = time.monotonic()
    while True:
        value = check()
        elapsed = time.monotonic() - start
        if value is not None:
            return value, elapsed
        if elapsed >= timeout_s:
            return None, elapsed
        time.sleep(min(poll_s, max(0.0, timeout_s - elapsed)))


def new_nonce(prefix: str = "opgrade") -> str:
    """A canary name nobody else could have planted: ``opgrade-<12 hex>``."""
    return f"{prefix}-{secrets.token_hex(6)}"


# -- HTTP -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HttpResult:
    method: str
    url: str
    status: int  # 0 when no HTTP answer came (refused, timeout, an address Opgrade may not reach)
    body: str = field(repr=False)
    request_headers: Mapping[str, str] = field(default_factory=dict)
    error: str = ""
    content_type: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def evidence(self, *, secrets_: Iterable[str] = (), excerpt: str | None = None, max_bytes: int = 2048) -> dict[str, Any]:
        """The request and what came back, redacted: credentials masked, and never the answer's body.

        A body is the foreign service's text (issue 24: a metrics URL pointed at an internal service
        must not copy that service's answer into a finding); a probe that needs some of it keeps
        what it parsed, passed here as ``excerpt`` (bounded and redacted) or in its own evidence keys.
        """
        headers = {k: redact(f"{k}: {v}").split(": ", 1)[1] for k, v in self.request_headers.items()}
        response: dict[str, Any] = {"status": self.status, "content_type": self.content_type[:100],
                                    "bytes": len(self.body.encode())}
        if excerpt is not None:
            response["body"] = clean(excerpt, secrets=secrets_, max_bytes=max_bytes)
        return {
            "request": {"method": self.method, "url": redact(self.url, secrets=secrets_), "headers": headers},
            "response": response,
            **({"error": clean(self.error, secrets=secrets_, max_bytes=256)} if self.error else {}),
        }


class CredentialNotBound(Abort):
    """A secret asked to go to an origin it was not entered for: nothing was sent."""

    def __init__(self, url: str, credential: HttpCredential) -> None:
        what = "the provider API token" if credential.kind == "bearer" else f"the HTTP password of {credential.username}"
        super().__init__(
            Outcome.ERROR,
            f"{what} was not sent to {origin_of(url) or url}: it was entered for "
            f"{', '.join(sorted(credential.origins)) or 'no web address'}. Enter it again for this URL "
            "(onboarding: access step for the token, tenants step for passwords).",
        )


_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


def http(
    method: str,
    url: str,
    *,
    auth: HttpCredential | None = None,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    body: Any = None,
    timeout_s: float = 10.0,
) -> HttpResult:
    """One bounded HTTP request; never raises for HTTP or network errors (status 0 + error).

    * http(s) only, no ``user:password@`` in the URL, and only to addresses the egress policy allows
      (``probes.egress``): the resolved addresses before connecting, the peer address after.
    * A credential is attached only when the request's origin is one it was bound to; otherwise
      :class:`CredentialNotBound` is raised and nothing is sent. No caller-made Authorization or
      Cookie header is passed on.
    * Redirects are not followed (a credential never travels to where a Location points), the
      environment's proxies and .netrc are not read, the answer is read up to HTTP_MAX_BYTES.
    """
    if auth is not None and not isinstance(auth, HttpCredential):
        raise TypeError("http(): auth must be an HttpCredential bound to its origins, not a bare secret")
    if any(k.lower() in _SECRET_HEADERS for k in (headers or {})):
        raise ValueError("http(): credentials go through auth=HttpCredential only, never as a header")
    sent: dict[str, str] = dict(headers or {})
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json" if not isinstance(body, bytes) else "text/plain")
    refused = url_refusal(url)
    if refused:
        return HttpResult(method, url, 0, "", {}, error=f"not sent: {refused}")
    request = requests.Request(
        method, url, headers=sent, params=list(params.items()) if isinstance(params, Mapping) else params, data=data,
    ).prepare()
    url = request.url or url
    if auth is not None:
        if not auth.allows(url):
            raise CredentialNotBound(url, auth)
        if auth.kind == "bearer":
            request.headers["Authorization"] = f"Bearer {auth.secret}"
        else:
            request.prepare_auth(HTTPBasicAuth(auth.username, auth.secret))
    sent = {k: v for k, v in request.headers.items() if k != "Content-Length"}
    with requests.Session() as session:
        session.trust_env = False
        session.mount("http://", CheckedAdapter())
        session.mount("https://", CheckedAdapter())
        try:
            with session.send(request, timeout=timeout_s, allow_redirects=False, stream=True) as resp:
                raw = resp.raw.read(HTTP_MAX_BYTES, decode_content=True)
                return HttpResult(method, url, resp.status_code, raw.decode("utf-8", "replace"), sent,
                                  content_type=str(resp.headers.get("Content-Type", "")))
        except (requests.RequestException, OSError) as exc:
            return HttpResult(method, url, 0, "", sent, error=str(exc))


def tenant_http_auth(ctx: ProbeContext, label: str) -> HttpCredential | None:
    """The tenant's login for the provider's web endpoints (metrics, logs): username + password,
    bound to the origins the password was entered for (None: the tenant has no password)."""
    tenant = ctx.tenant(label)
    users = ctx.settings.get("http_users") or {}
    if not tenant.credentials.password:
        return None
    return HttpCredential(
        kind="basic", origins=frozenset(tenant.http_origins), username=str(users.get(label, tenant.credentials.username)),
        secret=tenant.credentials.password,
    )


def endpoint_url(ctx: ProbeContext, key: str) -> str | None:
    url = ctx.settings.get(key)
    return str(url).rstrip("/") if url else None


# -- provider API ---------------------------------------------------------------------------------


def provider_call(
    ctx: ProbeContext, method: str, path: str, body: Any = None, *, timeout_s: float = 15
) -> Any:
    """Call the provider API (bearer token) and return its JSON; a failure is the provider's error.

    The API shape is Opgrade's reference provider API (the testbed implements it): ``GET /v1/nodes``,
    ``POST /v1/nodes {count}``, ``DELETE /v1/nodes/<name>``, ``POST /v1/nodes/<name>/faults {kind}``,
    ``POST /v1/nodes/<name>/report-faulty``, ``GET /v1/events``.
    """
    if ctx.api is None:
        raise Abort(Outcome.DECLINED, "declined: the provider offers no API for this (none is registered)")
    result = http(
        method, ctx.api.base_url.rstrip("/") + path, auth=ctx.api.credential, body=body, timeout_s=timeout_s
    )
    if result.status == 0:
        raise Abort(
            Outcome.ERROR,
            f"provider API unreachable: {result.error}",
            result.evidence(secrets_=ctx.secrets()),
        )
    if not result.ok:
        raise Abort(
            Outcome.PROVIDER_ERROR,
            f"provider API {method} {path} answered {result.status}",
            result.evidence(secrets_=ctx.secrets()),
        )
    try:
        return json.loads(result.body or "{}")
    except ValueError as exc:
        raise Abort(
            Outcome.PROVIDER_ERROR,
            f"provider API {method} {path}: not JSON",
            result.evidence(secrets_=ctx.secrets()),
        ) from exc


def provider_nodes(ctx: ProbeContext) -> list[dict[str, Any]]:
    return list(provider_call(ctx, "GET", "/v1/nodes").get("nodes", []))


def fault_inject(ctx: ProbeContext, node: str, kind: str) -> None:
    provider_call(ctx, "POST", f"/v1/nodes/{urllib.parse.quote(node)}/faults", {"kind": kind})


def fault_clear(ctx: ProbeContext, node: str) -> None:
    """Undo a fault; the node may already be gone (replaced), which is fine."""
    with contextlib.suppress(Abort):
        provider_call(ctx, "POST", f"/v1/nodes/{urllib.parse.quote(node)}/faults", {"kind": "clear"})


SINFO_NODES = Command("sinfo -N -h -o {fmt}", fmt="%N|%T|%E")


def slurm_nodes(ctx: ProbeContext, *, tenant: str | None = None) -> tuple[Any, ...]:
    """``sinfo`` as a tenant on the login node, parsed (an unreadable answer aborts as error)."""
    from probes.parsers.slurm import parse_sinfo_nodes

    result = run(ctx, ctx.login, SINFO_NODES, tenant=tenant, timeout_s=20, what="sinfo")
    try:
        return parse_sinfo_nodes(result.stdout)
    except ParseError as exc:
        raise Abort(Outcome.ERROR, f"could not read sinfo: {exc}", ctx.evidence(result)) from exc


def pick_victim(ctx: ProbeContext) -> str:
    """A compute node that is ready in the provider API and idle in Slurm, to inject a fault into."""
    ready = [n["name"] for n in provider_nodes(ctx) if n.get("status") == "ready"]
    idle = {n.name for n in slurm_nodes(ctx) if n.state == "idle" and n.healthy_in_pool}
    choices = [n for n in ready if n in idle]
    if len(choices) < 2:
        raise Abort(
            Outcome.ERROR, "fewer than two idle healthy nodes now: not breaking the last one (try again)"
        )
    return sorted(choices)[-1]


def syslog_command(message: str, syslog_addr: str | None) -> Command:
    """``logger`` a line: to the cluster's syslog relay when one is configured, else the local syslog."""
    if syslog_addr:
        host, _, port = syslog_addr.rpartition(":")
        if not port.isdigit():
            host, port = syslog_addr, "514"
        return Command("logger -n {host} -P {port} -- {msg}", host=host, port=port, msg=message)
    return Command("logger -- {msg}", msg=message)


def log_query(
    ctx: ProbeContext,
    label: str,
    needle: str,
    *,
    headers: Mapping[str, str] | None = None,
    no_auth: bool = False,
) -> HttpResult:
    """Ask the log API for lines containing ``needle`` as tenant ``label``."""
    url = endpoint_url(ctx, "logs_url")
    auth = None if no_auth else tenant_http_auth(ctx, label)
    if url is None or (auth is None and not no_auth):
        raise Abort(
            Outcome.DECLINED,
            "declined: the provider gives tenants no log endpoint (none registered: settings.logs_url + tenant password)",
        )
    return http("GET", f"{url}/query", auth=auth, headers=headers, params={"contains": needle, "limit": "50"})


def settle(ctx: ProbeContext, *, timeout_s: float = 90) -> None:
    """Wait until no node is booting or faulty, so a fault probe measures one fault, not the last one's tail."""

    def calm() -> bool | None:
        nodes = provider_nodes(ctx)
        return True if nodes and all(n.get("status") == "ready" for n in nodes) else None

    if wait_for(calm, timeout_s=timeout_s, poll_s=1.0)[0] is None:
        raise Abort(Outcome.ERROR, f"the pool did not settle (nodes booting or faulty) in {timeout_s:g} s")
