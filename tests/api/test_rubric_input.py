"""Rubric import and export under hostile input: bounded YAML, safe version labels (issue 11, items 7, 9)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from rubric.models import RubricVersion
from rubric.services import rubric_version_import
from tests.rubric.conftest import SMALL

pytestmark = pytest.mark.django_db

IMPORT = "/api/v1/rubric-versions/import/"


@pytest.fixture
def analyst() -> APIClient:
    user = User.objects.create_user("ana", password="x" * 16, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(
        content_type__app_label="rubric", codename__in=["view_rubricversion", "add_rubricversion", "change_rubricversion"],
    ))
    client = APIClient()
    client.force_authenticate(user)
    return client


def _import(client: APIClient, text: str) -> Any:
    return client.post(IMPORT, text, content_type="application/yaml")


@pytest.mark.parametrize("nesting", ["[" * 50_000 + "]" * 50_000, "a:\n" + "".join(
    "  " * i + f"k{i}:\n" for i in range(1, 200)) + "  " * 200 + "x: 1\n"])
def test_deeply_nested_yaml_is_a_400_naming_the_line(analyst: APIClient, nesting: str) -> None:
    response = _import(analyst, nesting)
    assert response.status_code == 400, response.content[:300]
    assert "deeper than" in response.json()["errors"][0]["message"]
    assert not RubricVersion.objects.exists()


@pytest.mark.parametrize("number", ["9" * 400, "1" + "0" * 5000, "1e999999"])
def test_a_huge_number_in_a_rubric_is_a_400_not_an_overflow(analyst: APIClient, number: str) -> None:
    text = SMALL.replace("bootstrap_size: 200", f"bootstrap_size: {number}")
    response = _import(analyst, text)
    assert response.status_code == 400, response.content[:300]
    assert any(e["field"] == "scoring.bootstrap_size" for e in response.json()["errors"])
    assert not RubricVersion.objects.exists()


@pytest.mark.parametrize("version", ['"1.0\\r\\nX-Evil: yes"', "'1\"0'", '"1.0\\n"', '"a b"'])
def test_a_version_with_line_breaks_or_quotes_is_refused_at_import(analyst: APIClient, version: str) -> None:
    response = _import(analyst, SMALL.replace('version: "1.0"', f"version: {version}"))
    assert response.status_code == 400, response.content[:300]
    assert [e["field"] for e in response.json()["errors"]] == ["version"]


def test_a_clone_with_a_line_break_in_its_version_is_refused(analyst: APIClient) -> None:
    source = rubric_version_import(text=SMALL, filename="small.yaml", freeze=True).rubric_version
    response = analyst.post(f"/api/v1/rubric-versions/{source.pk}/clone/", {"version": "2\r\nX: y"}, format="json")
    assert response.status_code == 400
    assert RubricVersion.objects.count() == 1


def test_an_export_header_is_built_safely_even_for_a_stored_odd_label(analyst: APIClient) -> None:
    # Versions stored before the label rule (or written around it) still export.
    version = rubric_version_import(text=SMALL, filename="small.yaml").rubric_version
    RubricVersion.objects.filter(pk=version.pk).update(version='1"0\r\nX-Evil: yes')
    response = analyst.get(f"/api/v1/rubric-versions/{version.pk}/export/")
    assert response.status_code == 200
    header = response["Content-Disposition"]
    assert "\r" not in header and "\n" not in header and header.startswith("attachment; filename")
    assert "X-Evil" not in response.headers


def test_bidi_controls_in_a_rubric_title_are_refused(analyst: APIClient) -> None:
    response = _import(analyst, SMALL.replace("title: A small rubric", "title: A \u202esmall rubric"))
    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == ["title"]
