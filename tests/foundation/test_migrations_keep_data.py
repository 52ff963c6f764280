"""Migrations apply on an existing database with data (issue 12).

The database is taken back to the old head (before providers existed, ScoreOverride lived in
reviews and RightOfReply.report_id was a plain integer), rows are added there through the
old models, and it is migrated forward again: every row is still there, every snapshot and
report still verifies against its recorded hash, the engine recomputes the same snapshot,
content types (and so permissions) follow the moved models, and a reply that named a report
that does not exist no longer points anywhere.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from config.access import PUBLISHER_GROUP
from providers.models import Cluster, Cycle, Provider
from ratings.engine.hashing import canonical_dumps, sha256_hex
from ratings.models import CustomerFeedback, DocReview, ScoreOverride, ScoreSnapshot, TierAssignment
from ratings.sample import sample_cycle_create
from ratings.services import cycle_scores_compute
from reports import context as report_context
from reports import services as report_services
from reports.models import Report
from reviews.models import RightOfReply

pytestmark = pytest.mark.django_db(transaction=True)

# The last migration of each app before this moves.
OLD_HEAD = [
    ("ratings", "0003_score_snapshot_triggers"),
    ("probes", "0003_finding_immutable_and_sweeper"),
    ("reviews", "0004_evidence_rows"),
    ("reports", "0004_report_source"),
]
MOVED = {"providers": ("provider", "cluster", "cycle"), "ratings": ("scoreoverride",)}


def _executor() -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    return executor


def _counts() -> dict[str, int]:
    from probes.models import Finding, ProbeRun

    models = (Provider, Cluster, Cycle, Cycle.providers.through, ProbeRun, Finding, DocReview, CustomerFeedback,
              ScoreSnapshot, TierAssignment, ScoreOverride, Report, RightOfReply)
    return {m._meta.label: m.objects.count() for m in models}


def _snapshot_verifies(snapshot: ScoreSnapshot) -> bool:
    return sha256_hex(canonical_dumps(snapshot.result)) == snapshot.content_hash


def _world() -> dict[str, object]:
    """A scored sample cycle, its published report, a draft in fact-check, an override and a reply."""
    cycle = sample_cycle_create(slug="mig-2026q4", providers=2, seed=7)
    publisher = User.objects.create_user("mig-publisher", is_staff=True)
    publisher.groups.add(Group.objects.get_or_create(name=PUBLISHER_GROUP)[0])
    second = User.objects.create_user("mig-publisher-2", is_staff=True)
    provider = cycle.providers.order_by("slug").first()
    criterion = cycle.rubric_version.criteria.order_by("key").first()
    ScoreOverride.objects.create(  # evidence the engine and the report read from the moved model
        cycle=cycle, provider=provider, criterion=criterion, value=0.5, justification="documented outage",
        proposed_by=publisher, decided_by=second, status=ScoreOverride.Status.APPROVED,
        decided_at=dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
    )
    snapshot = cycle_scores_compute(cycle=cycle)
    published = report_services.report_draft_create_from_snapshot(snapshot=snapshot)
    report_services.report_fact_check_open(report=published)
    published = report_services.report_publish(report=published, user=User.objects.get(pk=publisher.pk))
    draft = report_services.report_draft_create_from_snapshot(snapshot=snapshot, user=publisher)
    report_services.report_fact_check_open(report=draft)
    reply = RightOfReply.objects.create(
        provider=provider, user=publisher, cycle=cycle, report=draft, fact_ref="probe:ssh_reachable", text="t"
    )
    return {"cycle": cycle, "snapshot": snapshot, "published": published, "draft": draft, "reply": reply}


@pytest.mark.timeout(1800)  # two full passes over the migration graph (minutes on a busy machine)
def test_migrating_back_to_the_old_head_and_forward_keeps_every_row_and_every_hash():
    world = _world()
    before = _counts()
    snapshots = {s.pk: s.content_hash for s in ScoreSnapshot.objects.all()}
    reports = {r.pk: r.content_hash for r in Report.objects.all()}
    assert all(_snapshot_verifies(s) for s in ScoreSnapshot.objects.all())  # the check below can pass
    assert world["published"].content["overrides"]  # the approved override reached the document

    executor = _executor()
    leaves = executor.loader.graph.leaf_nodes()
    try:
        old = executor.migrate([*OLD_HEAD, ("providers", None)]).apps
        # At the old head the rows are read through the old models, from the same tables.
        assert old.get_model("ratings", "Provider").objects.count() == before["providers.Provider"]
        assert old.get_model("reviews", "ScoreOverride").objects.count() == before["ratings.ScoreOverride"]
        # Rows written at the old head: a provider, and a reply naming a report that never existed.
        old_provider = old.get_model("ratings", "Provider").objects.create(name="Old Head Cloud", slug="old-head")
        old.get_model("reviews", "RightOfReply").objects.create(
            provider_id=old_provider.pk, user_id=world["reply"].user_id, cycle_id=world["cycle"].pk,
            report_id=987654321, fact_ref="section:summary", text="written before the foreign key",
            created_at=dt.datetime(2026, 11, 30, tzinfo=dt.UTC),
        )
    finally:
        _executor().migrate(leaves)

    after = _counts()
    assert after == {**before, "providers.Provider": before["providers.Provider"] + 1,
                     "reviews.RightOfReply": before["reviews.RightOfReply"] + 1}
    assert Provider.objects.filter(slug="old-head").exists()
    dangling = RightOfReply.objects.get(fact_ref="section:summary")
    assert dangling.report_id is None and dangling.text == "written before the foreign key"
    assert RightOfReply.objects.get(pk=world["reply"].pk).report == world["draft"]

    assert {s.pk: s.content_hash for s in ScoreSnapshot.objects.all()} == snapshots
    assert all(_snapshot_verifies(s) for s in ScoreSnapshot.objects.all())
    assert {r.pk: r.content_hash for r in Report.objects.all()} == reports
    assert all(report_context.content_hash(r.content) == r.content_hash for r in Report.objects.all())
    # The evidence is read through the moved models and the new selectors: the same snapshot.
    again = cycle_scores_compute(cycle=Cycle.objects.get(pk=world["cycle"].pk), seed=world["snapshot"].seed)
    assert again.pk == world["snapshot"].pk

    for app_label, models in MOVED.items():
        for model in models:
            assert ContentType.objects.filter(app_label=app_label, model=model).count() == 1
    assert not ContentType.objects.filter(app_label="ratings", model__in=MOVED["providers"]).exists()
    assert not ContentType.objects.filter(app_label="reviews", model="scoreoverride").exists()
