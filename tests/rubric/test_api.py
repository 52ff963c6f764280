"""Rubric API v1: reads, YAML import/export, freeze, clone, diff; frozen edits answer 409."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from rubric.models import Criterion, RubricVersion
from rubric.services import rubric_version_clone, rubric_version_import
from tests.rubric.conftest import SHIPPED, SMALL

pytestmark = pytest.mark.django_db

BASE = "/api/v1/rubric-versions/"


@pytest.fixture
def analyst() -> APIClient:
    user = User.objects.create_user("ana", password="x" * 16, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(
        content_type__app_label="rubric", codename__in=["view_rubricversion", "add_rubricversion", "change_rubricversion"],
    ))
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def reader() -> APIClient:
    client = APIClient()
    client.force_authenticate(User.objects.create_user("rea", password="x" * 16))
    return client


@pytest.fixture
def frozen() -> RubricVersion:
    return rubric_version_import(text=SMALL, filename="small.yaml", freeze=True).rubric_version


@pytest.mark.parametrize("method,path", [
    ("get", BASE), ("get", f"{BASE}1/"), ("get", f"{BASE}1/export/"), ("post", f"{BASE}import/"),
    ("post", f"{BASE}1/freeze/"), ("post", f"{BASE}1/clone/"), ("get", "/api/v1/criteria/"),
])
def test_anonymous_requests_get_no_data(method, path, frozen):
    response = getattr(APIClient(), method)(path)
    assert response.status_code in (401, 403)
    assert b"small" not in response.content


def test_a_version_reads_with_its_areas_and_criteria(reader, frozen):
    response = reader.get(f"{BASE}{frozen.pk}/")
    assert response.status_code == 200
    body = response.json()
    assert body["label"] == "small@1.0" and body["status"] == "frozen" and len(body["fingerprint"]) == 64
    assert [a["key"] for a in body["areas"]] == ["provisioning", "security"]
    gate = next(c for c in body["criteria"] if c["key"] == "log_isolation")
    assert gate["is_gate"] and gate["gate_cap_tier"] == "bronze" and gate["area"] == "security"


def test_the_list_runs_a_fixed_number_of_queries(reader, frozen, django_assert_max_num_queries):
    for i in range(5):
        rubric_version_clone(source=frozen, version=f"c{i}")
    with django_assert_max_num_queries(6):
        assert len(reader.get(BASE).json()["results"]) == 6


def test_export_returns_the_canonical_yaml(reader):
    version = rubric_version_import(text=SHIPPED.read_text(), filename="s", freeze=True).rubric_version
    response = reader.get(f"{BASE}{version.pk}/export/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    assert response.content == SHIPPED.read_bytes()


def test_import_by_posting_yaml(analyst):
    response = analyst.post(f"{BASE}import/?freeze=true&filename=small.yaml", SMALL, content_type="application/yaml")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["created"] and body["rubric_version"]["status"] == "frozen"
    again = analyst.post(f"{BASE}import/", SMALL, content_type="application/yaml")
    assert again.status_code == 200 and not again.json()["created"]


def test_import_as_a_multipart_file(analyst):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("small.yaml", SMALL.encode(), content_type="application/yaml")
    response = analyst.post(f"{BASE}import/", {"file": upload}, format="multipart")
    assert response.status_code == 201, response.content


def test_a_malformed_upload_is_a_400_naming_file_line_and_field_and_writes_nothing(analyst):
    bad = SMALL.replace("cap_tier: bronze", "cap_tier: wood")
    response = analyst.post(f"{BASE}import/?filename=mine.yaml", bad, content_type="application/yaml")
    assert response.status_code == 400
    [error] = response.json()["errors"]
    line = next(i for i, text in enumerate(bad.splitlines(), 1) if "wood" in text)
    assert error == {"file": "mine.yaml", "line": line, "field": "criteria[1].gate.cap_tier",
                     "message": "'wood' is not one of: gold, silver, bronze, underperforming"}
    assert not RubricVersion.objects.exists()


def test_bad_yaml_syntax_is_a_400(analyst):
    response = analyst.post(f"{BASE}import/", "name: [oops\n", content_type="application/yaml")
    assert response.status_code == 400
    assert "bad YAML" in response.json()["errors"][0]["message"]
    assert not RubricVersion.objects.exists()


def test_a_label_conflict_is_a_409(analyst, frozen):
    response = analyst.post(f"{BASE}import/", SMALL.replace("A small rubric", "Other"), content_type="application/yaml")
    assert response.status_code == 409
    assert "already exists with different content" in response.json()["detail"]


def test_users_without_the_rubric_permission_cannot_write(reader, frozen):
    assert reader.post(f"{BASE}import/", SMALL, content_type="application/yaml").status_code == 403
    assert reader.post(f"{BASE}{frozen.pk}/clone/", {"version": "2"}, format="json").status_code == 403
    assert RubricVersion.objects.count() == 1


def test_freeze_and_clone_endpoints(analyst, frozen):
    response = analyst.post(f"{BASE}{frozen.pk}/clone/", {"version": "1.1"}, format="json")
    assert response.status_code == 201
    clone = response.json()
    assert clone["status"] == "draft" and clone["parent"] == "small@1.0"
    frozen_clone = analyst.post(f"{BASE}{clone['id']}/freeze/")
    assert frozen_clone.status_code == 200 and frozen_clone.json()["status"] == "frozen"
    diff = analyst.get(f"{BASE}{clone['id']}/diff/").json()
    assert diff["from"] == "small@1.0" and diff["criteria_changed"] == []


def test_editing_a_frozen_version_or_criterion_is_a_409(analyst, frozen):
    response = analyst.patch(f"{BASE}{frozen.pk}/", {"title": "changed"}, format="json")
    assert response.status_code == 409
    assert "is frozen" in response.json()["detail"]
    criterion = Criterion.objects.get(rubric_version=frozen, key="node_ready")
    response = analyst.patch(f"/api/v1/criteria/{criterion.pk}/", {"weight": 0.5}, format="json")
    assert response.status_code == 409
    assert "Clone it into a new draft" in response.json()["detail"]
    criterion.refresh_from_db()
    assert criterion.weight == 1.0


def test_editing_a_draft_criterion_works(analyst, frozen):
    clone = rubric_version_clone(source=frozen, version="1.1")
    criterion = Criterion.objects.get(rubric_version=clone, key="node_ready")
    response = analyst.patch(f"/api/v1/criteria/{criterion.pk}/", {"anchor_worst": 7200.0}, format="json")
    assert response.status_code == 200
    assert analyst.get(f"{BASE}{clone.pk}/diff/").json()["criteria_changed"] == ["node_ready"]
