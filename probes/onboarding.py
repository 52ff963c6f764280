"""Onboarding a cluster: the writes, the named settings and the checks behind the guided flow.

The workbench's onboarding pages (workbench/onboarding_views.py) parse input and call these;
each one goes through the probes services that already own the job (secrets through
``tenant_account_set_secrets`` and ``cluster_access_set_api_token``, host keys through
``host_keys_fetch`` and ``host_key_pin``, the inventory through ``cluster_inventory_read``)
and leaves an entry in the admin's history (``LogEntry``: who, when, what, never a secret).

* ``SETTINGS``: the keys the probe catalog reads from ``ClusterAccess.settings`` (endpoints,
  paths, HTTP users, the scale fact), each with a label, a kind and help text, so an analyst
  fills named fields instead of raw JSON. Per-probe overrides (``<probe>.<key>``) are checked
  against the catalog's own defaults (a known probe, a known key, a value of the default's type).
* ``cluster_onboarding_check``: a real check of each piece before the first run: the login node
  (pinned key), each tenant's login, Slurm's node list, the provider API token, the metrics and
  log URLs with a tenant's HTTP login. Each result is said in words; a piece not checked is
  never reported as working.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.db import transaction
from django.db.models import Model

from probes import secret_binding, services
from probes.catalog import probe_list
from probes.egress import HttpCredential, UrlRefused, url_refusal, url_validate
from probes.models import ClusterAccess, HostKeyPin, TenantAccount
from probes.transport import Command, TransportError
from providers.models import Cluster


class OnboardingError(Exception):
    """Bad input to an onboarding step; nothing was written. The message says why, in words."""


# ------------------------------------------------------------------------------------------------
# The named settings
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingField:
    key: str
    kind: str  # url | hostport | paths | lines | users | path | scale
    label: str
    help: str


SETTINGS: tuple[SettingField, ...] = (
    SettingField("metrics_url", "url", "Metrics URL (Prometheus)",
                 "The Prometheus base URL a tenant queries (…/api/v1/query is appended), e.g. "
                 "http://10.0.0.2/prometheus. Read by the metrics coverage, freshness, retention and "
                 "metric isolation probes with a tenant's HTTP login. Empty: those probes are declined."),
    SettingField("pushgateway_url", "url", "Pushgateway URL",
                 "Where a tenant pushes its own metrics (metrics freshness, metric isolation). Optional."),
    SettingField("logs_url", "url", "Log query URL",
                 "The log API a tenant reads its logs from (…/query?contains= is appended), with a tenant's "
                 "HTTP login. Read by the log ingest latency and log isolation probes. Empty: declined."),
    SettingField("syslog_addr", "hostport", "Syslog relay (host:port)",
                 "Where tenants send syslog lines (logger -n HOST -P PORT); empty: the login node's local syslog."),
    SettingField("freshness_sink_url", "url", "Freshness sink URL",
                 "An HTTP endpoint on the cluster the metrics freshness probe uses as its scrape target. Optional."),
    SettingField("shared_log_dirs", "paths", "Shared log directories",
                 "One absolute path a line: directories tenants share for logs; the log isolation probe "
                 "checks that one tenant cannot read another's files there."),
    SettingField("shared_dirs", "paths", "Shared directories",
                 "One absolute path a line: other shared directories the data exposure probe searches."),
    SettingField("exposure_extra_roots", "paths", "Provider directories to search",
                 "One absolute path a line: the provider's own directories the data exposure probe also "
                 "searches for secrets a tenant can read."),
    SettingField("management_addrs", "lines", "Management addresses",
                 "One host or address a line: the provider's management hosts the listener probe checks "
                 "for services tenants should not reach."),
    SettingField("http_users", "users", "HTTP users (tenant=user)",
                 "One 'tenant-label=user' a line, where a tenant's HTTP login for metrics and logs is not "
                 "its SSH username. The password is the tenant's Password."),
    SettingField("cmax_wheel_dir", "path", "ClusterMAX wheel directory",
                 "Directory on this server holding the clustermax wheels the audit probe installs; empty: "
                 "the default the installer fills."),
)

SCALE_CHOICES = (("", "Production cluster (the catalog's thresholds)"),
                 ("testbed", "Testbed (cluster-in-a-box: the seconds-scale thresholds)"))
_HOSTPORT = re.compile(r"^[A-Za-z0-9.\-]+:\d{1,5}$")
_HOSTNAME = re.compile(r"^[A-Za-z0-9.\-:\[\]]+$")


def probe_setting_defaults() -> dict[str, dict[str, Any]]:
    """probe id -> its settings and their catalog defaults (what an override may name)."""
    return {p.id: dict(getattr(p, "defaults", {}) or {}) for p in probe_list() if getattr(p, "defaults", None)}


def _typed(value: str, default: Any, name: str) -> Any:
    text = value.strip()
    if isinstance(default, bool):
        if text.lower() in {"true", "yes", "1"}:
            return True
        if text.lower() in {"false", "no", "0"}:
            return False
        raise OnboardingError(f"{name}: give true or false, not {text!r}")
    if isinstance(default, int):
        if not re.fullmatch(r"-?\d+", text):
            raise OnboardingError(f"{name}: give a whole number, not {text!r}")
        return int(text)
    if isinstance(default, float):
        try:
            return float(text)
        except ValueError:
            raise OnboardingError(f"{name}: give a number, not {text!r}") from None
    return text


def probe_overrides_parse(text: str) -> dict[str, Any]:
    """``probe.key = value`` lines -> settings entries, each checked against the catalog."""
    defaults = probe_setting_defaults()
    out: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.strip().startswith("#"):
            continue
        name, eq, value = line.partition("=")
        name = name.strip()
        probe, dot, key = name.partition(".")
        if not eq or not dot:
            raise OnboardingError(f"line {number}: write 'probe.setting = value' (got {line.strip()!r})")
        if probe not in defaults:
            raise OnboardingError(f"line {number}: no probe of the catalog named {probe!r} takes settings")
        if key not in defaults[probe]:
            known = ", ".join(sorted(defaults[probe]))
            raise OnboardingError(f"line {number}: {probe} has no setting {key!r} (it has: {known})")
        out[name] = _typed(value, defaults[probe][key], f"line {number} ({name})")
    return out


def probe_overrides_text(settings: Mapping[str, Any]) -> str:
    defaults = probe_setting_defaults()
    lines = []
    for name, value in sorted(settings.items()):
        probe, _, key = name.partition(".")
        if key and key in defaults.get(probe, {}):
            shown = str(value).lower() if isinstance(value, bool) else str(value)
            lines.append(f"{name} = {shown}")
    return "\n".join(lines)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def setting_value_parse(field: SettingField, raw: str) -> Any:
    """One named field's text -> its stored value (None: leave the key out). Raises OnboardingError."""
    text = (raw or "").strip()
    if not text:
        return None
    if field.kind == "url":
        if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
            raise OnboardingError(f"{field.label}: start with http:// or https:// and a host ({text!r})")
        try:
            return url_validate(text, what=field.label)
        except UrlRefused as exc:
            raise OnboardingError(str(exc)) from None
    if field.kind == "hostport":
        if not _HOSTPORT.match(text) or not 1 <= int(text.rsplit(":", 1)[1]) <= 65535:
            raise OnboardingError(f"{field.label}: write host:port, e.g. 10.0.0.2:514 ({text!r})")
        return text
    if field.kind == "paths":
        bad = [p for p in _lines(text) if not p.startswith("/")]
        if bad:
            raise OnboardingError(f"{field.label}: every line must be an absolute path ({bad[0]!r} is not)")
        return _lines(text)
    if field.kind == "path":
        if not text.startswith("/"):
            raise OnboardingError(f"{field.label}: give an absolute path ({text!r})")
        return text
    if field.kind == "lines":
        bad = [h for h in _lines(text) if not _HOSTNAME.match(h)]
        if bad:
            raise OnboardingError(f"{field.label}: {bad[0]!r} is not a host name or address")
        return _lines(text)
    if field.kind == "users":
        users = {}
        for line in _lines(text):
            label, eq, user = line.partition("=")
            if not eq or not label.strip() or not user.strip():
                raise OnboardingError(f"{field.label}: write tenant-label=user, one a line ({line!r})")
            users[label.strip()] = user.strip()
        return users
    raise AssertionError(field.kind)


def setting_value_text(field: SettingField, value: Any) -> str:
    if value is None:
        return ""
    if field.kind in {"paths", "lines"}:
        return "\n".join(str(v) for v in value) if isinstance(value, list) else str(value)
    if field.kind == "users":
        return "\n".join(f"{k}={v}" for k, v in dict(value).items()) if isinstance(value, dict) else str(value)
    return str(value)


def cluster_settings_build(
    *, current: Mapping[str, Any], named: Mapping[str, str], scale: str, overrides: str
) -> dict[str, Any]:
    """The settings dict from the named fields, the scale and the override lines.

    Keys the form does not name (and that are no valid override) are kept as they are, so a
    cluster set up elsewhere loses nothing. Raises OnboardingError, naming the field.
    """
    if scale not in dict(SCALE_CHOICES):
        raise OnboardingError(f"Scale: choose one of the offered values, not {scale!r}")
    other = set(cluster_settings_other_keys(current))
    out: dict[str, Any] = {k: v for k, v in current.items() if k in other}
    for field in SETTINGS:
        value = setting_value_parse(field, named.get(field.key, ""))
        if value is not None:
            out[field.key] = value
    facts = {str(k): str(v) for k, v in dict(current.get("facts") or {}).items() if k != "scale"}
    if scale:
        facts["scale"] = scale
    if facts:
        out["facts"] = facts
    out.update(probe_overrides_parse(overrides))
    return out


def cluster_settings_other_keys(settings: Mapping[str, Any]) -> list[str]:
    """Keys no named field shows (kept as they are by ``cluster_settings_build``)."""
    defaults = probe_setting_defaults()
    known = {f.key for f in SETTINGS} | {"facts"}
    return sorted(
        k for k in settings
        if k not in known and k.partition(".")[2] not in defaults.get(k.partition(".")[0], {})
    )


# ------------------------------------------------------------------------------------------------
# Audit
# ------------------------------------------------------------------------------------------------


def _audit(user: Any, obj: Model, flag: int, message: str) -> None:
    if user is None or not getattr(user, "is_authenticated", False):
        return
    LogEntry.objects.log_actions(
        user_id=user.pk, queryset=[obj], action_flag=flag, change_message=f"Onboarding: {message}"[:2000],
        single_object=True,
    )


def onboarding_history(*, cluster: Cluster, limit: int = 20) -> list[LogEntry]:
    """The onboarding entries of the admin history for this cluster's access, tenants and pins."""
    from django.contrib.contenttypes.models import ContentType

    ids: list[tuple[int, list[str]]] = []
    access = ClusterAccess.objects.filter(cluster=cluster).first()
    if access is not None:
        ids.append((ContentType.objects.get_for_model(ClusterAccess).pk, [str(access.pk)]))
    return list(
        LogEntry.objects.filter(
            content_type_id__in=[i for i, _ in ids], object_id__in=[o for _, os in ids for o in os],
            change_message__startswith="Onboarding: ",
        ).select_related("user").order_by("-action_time", "-id")[:limit]
    ) if ids else []


# ------------------------------------------------------------------------------------------------
# Writes
# ------------------------------------------------------------------------------------------------

ACCESS_FIELDS = ("login_host", "login_port", "inventory_source", "node_access", "compute_nodes",
                 "api_base_url", "disruptive_opt_in", "max_concurrency")


@dataclass(frozen=True)
class Saved:
    """What a save wrote, and what it did to the stored secrets, in words (shown on the page)."""

    access: ClusterAccess
    notes: tuple[str, ...] = ()


@transaction.atomic
def cluster_access_save(
    *, cluster: Cluster, values: Mapping[str, Any], api_token: str = "", clear_api_token: bool = False,
    user: Any = None,
) -> Saved:
    """Create or update the cluster's access (validated values), and its API token, write-only.

    The token is bound to the API URL's origin when it is typed; a new origin removes the stored
    token (``probes.secret_binding``) and the notes ask for it again. A new login host or port
    unbinds the tenants' passwords from SSH to the old one; the notes ask for them again.
    """
    access = ClusterAccess.objects.select_for_update().filter(cluster=cluster).first()
    created = access is None
    access = access or ClusterAccess(cluster=cluster)
    old_api_url = access.api_base_url
    old_login = (access.login_host, access.login_port)
    if values.get("api_base_url"):
        try:
            url_validate(str(values["api_base_url"]), what="Provider API URL")
        except UrlRefused as exc:
            raise OnboardingError(str(exc)) from None
    changed = [name for name in ACCESS_FIELDS if name in values and getattr(access, name) != values[name]]
    for name in ACCESS_FIELDS:
        if name in values:
            setattr(access, name, values[name])
    access.full_clean(exclude=["cluster", "settings"])
    access.save()
    notes = secret_binding.password_gaps(access=access) if created else secret_binding.access_urls_changed(
        access=access, old_api_base_url=old_api_url, old_settings=access.settings, old_login=old_login)
    if not access.api_token_encrypted and not created and any("API token was removed" in n for n in notes):
        changed.append("API token removed (its URL's origin changed)")
    if clear_api_token:
        services.cluster_access_set_api_token(access=access, token="")
        changed.append("API token removed")
    elif api_token:
        services.cluster_access_set_api_token(access=access, token=api_token)
        changed.append(f"API token replaced (bound to {access.api_token_origin or 'no URL'})")
        notes = [n for n in notes if "API token was removed" not in n]
    _audit(user, access, ADDITION if created else CHANGE,
           "access created" if created else f"access changed ({', '.join(changed) or 'nothing'})")
    return Saved(access, tuple(notes))


@transaction.atomic
def cluster_settings_save(
    *, access: ClusterAccess, settings: dict[str, Any], passwords: Mapping[str, str] | None = None, user: Any = None,
) -> Saved:
    """Store the settings; a web endpoint whose origin changed gets no tenant password until the
    password is typed again (the notes say which). ``passwords`` (tenant label -> password, typed
    on the same page) are stored and bound to the web endpoints as just saved."""
    for field in SETTINGS:
        if field.kind == "url" and settings.get(field.key):
            setting_value_parse(field, str(settings[field.key]))  # refuses ftp://, loopback ... in words
    old = dict(access.settings or {})
    changed = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))
    access.settings = settings
    access.save(update_fields=["settings"])
    notes = secret_binding.access_urls_changed(access=access, old_api_base_url=access.api_base_url, old_settings=old)
    _audit(user, access, CHANGE, f"settings changed ({', '.join(changed) or 'nothing'})")
    typed = {label: pw for label, pw in (passwords or {}).items() if pw}
    if typed:
        for account in TenantAccount.objects.filter(cluster=access.cluster, label__in=list(typed)).order_by("label"):
            tenant_password_enter_again(account=account, password=typed[account.label], user=user)
        notes = secret_binding.password_gaps(access=access)
    return Saved(access, tuple(notes))


def _access_of(cluster: Cluster) -> ClusterAccess:
    access = ClusterAccess.objects.filter(cluster=cluster).first()
    if access is None:
        raise OnboardingError("Save the cluster's access (login host and port) first.")
    return access


@transaction.atomic
def tenant_account_add(
    *, cluster: Cluster, label: str, username: str, private_key: str = "", passphrase: str = "",
    password: str = "", user: Any = None,
) -> TenantAccount:
    """A new tenant account, its secrets encrypted (a key is checked readable first)."""
    access = _access_of(cluster)
    if TenantAccount.objects.filter(cluster=cluster, label=label).exists():
        raise OnboardingError(f"This cluster has a tenant labelled {label!r} already: remove it first, or "
                              "choose another label.")
    account = TenantAccount(cluster=cluster, label=label, username=username)
    try:
        services.tenant_account_set_secrets(
            account=account, private_key=private_key or None, passphrase=passphrase or None,
            password=password or None,
        )
    except services.ProbeRunError as exc:
        raise OnboardingError(f"Tenant {label}: {exc}") from exc
    _audit(user, access, CHANGE, f"tenant {label} ({username}) added, authenticating by {account.auth_kind}"
           + (" with an HTTP password" if account.private_key_encrypted and account.password_encrypted else ""))
    return account


@transaction.atomic
def tenant_password_enter_again(*, account: TenantAccount, password: str, user: Any = None) -> TenantAccount:
    """The tenant's password typed again: stored, and bound to the web endpoints' origins as they are now."""
    access = _access_of(account.cluster)
    if not password:
        raise OnboardingError(f"Tenant {account.label}: type the password.")
    try:
        services.tenant_account_set_secrets(account=account, password=password)
    except services.ProbeRunError as exc:
        raise OnboardingError(f"Tenant {account.label}: {exc}") from exc
    _audit(user, access, CHANGE, f"tenant {account.label}: HTTP password entered again, sent to "
           f"{', '.join(account.password_origins) or 'no web URL yet'}")
    return account


@transaction.atomic
def tenant_account_remove(*, account: TenantAccount, user: Any = None) -> None:
    access = _access_of(account.cluster)
    label, username = account.label, account.username
    account.delete()
    _audit(user, access, CHANGE, f"tenant {label} ({username}) removed")


def host_keys_pin_chosen(*, cluster: Cluster, chosen: Iterable[str], user: Any = None) -> list[HostKeyPin]:
    """Pin the keys the analyst ticked (``host|port|type|fingerprint``), only if the host offers them now.

    The hosts are read again and a ticked key is pinned only where the same host still offers
    the same fingerprint, so a key the analyst never saw cannot be pinned by a crafted form.
    """
    wanted = list(dict.fromkeys(chosen))
    if not wanted:
        raise OnboardingError("Tick the keys you checked against the provider's published fingerprints.")
    access = _access_of(cluster)
    parsed = []
    for value in wanted:
        parts = value.rsplit("|", 3)
        if len(parts) != 4 or not parts[1].isdigit():
            raise OnboardingError("A ticked key is not one this page offered; reload the page.")
        parsed.append((parts[0], int(parts[1]), parts[2], parts[3]))
    try:
        offered = {(k.host, k.port, k.key_type, k.fingerprint) for k in services.host_keys_fetch(cluster=cluster)
                   if not k.error}
    except (services.ProbeRunError, TransportError) as exc:
        raise OnboardingError(f"The hosts could not be read again: {exc}") from exc
    missing = [f"{h}:{p}" for h, p, t, f in parsed if (h, p, t, f) not in offered]
    if missing:
        raise OnboardingError(f"Not offered now by {', '.join(missing)}: nothing was pinned. Reload the page and "
                              "compare the fingerprints again.")
    pins = []
    with transaction.atomic():
        for host, port, key_type, fingerprint in parsed:
            pins.append(services.host_key_pin(cluster=cluster, host=host, port=port, key_type=key_type,
                                              fingerprint=fingerprint, user=user))
    _audit(user, access, CHANGE, "host keys pinned: " + "; ".join(
        f"{p.host}:{p.port} {p.key_type} {p.fingerprint}" for p in pins))
    return pins


@transaction.atomic
def host_key_unpin(*, pin: HostKeyPin, user: Any = None) -> None:
    access = _access_of(pin.cluster)
    what = f"{pin.host}:{pin.port} {pin.key_type} {pin.fingerprint}"
    pin.delete()
    _audit(user, access, CHANGE, f"host key unpinned: {what}")


# ------------------------------------------------------------------------------------------------
# Checks
# ------------------------------------------------------------------------------------------------

OK, FAILED, NOT_CHECKED = "works", "does not work", "not checked"


@dataclass(frozen=True)
class Check:
    piece: str
    state: str  # OK | FAILED | NOT_CHECKED
    words: str

    @property
    def ok(self) -> bool:
        return self.state == OK


WHOAMI = Command("id -un")


#: The three answers a check may report about a URL (issue 24): it answered as the expected API,
#: it refused the login, or nothing usable answered. A closed port, a service of another kind and
#: an answer that is not the expected API all read the same, so the page is no port scanner.
ANSWERED, REFUSED, NO_ANSWER = "answered", "refused", "no answer"


def _answer_kind(answer: Any, readable: Any) -> str:
    if answer.status in (401, 403):
        return REFUSED
    if answer.ok:
        try:
            if readable(answer.body):
                return ANSWERED
        except (ValueError, TypeError, AttributeError):
            pass
    return NO_ANSWER


def _prometheus_answer(body: str) -> bool:
    doc = json.loads(body or "null")
    return isinstance(doc, dict) and doc.get("status") == "success" and isinstance(doc.get("data"), dict)


def _log_answer(body: str) -> bool:
    from probes.parsers import ParseError
    from probes.parsers.logs import parse_log_response

    if not body.lstrip().startswith(("{", "[")):
        return False  # the log API answers JSON; a page of text is some other service
    try:
        parse_log_response(body)
    except ParseError:
        return False
    return True


def _node_list(body: str) -> bool:
    doc = json.loads(body or "null")
    return isinstance(doc, dict) and isinstance(doc.get("nodes"), list)


def _http_check(piece: str, url: str | None, path: str, auth: HttpCredential | None,
                params: dict[str, str], what: str, readable: Any) -> Check:
    """One web endpoint checked with a tenant's HTTP login: answered / refused / no answer."""
    from probes.catalog._support import http  # the catalog's one bounded HTTP client

    if not url:
        return Check(piece, NOT_CHECKED, f"no {what} URL is set (settings step): the probes that need it are declined")
    refused = url_refusal(url)
    if refused:
        return Check(piece, FAILED, f"not checked: {refused}")
    if auth is None:
        return Check(piece, NOT_CHECKED, "no tenant has a password, which is the HTTP login for it (tenants step)")
    if not auth.allows(url):
        return Check(piece, NOT_CHECKED, f"{url}: the tenants' HTTP password was not sent, since it was entered "
                     "for another address (or before this URL was set). Enter it again on the tenants step.")
    answer = http("GET", url.rstrip("/") + path, auth=auth, params=params, timeout_s=10)
    kind = _answer_kind(answer, readable)
    if kind == ANSWERED:
        return Check(piece, OK, f"{url}: answered the query of {auth.username} as a {what} API")
    if kind == REFUSED:
        return Check(piece, FAILED, f"{url}: refused the HTTP login of {auth.username}")
    return Check(piece, FAILED, f"{url}: no answer (nothing answered as a {what} API)")


def _api_check(ctx: Any) -> Check:
    from probes.catalog._support import CredentialNotBound, http

    piece = "Provider API token"
    refused = url_refusal(ctx.api.base_url)
    if refused:
        return Check(piece, FAILED, f"not checked: {refused}")
    try:
        answer = http("GET", ctx.api.base_url.rstrip("/") + "/v1/nodes", auth=ctx.api.credential, timeout_s=10)
    except CredentialNotBound as exc:
        return Check(piece, NOT_CHECKED, exc.summary)
    kind = _answer_kind(answer, _node_list)
    if kind == ANSWERED:
        count = len(json.loads(answer.body)["nodes"])
        return Check(piece, OK, f"{ctx.api.base_url}: answered GET /v1/nodes with the token, listing {count} node(s)")
    if kind == REFUSED:
        return Check(piece, FAILED, f"{ctx.api.base_url}: refused the token")
    return Check(piece, FAILED, f"{ctx.api.base_url}: no answer (nothing answered as the provider API)")


def cluster_onboarding_check(*, cluster: Cluster, user: Any = None) -> list[Check]:
    """Check each piece through the services and transport the probes use; nothing is stored but
    the outcome in words (the admin history)."""
    access = _access_of(cluster)
    ctx = services.probe_context_build(cluster=cluster)
    checks: list[Check] = []
    try:
        login = ctx.login
        assert login is not None
        if not ctx.tenants:
            checks.append(Check("Login node", NOT_CHECKED, "no tenant account to log in with (tenants step)"))
        elif not login.host_keys:
            checks.append(Check("Login node", NOT_CHECKED,
                                f"{login.host}:{login.port}: no pinned host key, so no credential is sent (host keys step)"))
        else:
            for tenant in ctx.tenants:
                piece = f"Tenant login {tenant.label}"
                try:
                    result = ctx.ssh(login, tenant=tenant.label).run(WHOAMI, timeout_s=20)
                except TransportError as exc:
                    checks.append(Check(piece, FAILED, f"{login.host}:{login.port}: {exc}"[:300]))
                    continue
                who = result.stdout.strip()
                if result.ok and who == tenant.credentials.username:
                    checks.append(Check(piece, OK, f"logged in to {login.host}:{login.port} as {who} (pinned key matched)"))
                else:
                    checks.append(Check(piece, FAILED, f"logged in, but 'id -un' said {who or result.stderr.strip()[:100]!r}"))
            if cluster.orchestrator == Cluster.Orchestrator.SLURM and any(c.ok for c in checks):
                try:
                    nodes = services.cluster_inventory_read(ctx=ctx, access=access) if (
                        access.inventory_source == ClusterAccess.InventorySource.SCHEDULER) else None
                except (TransportError, services.ProbeRunError, LookupError) as exc:
                    checks.append(Check("Slurm node list", FAILED, str(exc)[:300]))
                else:
                    if nodes is not None:
                        names = ", ".join(n.name for n in nodes[:8]) + (" …" if len(nodes) > 8 else "")
                        checks.append(Check("Slurm node list", OK if nodes else FAILED,
                                            f"sinfo lists {len(nodes)} node(s): {names}" if nodes else "sinfo lists no node"))
        if ctx.api is None:
            checks.append(Check("Provider API token", NOT_CHECKED,
                                "no API URL and token stored (access step): the probes that need the API are declined"))
        else:
            checks.append(_api_check(ctx))
        http_tenant = next((t for t in ctx.tenants if t.credentials.password), None)
        auth = None
        if http_tenant is not None:
            users = ctx.settings.get("http_users") or {}
            auth = HttpCredential(
                kind="basic", origins=frozenset(http_tenant.http_origins), secret=http_tenant.credentials.password or "",
                username=str(users.get(http_tenant.label, http_tenant.credentials.username)),
            )
        settings_ = ctx.settings
        checks.append(_http_check("Metrics URL", settings_.get("metrics_url"), "/api/v1/query", auth,
                                  {"query": "up"}, "metrics", _prometheus_answer))
        checks.append(_http_check("Log URL", settings_.get("logs_url"), "/query", auth,
                                  {"contains": "opgrade-onboarding-check", "limit": "1"}, "log", _log_answer))
    finally:
        ctx.close()
    secrets_ = ctx.secrets()
    checks = [Check(c.piece, c.state, _redact(c.words, secrets_)) for c in checks]
    _audit(user, access, CHANGE, "checks: " + "; ".join(f"{c.piece}: {c.state}" for c in checks))
    return checks


def _redact(text: str, secrets_: list[str]) -> str:
    for secret in secrets_:
        text = text.replace(secret, "***")
    return text
