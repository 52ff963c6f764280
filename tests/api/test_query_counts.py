"""Every API list answers in a number of queries that does not grow with its page (issue 11, item 16).

Each list is read with ``?limit=1`` and with ``?limit=20`` over a world holding at least two
rows of it; the second must cost exactly as many queries as the first. A serializer that
reads a relation or computes something per row (the assignments' peer scores did) fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.api.test_bad_input import LISTS
from tests.factories import AreaFactory, CriterionFactory, RubricVersionFactory
from tests.reviews.conftest import FAST_HASHERS
from tests.reviews.world import World, citation, world_build

pytestmark = pytest.mark.django_db


def _second_rows(w: World) -> None:
    """The lists the reviews world fills with one row only get a second one."""
    from django.apps import apps

    from reviews import services
    from reviews.models import ConflictOfInterest

    u, o = w.users, w.objects
    ConflictOfInterest.objects.create(reviewer=u["reviewer2"], provider=w.a, note="a second conflict")
    apps.get_model("reports", "Report").objects.create(
        cycle=w.cycle_b_only, status="draft", content={}, content_hash="2" * 64
    )
    CriterionFactory(area=AreaFactory(rubric_version=RubricVersionFactory(version="second")))
    snapshot_model = apps.get_model("ratings", "ScoreSnapshot")
    snapshot = snapshot_model.objects.create(
        cycle=w.cycle, rubric_version=w.cycle.rubric_version, engine_version="test", seed=2, bootstrap_size=10,
        inputs_hash="c" * 64, content_hash="d" * 64, result={},
    )
    apps.get_model("ratings", "TierAssignment").objects.create(
        snapshot=snapshot, provider=w.a, tier="gold", coverage=0.9, composite=0.7
    )
    csv_text = (
        "provider_slug,area_or_criterion,rating,source,respondent_org,comment,date\n"
        "alpha,reliability,4,survey,Second Org,second import,2026-11-03\n"
    )
    assert services.feedback_import(cycle=w.cycle, text=csv_text, filename="second.csv", by=u["analyst"],
                                    dry_run=False).ok
    services.review_submit(assignment=o["a_assignment"], by=u["reviewer"], score=3, citations=citation("A quote"))
    services.reconciliation_create(cycle=w.cycle, provider=w.a, criterion=w.criterion, by=u["analyst"])


@pytest.fixture(scope="module")
def rich_world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    from django.test import override_settings

    with django_db_blocker.unblock(), override_settings(PASSWORD_HASHERS=FAST_HASHERS), transaction.atomic():
        built = world_build()
        _second_rows(built)
        yield built
        transaction.set_rollback(True)


def _count(client: APIClient, url: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(queries), len(response.json()["results"])


@pytest.mark.parametrize("url", LISTS)
def test_a_list_costs_the_same_queries_for_one_row_and_for_twenty(rich_world: World, url: str) -> None:
    client = APIClient()
    client.force_authenticate(rich_world.users["admin"])
    client.get(f"{url}?limit=1")  # warm per-process caches (content types, roles)
    one, _ = _count(client, f"{url}?limit=1")
    twenty, rows = _count(client, f"{url}?limit=20")
    assert rows >= 2, f"{url}: the world needs two rows of this list to tell"
    assert twenty == one, f"{url}: {one} queries for one row, {twenty} for {rows}"


@pytest.mark.parametrize("role", ["reviewer", "analyst"])
def test_the_assignments_list_reads_peer_scores_in_one_query_for_the_page(rich_world: World, role: str) -> None:
    client = APIClient()
    client.force_authenticate(rich_world.users[role])
    client.get("/api/v1/assignments/?limit=1")
    one, _ = _count(client, "/api/v1/assignments/?limit=1")
    twenty, rows = _count(client, "/api/v1/assignments/?limit=20")
    assert rows >= 2 and twenty == one, (one, twenty, rows)


@pytest.mark.parametrize("role", ["reviewer", "reviewer2", "analyst"])
def test_the_page_shows_the_same_peer_scores_as_each_detail(rich_world: World, role: str) -> None:
    client = APIClient()
    client.force_authenticate(rich_world.users[role])
    rows = client.get("/api/v1/assignments/?limit=50").json()["results"]
    assert rows
    for row in rows:
        assert client.get(f"/api/v1/assignments/{row['id']}/").json()["peer_scores"] == row["peer_scores"]
    if role == "reviewer2":  # both of their units have the first and second reviews in: not blind any more
        assert all(row["peer_scores"] is not None for row in rows)
