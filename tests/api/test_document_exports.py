"""The YAML exports answer a client that asks for what the schema documents (issue 24, item 9).

The schema documents ``application/yaml`` for rubric and grade exports; DRF's content negotiation
used to refuse ``Accept: application/yaml`` with 406 (no API renderer speaks YAML). Their errors
stay JSON, as every API error is.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("accept", ["application/yaml", "application/json", "*/*"])
def test_a_rubric_export_answers_yaml_whatever_the_client_accepts(world: Any, as_role: Any, accept: str) -> None:
    version = world.cycle.rubric_version
    response = as_role("analyst").get(f"/api/v1/rubric-versions/{version.pk}/export/", HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    document = yaml.safe_load(response.content)
    assert document["format"] == "opgrade-rubric/1" and document["version"] == version.version


def test_a_grade_export_answers_yaml_to_a_client_that_asks_for_yaml(world: Any, as_role: Any) -> None:
    grade = world.objects["grade"]
    response = as_role("analyst").get(f"/api/v1/grade-definitions/{grade.pk}/export/", HTTP_ACCEPT="application/yaml")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/yaml")
    assert yaml.safe_load(response.content)["format"] == "opgrade-grade/1"


def test_an_export_error_is_json_even_when_yaml_was_asked_for(as_role: Any) -> None:
    response = as_role("analyst").get("/api/v1/rubric-versions/999999/export/", HTTP_ACCEPT="application/yaml")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json" and "detail" in response.json()
