"""Fixtures for the grades tests: the default rubric, a scored sample cycle, grades that read it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User

from config.access import Role

ROOT = Path(__file__).resolve().parents[2]
RUBRIC_2026_2 = ROOT / "rubric" / "data" / "opgrade-2026.2.yaml"
GRADES = ROOT / "grades" / "data"

# A grade for the sample cycle (rubric opgrade@2026.1, GPU-less clusters): the tier, the log
# isolation gate (the sample's provider 1 fails it) and the node-ready p95 the sample measures.
SAMPLE_GRADE = """\
format: opgrade-grade/1
name: sample-t
version: '1'
title: Sample grade T
rubric: opgrade@2026.1
hardware: {gpu_model: none}
scope: {orchestrator: slurm}
requirements:
- {key: tier, title: Rated Bronze or better, kind: tier, min_tier: bronze}
- {key: log_isolation, title: Tenant log isolation gate passes, kind: gate, gate: tenant_log_isolation}
- {key: provisioning, title: Node ready p95 within 1 hour, kind: provisioning_time, probe: {id: node_ready_time, metric: p95_seconds}, max: 3600, unit: s}
contract: {term: on-demand, support: best-effort}
"""


@pytest.fixture
def rubric_2026_2(db):
    from rubric.services import rubric_version_import

    return rubric_version_import(text=RUBRIC_2026_2.read_text(), filename=RUBRIC_2026_2.name, freeze=True).rubric_version


@pytest.fixture
def testbed_grade(rubric_2026_2):
    from grades.services import grade_definition_import

    path = GRADES / "testbed-slurm-t1.yaml"
    return grade_definition_import(text=path.read_text(), filename=path.name, freeze=True).grade


def role_user(username: str, role: Role | None) -> User:
    user = User.objects.create_user(username, password="not-used-1234567", is_staff=role not in (None, Role.PROVIDER))
    if role is not None:
        user.groups.add(Group.objects.get_or_create(name=role.value)[0])
    return User.objects.get(pk=user.pk)


@pytest.fixture
def publisher(db) -> User:
    return role_user("pia-publisher", Role.PUBLISHER)
