"""The analysts' admin: frozen versions read-only, freeze/clone/diff/import pages call the services."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from rubric.models import Area, Criterion, RubricVersion
from rubric.services import criterion_update, rubric_version_clone, rubric_version_import
from tests.rubric.conftest import SHIPPED, SMALL

pytestmark = pytest.mark.django_db


@pytest.fixture
def frozen() -> RubricVersion:
    return rubric_version_import(text=SMALL, filename="small.yaml", freeze=True).rubric_version


def change_url(version: RubricVersion) -> str:
    return reverse("admin:rubric_rubricversion_change", args=[version.pk])


def test_a_frozen_version_page_is_read_only_and_says_why(admin_client, frozen):
    response = admin_client.get(change_url(frozen))
    assert response.status_code == 200
    body = response.content.decode()
    assert "This rubric version is frozen" in body
    assert 'name="_save"' not in body
    assert 'name="title"' not in body  # shown as text, not as an input
    assert reverse("admin:rubric_rubricversion_delete", args=[frozen.pk]) not in body


def test_posting_an_edit_of_a_frozen_version_is_refused(admin_client, frozen):
    response = admin_client.post(change_url(frozen), {"title": "changed", "name": "small", "version": "1.0"})
    assert response.status_code == 403
    frozen.refresh_from_db()
    assert frozen.title == "A small rubric"


def test_frozen_criteria_and_areas_cannot_be_changed_deleted_or_added(admin_client, frozen):
    criterion = Criterion.objects.get(rubric_version=frozen, key="node_ready")
    url = reverse("admin:rubric_criterion_change", args=[criterion.pk])
    assert admin_client.post(url, {"title": "changed"}).status_code == 403
    assert admin_client.post(reverse("admin:rubric_criterion_delete", args=[criterion.pk]), {"post": "yes"}).status_code == 403
    area = Area.objects.get(rubric_version=frozen, key="security")
    response = admin_client.post(reverse("admin:rubric_criterion_add"), {
        "rubric_version": frozen.pk, "area": area.pk, "key": "sneaky", "title": "x", "weight": 0.1,
        "evidence_kinds": '["doc_review"]', "direction": "higher", "scale": "linear", "anchor_best": 1,
        "anchor_worst": 0, "gate_threshold": 0.5, "position": 9,
    })
    assert response.status_code == 200
    assert "This rubric version is frozen" in response.content.decode()
    assert Criterion.objects.filter(rubric_version=frozen).count() == 3


def test_a_draft_is_editable_in_the_admin(admin_client):
    draft = rubric_version_import(text=SMALL, filename="small.yaml").rubric_version
    body = admin_client.get(change_url(draft)).content.decode()
    assert 'name="_save"' in body and 'name="title"' in body


def test_the_freeze_action_freezes_a_valid_draft_and_reports_an_invalid_one(admin_client):
    good = rubric_version_import(text=SMALL, filename="small.yaml").rubric_version
    bad = rubric_version_clone(source=good, version="bad")
    criterion_update(criterion=Criterion.objects.get(rubric_version=bad, key="attestation"), data={"weight": 0.9})
    response = admin_client.post(reverse("admin:rubric_rubricversion_changelist"), {
        "action": "freeze_selected", "_selected_action": [good.pk, bad.pk],
    }, follow=True)
    body = response.content.decode()
    assert "Froze small@1.0" in body
    assert "Not frozen: small@bad" in body and "must sum to 1.0" in body
    assert RubricVersion.objects.get(pk=good.pk).is_frozen
    assert not RubricVersion.objects.get(pk=bad.pk).is_frozen


def test_the_clone_page_makes_a_draft(admin_client, frozen):
    response = admin_client.post(reverse("admin:rubric_rubricversion_clone", args=[frozen.pk]), {"version": "1.1"})
    clone = RubricVersion.objects.get(version="1.1")
    assert response.status_code == 302 and response["Location"] == change_url(clone)
    assert clone.parent_id == frozen.pk and clone.status == "draft"


def test_the_diff_page_compares_with_the_parent(admin_client, frozen):
    clone = rubric_version_clone(source=frozen, version="1.1")
    criterion_update(criterion=Criterion.objects.get(rubric_version=clone, key="node_ready"),
                     data={"anchor_worst": 7200.0})
    body = admin_client.get(reverse("admin:rubric_rubricversion_diff", args=[clone.pk])).content.decode()
    assert "From small@1.0 to small@1.1" in body
    assert "criterion node_ready" in body and "anchor_worst" in body and "7200.0" in body
    assert reverse("admin:rubric_rubricversion_diff", args=[clone.pk]) in admin_client.get(change_url(clone)).content.decode()


def test_the_import_form_shows_file_line_and_field_and_writes_nothing(admin_client):
    bad = SMALL.replace("  direction: lower", "  direction: sideways")
    upload = SimpleUploadedFile("mine.yaml", bad.encode(), content_type="application/yaml")
    response = admin_client.post(reverse("admin:rubric_rubricversion_import"), {"file": upload})
    assert response.status_code == 200
    body = response.content.decode()
    line = next(i for i, text in enumerate(bad.splitlines(), 1) if "sideways" in text)
    assert f"mine.yaml:{line}: criteria[0].direction:" in body
    assert not RubricVersion.objects.exists()


def test_the_import_form_imports_and_freezes(admin_client):
    upload = SimpleUploadedFile("opgrade-2026.1.yaml", SHIPPED.read_bytes())
    response = admin_client.post(reverse("admin:rubric_rubricversion_import"), {"file": upload, "freeze": "on"})
    version = RubricVersion.objects.get(name="opgrade", version="2026.1")
    assert response.status_code == 302 and version.is_frozen


def test_the_changelists_run_a_fixed_number_of_queries(admin_client, frozen):
    for url in (reverse("admin:rubric_rubricversion_changelist"), reverse("admin:rubric_criterion_changelist"),
                reverse("admin:rubric_area_changelist")):
        with CaptureQueriesContext(connection) as few:
            assert admin_client.get(url).status_code == 200
        for i in range(3):
            rubric_version_clone(source=frozen, version=f"q{url[-12:-1]}{i}")
        with CaptureQueriesContext(connection) as many:
            assert admin_client.get(url).status_code == 200
        assert len(many) == len(few), url


def test_the_clone_action_leads_to_the_clone_page(admin_client, frozen):
    response = admin_client.post(reverse("admin:rubric_rubricversion_changelist"), {
        "action": "clone_selected", "_selected_action": [frozen.pk],
    })
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:rubric_rubricversion_clone", args=[frozen.pk])


def test_the_shipped_rubric_page_renders_read_only_in_a_bounded_number_of_queries(admin_client):
    version = rubric_version_import(text=SHIPPED.read_text(), filename="s", freeze=True).rubric_version
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(change_url(version))
    assert response.status_code == 200
    assert "tenant_metric_isolation" in response.content.decode()
    assert len(queries) < 30, [q["sql"] for q in queries]


def test_a_draft_with_many_criteria_renders_in_a_bounded_number_of_queries(admin_client):
    frozen = rubric_version_import(text=SHIPPED.read_text(), filename="s", freeze=True).rubric_version
    draft = rubric_version_clone(source=frozen, version="2026.2")
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(change_url(draft))
    assert response.status_code == 200 and 'name="_save"' in response.content.decode()
    assert len(queries) < 30, len(queries)
