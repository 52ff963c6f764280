"""Project-level guarantees: migrations are complete, lint is clean, the API is closed."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_every_model_change_has_a_migration():
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)


def test_ruff_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True, timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/providers/", "/api/v1/clusters/", "/api/v1/cycles/", "/api/schema/"])
def test_anonymous_requests_get_no_data(client, path):
    response = client.get(path)
    assert response.status_code in (401, 403)


@pytest.mark.django_db
def test_the_schema_documents_the_v1_api(admin_client):
    response = admin_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    assert "/api/v1/providers/" in response.content.decode()
