"""Which origins each stored secret is bound to, and what changing a URL does to them (issue 24).

A secret goes only to the origin (scheme, host, port) it was entered for (``probes.egress``):

* the provider API token to the origin of ``ClusterAccess.api_base_url`` when the token was typed
  (``ClusterAccess.api_token_origin``);
* a tenant's password, as the HTTP login, to the origins of the web endpoints (metrics,
  Pushgateway, logs) when the password was typed, and, for SSH password authentication, to the
  login node's SSH origin ``ssh://login_host:login_port`` then (both kept in
  ``TenantAccount.password_origins``). Compute nodes reached through that login node as the jump
  host count as its origin (``probes.transport``); the transport offers the password nowhere else.

Typing a secret binds it (``probes.services.cluster_access_set_api_token`` and
``tenant_account_set_secrets`` call :func:`api_token_origin` and :func:`password_origins`).
Changing a URL binds nothing: :func:`access_urls_changed` clears the token when the API URL's
origin changes and unbinds the passwords from a web origin no endpoint uses any more (and from the
old login host and port when they change), and says so in words; :func:`password_gaps` lists the
endpoints (the login node included) the tenants' passwords are not bound to, so the pages can ask
for them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probes.egress import origin_of
from probes.models import ClusterAccess, TenantAccount
from probes.transport import ssh_origin

#: the settings whose URLs receive the tenants' HTTP logins (freshness_sink_url never gets one)
WEB_ENDPOINT_KEYS = ("metrics_url", "pushgateway_url", "logs_url")
LABELS = {"metrics_url": "Metrics URL", "pushgateway_url": "Pushgateway URL", "logs_url": "Log query URL",
          "api_base_url": "Provider API URL"}
LOGIN_LABEL = "Login node (SSH)"


def web_origins(settings: Mapping[str, Any] | None) -> list[str]:
    """The origins of the web endpoints named in ``settings``, sorted, without repeats."""
    found = {origin_of(str((settings or {}).get(k) or "")) for k in WEB_ENDPOINT_KEYS}
    return sorted(o for o in found if o)


def login_origin(access: ClusterAccess | None) -> str:
    """``ssh://login_host:login_port`` of ``access`` as it is now ("" without a login host)."""
    return ssh_origin(access.login_host, access.login_port) if access is not None and access.login_host else ""


def api_token_origin(access: ClusterAccess) -> str:
    """The origin a token typed now is bound to: the API URL's as it is now."""
    return origin_of(access.api_base_url or "")


def password_origins(cluster_id: int) -> list[str]:
    """The origins a tenant password typed now is bound to: the web endpoints' and the login
    node's SSH origin, as they are now."""
    access = ClusterAccess.objects.filter(cluster_id=cluster_id).only("settings", "login_host", "login_port").first()
    return sorted({*web_origins(access.settings if access else {}), login_origin(access)} - {""})


def access_urls_changed(
    *, access: ClusterAccess, old_api_base_url: str, old_settings: Mapping[str, Any] | None,
    old_login: tuple[str, int] | None = None,
) -> list[str]:
    """After ``access`` was saved with new URLs: unbind what the change moved, and say what, in words.

    The API token is removed when the API URL's origin changed (it was entered for the old one);
    a web origin no endpoint uses any more is removed from every tenant password bound to it, and
    so is the old login node's SSH origin when ``old_login`` (host, port before the save) differs
    from the login host and port now.
    """
    said: list[str] = []
    old_api, new_api = origin_of(old_api_base_url or ""), origin_of(access.api_base_url or "")
    if access.api_token_encrypted and access.api_token_origin != new_api and old_api != new_api:
        access.api_token_encrypted = ""
        access.api_token_origin = ""
        access.save(update_fields=["api_token_encrypted", "api_token_origin"])
        said.append(
            f"The provider API URL now points to {new_api or 'nothing'} (it was {old_api or 'empty'}): the stored "
            "API token was removed, since it was entered for the old address. Type the token again for the new one."
        )
    gone = set(web_origins(old_settings)) - set(web_origins(access.settings))
    if old_login is not None:
        old_ssh = ssh_origin(*old_login) if old_login[0] else ""
        if old_ssh and old_ssh != login_origin(access):
            gone.add(old_ssh)
    if gone:
        for account in TenantAccount.objects.filter(cluster_id=access.cluster_id).exclude(password_encrypted=""):
            kept = [o for o in account.password_origins or [] if o not in gone]
            if kept != list(account.password_origins or []):
                account.password_origins = kept
                account.save(update_fields=["password_origins"])
    said += password_gaps(access=access)
    return said


def password_gaps(*, access: ClusterAccess | None) -> list[str]:
    """One sentence per web endpoint whose origin some tenant's password is not bound to, and one for
    the login node when a tenant that logs in with a password only is not bound to its SSH origin."""
    if access is None:
        return []
    accounts = list(TenantAccount.objects.filter(cluster_id=access.cluster_id).exclude(password_encrypted="")
                    .order_by("label").only("label", "password_origins", "private_key_encrypted"))
    said = []
    for key in WEB_ENDPOINT_KEYS:
        target = origin_of(str((access.settings or {}).get(key) or ""))
        missing = [a.label for a in accounts if target and target not in (a.password_origins or [])]
        if missing:
            said.append(
                f"{LABELS[key]} ({target}): the HTTP password of {', '.join(missing)} is not sent there, since it "
                "was entered for another address (or before this URL was set). Enter it again on the tenants "
                "step (or the tenant's admin page) to send it to this URL."
            )
    target = login_origin(access)
    # a tenant with a private key logs in with the key, so only the password-only ones are asked
    missing = [a.label for a in accounts
               if target and not a.private_key_encrypted and target not in (a.password_origins or [])]
    if missing:
        said.append(
            f"{LOGIN_LABEL} ({target}): the password of {', '.join(missing)} is not offered to this login host "
            "over SSH, since it was entered for another host or port, so its probes end in an error. Enter it again on the tenants step (or the tenant's admin page) to use it there."
        )
    return said
