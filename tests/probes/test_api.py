"""Probes API: secrets go in and never come out; runs start through the service; reads need a login."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from probes.models import ProbeRun, TenantAccount
from tests.factories import ClusterFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(admin_user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


def test_a_tenant_account_is_created_with_a_key_that_is_never_returned(
    api: APIClient, user_key: Path
) -> None:
    cluster = ClusterFactory()
    key = user_key.read_text()
    created = api.post(
        "/api/v1/tenant-accounts/",
        {"cluster": cluster.pk, "label": "tenant-a", "username": "alice", "private_key": key},
        format="json",
    )
    assert created.status_code == 201, created.content
    listed = api.get("/api/v1/tenant-accounts/")
    for response in (created, listed):
        body = response.content.decode()
        assert key.splitlines()[1] not in body and "private_key" not in body
    assert listed.json()["results"][0]["auth_kind"] == "private key"
    assert TenantAccount.objects.get().private_key_encrypted


def test_a_bad_key_is_a_400_and_writes_nothing(api: APIClient) -> None:
    cluster = ClusterFactory()
    response = api.post(
        "/api/v1/tenant-accounts/",
        {"cluster": cluster.pk, "label": "tenant-a", "username": "alice", "private_key": "nope"},
        format="json",
    )
    assert response.status_code == 400 and not TenantAccount.objects.exists()


def test_runs_start_through_the_api_and_unknown_probes_are_refused(api: APIClient) -> None:
    cluster = ClusterFactory()
    bad = api.post("/api/v1/probe-runs/start/", {"cluster": cluster.pk, "probes": ["nope"]}, format="json")
    assert bad.status_code == 400 and not ProbeRun.objects.exists()
    ok = api.post(
        "/api/v1/probe-runs/start/", {"cluster": cluster.pk, "probes": ["ssh_reachable"]}, format="json"
    )
    assert ok.status_code == 201 and ok.json()[0]["status"] == "pending"
    assert api.get("/api/v1/probe-runs/").json()["count"] == 1


def test_anonymous_and_unprivileged_users_cannot_start_runs(admin_user) -> None:  # type: ignore[no-untyped-def]
    cluster = ClusterFactory()
    anonymous = APIClient()
    assert anonymous.get("/api/v1/probe-runs/").status_code in (401, 403)
    plain = APIClient()
    plain.force_authenticate(get_user_model().objects.create_user("viewer", password="x-Long-pass-1"))
    response = plain.post(
        "/api/v1/probe-runs/start/", {"cluster": cluster.pk, "probes": ["ssh_reachable"]}, format="json"
    )
    assert response.status_code == 403 and not ProbeRun.objects.exists()
