"""The cluster onboarding flow (issue 15.3): roles, 404s, validation in words, write-only secrets,
named settings, the admin history, and checks that never call an unchecked piece working.

The real checks against a live cluster (logins, API token, metrics and log URLs) run in the
browser test on a fresh testbed (tests/workbench/test_onboarding_browser.py)."""

from __future__ import annotations

import html

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client
from django.urls import reverse

from config.access import Role
from probes import onboarding
from probes.models import ClusterAccess, HostKeyPin, TenantAccount
from tests.factories import ClusterFactory, ProviderFactory
from tests.workbench.builders import user

pytestmark = pytest.mark.django_db

SECRET_TOKEN = "tok-SHOULD-NEVER-SHOW-1234"
HTTP_PASSWORD = "pw-SHOULD-NEVER-SHOW-5678"


def _client(u) -> Client:
    c = Client()
    c.force_login(u)
    return c


@pytest.fixture
def cluster(db):
    return ClusterFactory(provider=ProviderFactory(slug="newco", name="NewCo"), name="main")


@pytest.fixture
def analyst(db):
    return user("ana", Role.ANALYST)


def _text(response) -> str:
    return html.unescape(response.content.decode())


def _url(name: str, cluster) -> str:
    return reverse(f"workbench:{name}", args=[cluster.pk])


def _access(client: Client, cluster, **over) -> object:
    data = {"login_host": "10.0.0.3", "login_port": "22", "inventory_source": "scheduler", "node_access": "scheduler",
            "compute_nodes": "", "api_base_url": "http://10.0.0.2:8000", "api_token": SECRET_TOKEN,
            "max_concurrency": "4", **over}
    return client.post(_url("onboard_access", cluster), data)


def test_analysts_act_publishers_read_the_overview_reviewers_never_get_in(cluster, analyst):
    publisher, reviewer = user("pub", Role.PUBLISHER), user("rev", Role.REVIEWER)
    assert _client(analyst).get(_url("onboard", cluster)).status_code == 200
    assert _client(analyst).get(_url("onboard_access", cluster)).status_code == 200
    assert _client(publisher).get(_url("onboard", cluster)).status_code == 200
    assert _client(publisher).get(_url("onboard_access", cluster)).status_code == 403
    assert _access(_client(publisher), cluster).status_code == 403
    assert _client(reviewer).get(_url("onboard", cluster)).status_code == 403
    assert not ClusterAccess.objects.exists()


def test_a_cluster_id_that_does_not_exist_is_404(analyst):
    assert _client(analyst).get(reverse("workbench:onboard_access", args=[987654])).status_code == 404


def test_the_cluster_page_links_to_the_onboarding_flow(cluster, analyst):
    page = _client(analyst).get(reverse("admin:providers_cluster_change", args=[cluster.pk]))
    assert _url("onboard", cluster) in _text(page)


def test_access_with_the_port_inside_the_host_is_refused_in_words_and_nothing_is_saved(cluster, analyst):
    page = _access(_client(analyst), cluster, login_host="10.0.0.3:22")
    assert page.status_code == 200
    assert "put the port in the login port field" in _text(page)
    assert not ClusterAccess.objects.exists() and not LogEntry.objects.exists()


def test_access_is_saved_with_the_token_encrypted_never_shown_and_recorded_in_the_history(cluster, analyst):
    client = _client(analyst)
    response = _access(client, cluster)
    assert response.status_code == 302 and response["Location"] == _url("onboard_tenants", cluster)
    access = ClusterAccess.objects.get(cluster=cluster)
    assert access.login_host == "10.0.0.3" and access.has_api_token
    assert SECRET_TOKEN not in access.api_token_encrypted
    for name in ("onboard", "onboard_access", "onboard_check", "onboard_settings"):
        assert SECRET_TOKEN not in _text(client.get(_url(name, cluster)))
    entry = LogEntry.objects.get()
    assert entry.user == analyst and entry.change_message == "Onboarding: access created"
    assert SECRET_TOKEN not in entry.change_message


def test_tenants_need_a_secret_a_readable_key_and_a_label_of_their_own(cluster, analyst):
    client = _client(analyst)
    _access(client, cluster)
    url = _url("onboard_tenants", cluster)
    page = client.post(url, {"action": "add", "label": "tenant-a", "username": "alice", "private_key": "not a key"})
    assert page.status_code == 200 and not TenantAccount.objects.exists()
    assert "errornote" in _text(page)
    assert client.post(url, {"action": "add", "label": "tenant-a", "username": "alice"}).status_code == 200
    assert not TenantAccount.objects.exists()
    ok = client.post(url, {"action": "add", "label": "tenant-a", "username": "alice", "password": HTTP_PASSWORD})
    assert ok.status_code == 302
    again = client.post(url, {"action": "add", "label": "tenant-a", "username": "bob", "password": "x"})
    assert "has a tenant labelled 'tenant-a' already" in _text(again)
    account = TenantAccount.objects.get()
    assert account.username == "alice" and HTTP_PASSWORD not in account.password_encrypted
    body = _text(client.get(url))
    assert HTTP_PASSWORD not in body and "HTTP login for the metrics and log URLs" in body


def test_removing_another_clusters_tenant_or_pin_is_404_and_removes_nothing(cluster, analyst):
    other = ClusterFactory(provider=ProviderFactory(slug="other"), name="other")
    foreign = TenantAccount.objects.create(cluster=other, label="t", username="u", password_encrypted="x")
    pin = HostKeyPin.objects.create(cluster=other, host="h", port=22, key_type="ssh-ed25519", fingerprint="SHA256:abc")
    client = _client(analyst)
    _access(client, cluster)
    assert client.post(_url("onboard_tenants", cluster), {"action": "remove", "tenant": foreign.pk}).status_code == 404
    assert client.post(_url("onboard_tenants", cluster), {"action": "remove", "tenant": "x"}).status_code == 404
    assert client.post(_url("onboard_hostkeys", cluster), {"action": "unpin", "pin": pin.pk}).status_code == 404
    assert TenantAccount.objects.filter(pk=foreign.pk).exists() and HostKeyPin.objects.filter(pk=pin.pk).exists()


def test_a_pin_can_be_removed_again_and_the_history_says_so(cluster, analyst):
    client = _client(analyst)
    _access(client, cluster)
    pin = HostKeyPin.objects.create(cluster=cluster, host="10.0.0.3", port=22, key_type="ssh-ed25519",
                                    fingerprint="SHA256:abc")
    assert client.post(_url("onboard_hostkeys", cluster), {"action": "unpin", "pin": pin.pk}).status_code == 302
    assert not HostKeyPin.objects.exists()
    assert LogEntry.objects.filter(change_message__contains="host key unpinned: 10.0.0.3:22").exists()


def test_a_key_the_host_does_not_offer_is_never_pinned(cluster, analyst):
    client = _client(analyst)
    _access(client, cluster, login_host="127.0.0.1", login_port="1")  # nothing listens: nothing is offered
    forged = "127.0.0.1|1|ssh-ed25519|SHA256:forged"
    client.post(_url("onboard_hostkeys", cluster), {"pin": forged})
    assert not HostKeyPin.objects.exists()


def test_settings_are_named_fields_validated_in_words_and_keep_what_they_do_not_name(cluster, analyst):
    client = _client(analyst)
    _access(client, cluster)
    access = ClusterAccess.objects.get()
    access.settings = {"custom_key": 7, "facts": {"region_class": "eu"}}
    access.save()
    url = _url("onboard_settings", cluster)
    form = _text(client.get(url))
    assert "Metrics URL (Prometheus)" in form and "Log query URL" in form and "custom_key" in form
    bad = client.post(url, {"metrics_url": "10.0.0.2/prometheus", "shared_log_dirs": "var/log"})
    text = _text(bad)
    assert bad.status_code == 200 and "start with http:// or https://" in text and "must be an absolute path" in text
    assert ClusterAccess.objects.get().settings == {"custom_key": 7, "facts": {"region_class": "eu"}}
    unknown = client.post(url, {"overrides": "no_such_probe.x = 1"})
    assert "no probe of the catalog named 'no_such_probe'" in _text(unknown)
    wrong_type = client.post(url, {"overrides": "metrics_freshness.visible_timeout_s = soon"})
    assert "give a whole number" in _text(wrong_type)
    ok = client.post(url, {
        "metrics_url": "http://10.0.0.2/prometheus", "logs_url": "http://10.0.0.2/logs", "syslog_addr": "10.0.0.2:514",
        "shared_log_dirs": "/var/log/shared\n/srv/logs", "http_users": "tenant-a=alice-web", "scale": "testbed",
        "overrides": "metrics_freshness.visible_timeout_s = 60\nclustermax_audit.allow_outbound = false",
    })
    assert ok.status_code == 302
    assert ClusterAccess.objects.get().settings == {
        "custom_key": 7, "facts": {"region_class": "eu", "scale": "testbed"},
        "metrics_url": "http://10.0.0.2/prometheus", "logs_url": "http://10.0.0.2/logs", "syslog_addr": "10.0.0.2:514",
        "shared_log_dirs": ["/var/log/shared", "/srv/logs"], "http_users": {"tenant-a": "alice-web"},
        "metrics_freshness.visible_timeout_s": 60, "clustermax_audit.allow_outbound": False,
    }
    assert "metrics_freshness.visible_timeout_s = 60" in _text(client.get(url))


def test_a_check_with_nothing_pinned_or_set_reports_each_piece_not_checked_never_working(cluster, analyst):
    client = _client(analyst)
    _access(client, cluster, api_base_url="", api_token="")
    onboarding.tenant_account_add(cluster=cluster, label="tenant-a", username="alice", password=HTTP_PASSWORD)
    page = client.post(_url("onboard_check", cluster))
    body = _text(page)
    assert page.status_code == 200 and "works</td>" not in body and "Not every piece works yet" in body
    checks = onboarding.cluster_onboarding_check(cluster=cluster)
    assert {c.piece: c.state for c in checks} == {
        "Login node": onboarding.NOT_CHECKED, "Provider API token": onboarding.NOT_CHECKED,
        "Metrics URL": onboarding.NOT_CHECKED, "Log URL": onboarding.NOT_CHECKED,
    }
    assert LogEntry.objects.filter(change_message__startswith="Onboarding: checks:").exists()


def test_checking_before_access_exists_says_what_to_do_first(cluster, analyst):
    page = _client(analyst).post(_url("onboard_check", cluster), follow=True)
    assert "Save the cluster's access (login host and port) first." in _text(page)


def test_the_evidence_step_lists_what_each_cycle_still_lacks_and_offers_the_run(cluster, analyst):
    from tests.factories import AreaFactory, CriterionFactory, CycleFactory

    area = AreaFactory(key="security")
    CriterionFactory(area=area, key="log-iso", title="Tenant log isolation", position=0, evidence_kinds=["probe"],
                     probe_id="tenant_log_isolation")
    CriterionFactory(area=area, key="docs", title="Documentation", position=1, evidence_kinds=["doc_review"])
    cycle = CycleFactory(rubric_version=area.rubric_version, slug="c1", providers=[cluster.provider])
    body = _text(_client(analyst).get(_url("onboard_evidence", cluster)))
    assert cycle.name in body and "1 of 1 probes have no finished run for this cluster: tenant_log_isolation" in body
    assert "Tenant log isolation (log-iso; takes probe)" in body and "Documentation (docs; takes doc review)" in body
    assert reverse("workbench:probes_run", args=["c1"]) in body and "Run the missing probes for NewCo" in body
    publisher = _text(_client(user("pub", Role.PUBLISHER)).get(_url("onboard_evidence", cluster)))
    assert "Tenant log isolation" in publisher and "Run the missing probes" not in publisher
