"""Secrets stay with their origin, and URLs are no window into other services (issue 24, items 1-2).

Against real recording listeners on loopback (one port = one origin): with the provider API token
and the tenants' passwords stored for one origin, an analyst points every URL field of the
onboarding flow, and an admin every URL field of the admin, at another listener; "Check" is
pressed and the probes that read those URLs run. Nothing secret arrives there: no Authorization
header, no token or password bytes anywhere in a request. The pages say, in words, that the
secrets were unbound and must be typed again; typing them again sends them to the new origin.

Also: ``ftp://`` is refused at the forms with a message (a stored one gives no 500 on Check);
loopback is refused without ``OPGRADE_URL_ALLOW_NETWORKS``; Check's words are the same for a
closed port, a Redis-like listener and an HTTP answer that is not the expected API; a
retention_days finding keeps the retention flags it parsed, never the answer's body.
"""

from __future__ import annotations

import contextlib
import html
import json
from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import reverse

from config.access import Role
from probes import onboarding, services
from probes.catalog import probe_get
from probes.catalog._support import Abort, log_query, provider_nodes
from probes.catalog.base import Outcome
from probes.models import ClusterAccess, TenantAccount
from tests.factories import ClusterFactory, ProviderFactory
from tests.listeners import RawListener, RecordingListener, allow_loopback_urls, closed_port
from tests.workbench.builders import user

pytestmark = [pytest.mark.django_db]
__all__ = ["allow_loopback_urls"]

TOKEN = "tok-EGRESS-never-leaves-4711"
PASSWORDS = {"tenant-a": "pw-A-never-leaves-0815", "tenant-b": "pw-B-never-leaves-2342"}
SECRETS = [TOKEN, *PASSWORDS.values()]
WEB_KEYS = ("metrics_url", "pushgateway_url", "logs_url", "freshness_sink_url")


def _client(u) -> Client:
    c = Client()
    c.force_login(u)
    return c


def _text(response) -> str:
    return html.unescape(response.content.decode())


def _url(name: str, cluster) -> str:
    return reverse(f"workbench:{name}", args=[cluster.pk])


@pytest.fixture
def cluster(db):
    return ClusterFactory(provider=ProviderFactory(slug="egress", name="EgressCo"), name="main")


@pytest.fixture
def listeners() -> Iterator[tuple[RecordingListener, RecordingListener]]:
    with RecordingListener() as home, RecordingListener() as elsewhere:
        yield home, elsewhere


def _access_post(client: Client, cluster, api_base_url: str, token: str = "") -> object:
    return client.post(_url("onboard_access", cluster), {
        "login_host": "10.0.0.3", "login_port": "22", "inventory_source": "provider_api", "node_access": "scheduler",
        "compute_nodes": "", "api_base_url": api_base_url, "api_token": token, "max_concurrency": "4",
    })  # fmt: skip


def _settings_post(client: Client, cluster, base: str, *, follow: bool = False, **extra: str) -> object:
    return client.post(_url("onboard_settings", cluster), {
        "metrics_url": f"{base}/prometheus", "pushgateway_url": f"{base}/pushgateway", "logs_url": f"{base}/logs",
        "freshness_sink_url": f"{base}/healthz", "scale": "testbed", **extra,
    }, follow=follow)  # fmt: skip


def _onboard_at(client: Client, cluster, home: RecordingListener) -> None:
    """The whole flow as an analyst who knows the secrets: everything at ``home``."""
    assert _access_post(client, cluster, home.url, TOKEN).status_code == 302
    for label, password in PASSWORDS.items():
        onboarding.tenant_account_add(cluster=cluster, label=label, username=f"user-{label[-1]}", password=password)
    # the passwords were typed before the web URLs existed: they go nowhere until typed for them, on the
    # settings page itself (tenant-b here) or on the tenants step (tenant-a)
    page = _settings_post(client, cluster, home.url, **{"http_password_tenant-b": PASSWORDS["tenant-b"]})
    assert page.status_code == 302
    said = _text(client.get(_url("onboard_tenants", cluster)))
    assert "the HTTP password of tenant-a is not sent there" in said and "Enter it again on the tenants step" in said
    assert "password of tenant-b is not sent" not in said
    account = TenantAccount.objects.get(cluster=cluster, label="tenant-a")
    client.post(_url("onboard_tenants", cluster), {"action": "password", "tenant": account.pk,
                                                   "password": PASSWORDS["tenant-a"]})
    assert "is not sent there" not in _text(client.get(_url("onboard_tenants", cluster)))
    # the web origin, and the login node's SSH origin (probes.transport offers it there only)
    assert {tuple(a.password_origins) for a in TenantAccount.objects.filter(cluster=cluster)} == {
        (home.url, "ssh://10.0.0.3:22")}


def _press_check_and_run_the_url_probes(client: Client, cluster) -> str:
    """Check on the onboarding page, then every probe path that reads the URLs."""
    page = client.post(_url("onboard_check", cluster))
    assert page.status_code == 200
    ctx = services.probe_context_build(cluster=cluster)
    try:
        for probe_id in ("retention_days", "tenant_metric_isolation"):
            probe = probe_get(probe_id)()
            probe.defaults = {**probe.defaults, "visible_timeout_s": 2}
            for target in probe.targets(ctx):
                probe.execute(ctx, target)
        # refusals are the point (Abort: declined, or a credential not sent); what arrived is checked after
        for call in (lambda: provider_nodes(ctx), lambda: log_query(ctx, "tenant-a", "needle")):
            with contextlib.suppress(Abort):
                call()
        with contextlib.suppress(services.ProbeRunError):
            services.cluster_inventory_read(ctx=ctx, access=ClusterAccess.objects.get(cluster=cluster))
    finally:
        ctx.close()
    return _text(page)


def test_the_recording_listener_does_see_secrets_sent_to_the_origin_they_were_entered_for(
    cluster, listeners, allow_loopback_urls
):
    """The positive control: at the origin the secrets were typed for, they do arrive."""
    home, _ = listeners
    client = _client(user("ana", Role.ANALYST))
    _onboard_at(client, cluster, home)
    _press_check_and_run_the_url_probes(client, cluster)
    assert home.secrets_received(SECRETS), "the secrets never reached their own origin: the test proves nothing"


def test_no_secret_follows_the_onboarding_urls_to_another_origin(cluster, listeners, allow_loopback_urls):
    home, elsewhere = listeners
    client = _client(user("ana", Role.ANALYST))
    _onboard_at(client, cluster, home)
    # another analyst, who does not know the secrets, points every URL elsewhere; the token field is left
    # empty ("keep the stored token")
    other = _client(user("eve", Role.ANALYST))
    moved = other.post(_url("onboard_access", cluster), {
        "login_host": "10.0.0.3", "login_port": "22", "inventory_source": "provider_api", "node_access": "scheduler",
        "compute_nodes": "", "api_base_url": f"{elsewhere.url}/api", "api_token": "", "max_concurrency": "4",
    }, follow=True)  # fmt: skip
    assert "the stored API token was removed" in _text(moved) and "Type the token again" in _text(moved)
    access = ClusterAccess.objects.get(cluster=cluster)
    assert not access.has_api_token and access.api_token_origin == ""
    settings_page = _text(_settings_post(other, cluster, elsewhere.url, follow=True))
    assert "is not sent there" in settings_page and "Enter it again on the tenants step" in settings_page
    for account in TenantAccount.objects.filter(cluster=cluster):
        # the old web origin is unbound once no URL uses it; the login host did not move, so SSH keeps it
        assert account.password_origins == ["ssh://10.0.0.3:22"]
    ctx = services.probe_context_build(cluster=cluster)
    assert all(str(ctx.settings[k]).startswith(elsewhere.url) for k in WEB_KEYS)
    words = _press_check_and_run_the_url_probes(other, cluster)
    assert elsewhere.authorizations() == [] and elsewhere.secrets_received(SECRETS) == []
    assert "password was not sent" in words and all(s not in words for s in SECRETS)
    # a token the other analyst types for the new address is bound to it: that one goes there, and only it
    _access_post(other, cluster, f"{elsewhere.url}/api", "tok-typed-for-elsewhere")
    assert ClusterAccess.objects.get(cluster=cluster).api_token_origin == elsewhere.url
    _press_check_and_run_the_url_probes(other, cluster)
    assert elsewhere.requests, "the check and the probes did ask the new address"
    assert set(elsewhere.authorizations()) == {"Bearer tok-typed-for-elsewhere"}
    assert elsewhere.secrets_received(SECRETS) == [] and home.requests == []


def test_no_secret_follows_the_admin_urls_to_another_origin(cluster, listeners, allow_loopback_urls, admin_client):
    home, elsewhere = listeners
    _onboard_at(_client(user("ana", Role.ANALYST)), cluster, home)
    access = ClusterAccess.objects.get(cluster=cluster)
    moved = admin_client.post(reverse("admin:probes_clusteraccess_change", args=[access.pk]), {
        "cluster": cluster.pk, "login_host": "10.0.0.3", "login_port": 22, "inventory_source": "provider_api",
        "node_access": "scheduler", "compute_nodes": "", "api_base_url": elsewhere.url, "api_token": "",
        "max_concurrency": 4, "settings": json.dumps({k: f"{elsewhere.url}/{k}" for k in WEB_KEYS}),
    }, follow=True)  # fmt: skip
    said = _text(moved)
    assert "the stored API token was removed" in said and "is not sent there" in said
    account = TenantAccount.objects.filter(cluster=cluster).first()
    tenant_page = _text(admin_client.get(reverse("admin:probes_tenantaccount_change", args=[account.pk])))
    assert "type the password again once the metrics and log URLs are set" in tenant_page
    ctx = services.probe_context_build(cluster=cluster)
    assert ctx.api is None and all(str(ctx.settings[k]).startswith(elsewhere.url) for k in WEB_KEYS)
    _press_check_and_run_the_url_probes(_client(user("ana2", Role.ANALYST)), cluster)
    assert elsewhere.authorizations() == [] and elsewhere.secrets_received(SECRETS) == []


def test_ftp_and_other_schemes_are_refused_at_the_forms_with_a_message(cluster, allow_loopback_urls, admin_client):
    client = _client(user("ana", Role.ANALYST))
    page = _access_post(client, cluster, "ftp://10.0.0.2/api", TOKEN)
    assert page.status_code == 200 and "only http:// and https:// addresses are accepted" in _text(page)
    assert not ClusterAccess.objects.filter(cluster=cluster).exists()
    assert _access_post(client, cluster, "http://10.0.0.2:8000").status_code == 302
    page = client.post(_url("onboard_settings", cluster), {"metrics_url": "ftp://10.0.0.2/prom", "scale": ""})
    assert page.status_code == 200 and "Metrics URL (Prometheus): only http:// and https:// addresses are accepted (ftp:// is not)" in _text(page)
    access = ClusterAccess.objects.get(cluster=cluster)
    refused = admin_client.post(reverse("admin:probes_clusteraccess_change", args=[access.pk]), {
        "cluster": cluster.pk, "login_host": "10.0.0.3", "login_port": 22, "compute_nodes": "",
        "api_base_url": "http://10.0.0.2:8000", "max_concurrency": 4,
        "settings": json.dumps({"logs_url": "ftp://10.0.0.2/logs"}),
    })  # fmt: skip
    assert refused.status_code == 200 and "settings.logs_url: only http:// and https://" in _text(refused)
    # an ftp:// stored before these checks: Check says so in words (it was a 500)
    ClusterAccess.objects.filter(pk=access.pk).update(settings={"metrics_url": "ftp://10.0.0.2/prom"})
    onboarding.tenant_account_add(cluster=cluster, label="tenant-a", username="a", password="pw-x")
    checked = client.post(_url("onboard_check", cluster))
    assert checked.status_code == 200 and "only http:// and https:// addresses are accepted" in _text(checked)


def test_loopback_is_refused_without_the_allow_setting_and_accepted_with_it(cluster, settings):
    client = _client(user("ana", Role.ANALYST))
    settings.OPGRADE_URL_ALLOW_NETWORKS = ()
    for url in ("http://127.0.0.1:9090", "http://localhost:9090", "http://169.254.169.254", "http://[::1]:8000"):
        page = _access_post(client, cluster, url, TOKEN)
        assert page.status_code == 200 and "is refused" in _text(page), url
    assert not ClusterAccess.objects.filter(cluster=cluster).exists()
    assert _access_post(client, cluster, "http://10.0.0.2:8000").status_code == 302
    page = client.post(_url("onboard_settings", cluster), {"metrics_url": "http://127.0.0.1:9090", "scale": ""})
    assert page.status_code == 200 and "127.0.0.1 is a loopback address" in _text(page)
    import ipaddress

    settings.OPGRADE_URL_ALLOW_NETWORKS = (ipaddress.ip_network("127.0.0.0/8"),)
    assert client.post(_url("onboard_settings", cluster), {"metrics_url": "http://127.0.0.1:9090", "scale": ""}
                       ).status_code == 302


def test_check_says_the_same_for_a_closed_port_a_redis_like_listener_and_a_non_json_answer(
    cluster, allow_loopback_urls
):
    port = closed_port()
    base = f"http://127.0.0.1:{port}"
    client = _client(user("ana", Role.ANALYST))
    assert _access_post(client, cluster, f"{base}/api", TOKEN).status_code == 302
    onboarding.tenant_account_add(cluster=cluster, label="tenant-a", username="a", password="pw-check")
    assert client.post(_url("onboard_settings", cluster), {"metrics_url": f"{base}/prom", "logs_url": f"{base}/logs",
                                                           "scale": ""}).status_code == 302
    account = TenantAccount.objects.get(cluster=cluster)
    client.post(_url("onboard_tenants", cluster), {"action": "password", "tenant": account.pk, "password": "pw-check"})

    def words() -> dict[str, str]:
        return {c.piece: f"{c.state}: {c.words}" for c in onboarding.cluster_onboarding_check(cluster=cluster)
                if c.piece in ("Provider API token", "Metrics URL", "Log URL")}

    closed = words()
    with RawListener(port):
        redis_like = words()
    import socketserver
    import threading
    from http.server import BaseHTTPRequestHandler

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<html>some internal dashboard</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    socketserver.TCPServer.allow_reuse_address = True
    server = socketserver.ThreadingTCPServer(("127.0.0.1", port), Page)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        not_json = words()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert closed == redis_like == not_json, (closed, redis_like, not_json)
    assert all("no answer" in w for w in closed.values()), closed
    assert "dashboard" not in json.dumps(not_json) and "ERR" not in json.dumps(redis_like)


def test_a_retention_finding_keeps_the_parsed_flags_never_a_foreign_body(cluster, listeners, allow_loopback_urls):
    home, _ = listeners
    client = _client(user("ana", Role.ANALYST))
    _onboard_at(client, cluster, home)
    probe = probe_get("retention_days")()

    def run() -> dict:
        ctx = services.probe_context_build(cluster=cluster)
        try:
            (finding,) = probe.execute(ctx, probe.targets(ctx)[0])
        finally:
            ctx.close()
        return {"outcome": finding.outcome, "summary": finding.summary, "evidence": finding.evidence}

    internal = json.dumps({"status": "success", "data": {"requirepass": "INTERNAL-BODY-1", "maxmemory": "x"}})
    for body in (internal.encode(), b"-ERR INTERNAL-BODY-2\r\n", b"<html>INTERNAL-BODY-3 admin console</html>"):
        home.answer_with(200, body, {"Content-Type": "application/json"})
        seen = run()
        assert seen["outcome"] is Outcome.ERROR and "INTERNAL-BODY" not in json.dumps(seen, default=str), seen
    home.answer_with(200, json.dumps({"status": "success", "data": {
        "storage.tsdb.retention.time": "30d", "web.external-url": "INTERNAL-BODY-4"}}).encode())
    seen = run()
    assert seen["outcome"] is not Outcome.ERROR and seen["evidence"]["flags"] == {"storage.tsdb.retention.time": "30d"}
    assert "INTERNAL-BODY" not in json.dumps(seen, default=str)
