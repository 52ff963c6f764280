"""The scoring engine wired into Django: evidence selector, snapshot service, command, admin, API.

Real PostgreSQL (pytest-django), the default rubric imported and frozen through the rubric
services, evidence written as the probes/ratings services and ORM would write it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import io
import math

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from config.access import Role
from config.immutability import ImmutableError
from probes.models import Finding, ProbeRun
from ratings.engine.hashing import canonical_dumps as _canonical_dumps
from ratings.engine.hashing import sha256_hex as _sha256
from ratings.engine_types import (
    EmptyPeerSetError,
    MixedRubricVersionError,
    RubricFingerprintError,
    ScoringInputError,
)
from ratings.models import (
    CustomerFeedback,
    DocReview,
    ScoreSnapshot,
    TierAssignment,
    respondent_org_hash,
)
from ratings.sample import default_rubric_get, sample_cycle_create
from ratings.selectors import cycle_evidence_get, previous_tiers_get
from ratings.services import customer_feedback_record, cycle_scores_compute, doc_review_record
from reviews.services import user_role_set
from rubric.models import Area, Criterion, RubricVersion
from tests.factories import AreaFactory, ClusterFactory, CriterionFactory, CycleFactory, ProviderFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def rubric() -> RubricVersion:
    return default_rubric_get()


@pytest.fixture
def sample(rubric):
    return sample_cycle_create(slug="it-sample", providers=5, seed=7)


def run_command(slug: str, *args: str) -> str:
    out = io.StringIO()
    call_command("compute_tiers", slug, *args, stdout=out)
    return out.getvalue()


def _finding(cycle, cluster, probe_id: str, metric: str, outcome: str, value: float | None, n: int) -> Finding:
    run = ProbeRun.objects.create(
        cycle=cycle, cluster=cluster, probe_id=probe_id, scheduled_for=dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
        idempotency_key=f"t:{cycle.pk}:{cluster.pk}:{probe_id}:{metric}:{n}", status=ProbeRun.Status.DONE,
    )
    return Finding.objects.create(
        run=run, probe_id=probe_id, probe_version="1", target=f"node-{n}", metric=metric, outcome=outcome, value=value
    )


def test_compute_tiers_prints_tiers_probabilities_intervals_and_the_same_hash_twice(sample):
    first = run_command(sample.slug)
    second = run_command(sample.slug)
    hash_line = [line for line in first.splitlines() if line.startswith("snapshot hash ")]
    assert hash_line and hash_line == [line for line in second.splitlines() if line.startswith("snapshot hash ")]
    assert ScoreSnapshot.objects.filter(cycle=sample).count() == 1  # the identical result is not stored twice
    snapshot = ScoreSnapshot.objects.get(cycle=sample)
    assert hash_line[0].split()[-1] == snapshot.content_hash
    # The stored result re-hashes to the stored hash: the snapshot is self-verifying.
    assert _sha256(_canonical_dumps(snapshot.result)) == snapshot.content_hash
    assignments = {a.provider.slug: a for a in snapshot.assignments.select_related("provider")}
    assert len(assignments) == 5
    leaky, broken = assignments["it-sample-provider-2"], assignments["it-sample-provider-5"]
    assert leaky.tier in ("bronze", "underperforming") and any(g["criterion"] == "tenant_log_isolation" for g in leaky.gate_caps)
    assert broken.tier == "not_rated" and broken.ci_low is None
    for a in assignments.values():
        if a.tier != "not_rated":
            assert sum(a.probabilities.values()) == pytest.approx(1.0)
            assert a.ci_low <= a.ci_high
            assert {x["key"] for x in a.areas} == {"provisioning", "reliability", "monitoring", "security"}
            assert len(a.criteria) == 40
        assert f"{a.provider.slug}" in first
    assert "Pt" in first and "[" in first  # probability columns and intervals
    other_seed = run_command(sample.slug, "--seed", "5")
    assert other_seed.splitlines()[-1] != hash_line[0]


def test_the_selector_binds_findings_by_probe_id_and_metric(rubric):
    provider = ProviderFactory(slug="bind-a")
    cluster = ClusterFactory(provider=provider)
    cycle = CycleFactory(rubric_version=rubric)
    cycle.providers.add(provider)
    for n, value in enumerate([10.0, 20.0, 30.0]):
        _finding(cycle, cluster, "time_to_first_job", "seconds", "pass", value, n)
    _finding(cycle, cluster, "time_to_first_job", "other_metric", "pass", 9999.0, 9)  # bound to nothing
    _finding(cycle, cluster, "unknown_probe", "seconds", "pass", 1.0, 10)
    _finding(cycle, cluster, "tenant_log_isolation", "", "fail", None, 11)
    _finding(cycle, cluster, "tenant_log_isolation", "", "error", None, 12)
    inp = cycle_evidence_get(cycle=cycle, seed=1)
    rows = {(o.criterion, o.outcome, o.value) for o in inp.probe_observations}
    assert rows == {
        ("time_to_first_job", "pass", 10.0), ("time_to_first_job", "pass", 20.0), ("time_to_first_job", "pass", 30.0),
        ("tenant_log_isolation", "fail", None), ("tenant_log_isolation", "error", None),
    }
    assert {o.rubric_version for o in inp.probe_observations} == {str(rubric.pk)}


def test_area_feedback_goes_to_the_areas_feedback_criterion_and_the_org_is_only_hashed(rubric):
    provider = ProviderFactory(slug="fb-a")
    cycle = CycleFactory(rubric_version=rubric)
    cycle.providers.add(provider)
    area = Area.objects.get(rubric_version=rubric, key="security")
    row = customer_feedback_record(
        cycle=cycle, provider=provider, area=area, rating=4, source="interview", respondent_org="  Example  Corp "
    )
    expected = hmac.new(settings.OPGRADE_PSEUDONYM_KEY.encode(), b"example corp", hashlib.sha256).hexdigest()
    assert row.respondent_org_hash == expected == respondent_org_hash("EXAMPLE corp")
    assert "example" not in str(CustomerFeedback.objects.filter(pk=row.pk).values().get()).lower().replace(expected, "")
    (fb,) = cycle_evidence_get(cycle=cycle, seed=1).feedback
    assert (fb.criterion, fb.rating, fb.provider) == ("feedback_security", 4, "fb-a")
    with pytest.raises(ScoringInputError):
        customer_feedback_record(cycle=cycle, provider=provider, area=area, rating=6, source="survey", respondent_org="x")
    with pytest.raises(ScoringInputError):
        customer_feedback_record(cycle=cycle, provider=provider, rating=3, source="survey", respondent_org="x")


def test_doc_reviews_need_a_citation_and_a_score_in_range(rubric, django_user_model):
    reviewer = django_user_model.objects.create(username="rev")
    provider = ProviderFactory(slug="doc-a")
    cycle = CycleFactory(rubric_version=rubric)
    cycle.providers.add(provider)
    criterion = Criterion.objects.filter(rubric_version=rubric, evidence_kinds__contains=["doc_review"]).first()
    cite = [{"url": "https://docs.example/x", "quote": "We run NHC in the prolog."}]
    for bad_score, bad_citations in ((5, cite), (-1, cite), (math.nan, cite), (3, []), (3, [{"url": "ftp://x", "quote": "q"}])):
        with pytest.raises(ScoringInputError):
            doc_review_record(cycle=cycle, provider=provider, criterion=criterion, reviewer=reviewer,
                              score=bad_score, citations=bad_citations)
    with pytest.raises(IntegrityError), transaction.atomic():  # the table refuses it too
        DocReview.objects.create(cycle=cycle, provider=provider, criterion=criterion, reviewer=reviewer, score=3, citations=[])
    assert DocReview.objects.count() == 0
    doc_review_record(cycle=cycle, provider=provider, criterion=criterion, reviewer=reviewer, score=3, citations=cite)
    (row,) = cycle_evidence_get(cycle=cycle, seed=1).doc_scores
    assert (row.criterion, row.score, row.reconciled) == (criterion.key, 3.0, False)


def test_snapshots_and_assignments_are_immutable_in_the_model_and_the_database(sample):
    snapshot = cycle_scores_compute(cycle=sample)
    assignment = snapshot.assignments.first()
    with pytest.raises(ImmutableError):
        snapshot.save()
    with pytest.raises(ImmutableError):
        assignment.delete()
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        ScoreSnapshot.objects.filter(pk=snapshot.pk).update(seed=1)
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        TierAssignment.objects.filter(pk=assignment.pk).update(tier="platinum")
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        TierAssignment.objects.filter(snapshot=snapshot).delete()
    assert TierAssignment.objects.get(pk=assignment.pk).tier == assignment.tier


class TestBadInputWritesNothing:
    def test_evidence_bound_to_another_rubric_version(self, sample, django_user_model):
        other = CriterionFactory(key="documentation_quality", evidence_kinds=["doc_review"])
        provider = sample.providers.first()
        DocReview.objects.create(
            cycle=sample, provider=provider, criterion=other, reviewer=django_user_model.objects.create(username="x"),
            score=2, citations=[{"url": "https://e.example", "quote": "q"}],
        )
        with pytest.raises(MixedRubricVersionError):
            cycle_scores_compute(cycle=sample)
        assert ScoreSnapshot.objects.count() == TierAssignment.objects.count() == 0

    @pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
    def test_non_finite_measurements(self, sample, value):
        cluster = sample.providers.first().clusters.first()
        _finding(sample, cluster, "time_to_first_job", "seconds", "pass", value, 99)
        with pytest.raises(ScoringInputError, match="not finite"):
            cycle_scores_compute(cycle=sample)
        assert ScoreSnapshot.objects.count() == 0

    def test_a_cycle_with_no_providers(self, rubric):
        with pytest.raises(EmptyPeerSetError):
            cycle_scores_compute(cycle=CycleFactory(rubric_version=rubric))
        assert ScoreSnapshot.objects.count() == 0

    def test_a_rubric_tampered_with_after_freezing(self, sample):
        with connection.cursor() as cursor:  # go around the frozen-rubric triggers, as a restored dump would
            cursor.execute("SET session_replication_role = replica")
            cursor.execute(
                "UPDATE rubric_criterion SET weight = weight * 2 WHERE rubric_version_id = %s AND key = %s",
                [sample.rubric_version_id, "time_to_first_job"],
            )
            cursor.execute("SET session_replication_role = DEFAULT")
        with pytest.raises(RubricFingerprintError, match="changed after freezing"):
            cycle_scores_compute(cycle=sample)
        assert ScoreSnapshot.objects.count() == 0

    def test_a_draft_rubric(self):
        area = AreaFactory()
        CriterionFactory(area=area)
        cycle = CycleFactory(rubric_version=area.rubric_version)
        cycle.providers.add(ProviderFactory())
        with pytest.raises(RubricFingerprintError, match="draft"):
            cycle_scores_compute(cycle=cycle)


def test_previous_tiers_come_from_the_last_cycle_of_the_same_rubric_line(sample):
    first = cycle_scores_compute(cycle=sample)
    later = CycleFactory(
        rubric_version=sample.rubric_version, slug="it-later", period_start=dt.date(2027, 1, 1),
        period_end=dt.date(2027, 3, 31),
    )
    later.providers.set(sample.providers.all())
    previous = {p.provider: p.tier for p in previous_tiers_get(cycle=later)}
    expected = {a.provider.slug: a.tier for a in first.assignments.select_related("provider") if a.tier != "not_rated"}
    assert previous == expected and previous


def test_api_serves_snapshots_and_assignments_to_staff_roles_only(sample, client, django_user_model, django_assert_max_num_queries):
    snapshot = cycle_scores_compute(cycle=sample)
    assert client.get("/api/v1/score-snapshots/").status_code in (401, 403)
    no_role = django_user_model.objects.create_user(username="no-role", password="x-Long-passw0rd")
    client.force_login(no_role)
    assert client.get("/api/v1/score-snapshots/").status_code == 403  # signed in, but given no role
    analyst = django_user_model.objects.create_user(username="analyst", password="x-Long-passw0rd")
    user_role_set(user=analyst, role=Role.ANALYST)
    client.force_login(analyst)
    with django_assert_max_num_queries(8):
        listing = client.get("/api/v1/score-snapshots/")
    assert listing.status_code == 200
    body = listing.json()
    items = body["results"] if isinstance(body, dict) and "results" in body else body
    assert items[0]["content_hash"] == snapshot.content_hash and len(items[0]["tiers"]) == 5
    with django_assert_max_num_queries(8):
        rows = client.get(f"/api/v1/tier-assignments/?snapshot={snapshot.pk}")
    data = rows.json()
    data = data["results"] if isinstance(data, dict) and "results" in data else data
    assert {r["provider"] for r in data} == set(sample.providers.values_list("slug", flat=True))
    assert all("criteria" in r and "areas" in r and "probabilities" in r for r in data)
    assert client.post("/api/v1/score-snapshots/", {}).status_code in (403, 405)  # read-only, whoever asks


def test_admin_shows_the_breakdown_read_only_without_n_plus_one(sample, admin_client, django_assert_max_num_queries):
    snapshot = cycle_scores_compute(cycle=sample)
    assignment = snapshot.assignments.first()
    for url in ("/admin/ratings/scoresnapshot/", "/admin/ratings/tierassignment/",
                f"/admin/ratings/scoresnapshot/{snapshot.pk}/change/", f"/admin/ratings/tierassignment/{assignment.pk}/change/"):
        response = admin_client.get(url)
        assert response.status_code == 200, url
    page = admin_client.get(f"/admin/ratings/tierassignment/{assignment.pk}/change/").content.decode()
    assert "time_to_first_job" in page and "coverage" in page
    assert admin_client.post(f"/admin/ratings/tierassignment/{assignment.pk}/delete/").status_code == 403
    cycle_scores_compute(cycle=sample, seed=99)  # a second snapshot: twice the rows
    with django_assert_max_num_queries(12):
        assert admin_client.get("/admin/ratings/tierassignment/").status_code == 200


def test_approved_overrides_of_the_reviews_workflow_replace_the_criterion_score(sample, django_user_model):
    """Reviews reach the engine as DocReview rows (written by the reviews services; see
    tests/reviews/test_scoring_handoff.py); overrides are read from the reviews app itself."""
    from django.utils import timezone

    from ratings.models import ScoreOverride

    provider = sample.providers.order_by("slug").first()
    doc = Criterion.objects.get(rubric_version=sample.rubric_version, key="security_attestation")
    a, b = (django_user_model.objects.create(username=n) for n in ("wf-a", "wf-b"))
    now = timezone.now()
    probe = Criterion.objects.get(rubric_version=sample.rubric_version, key="time_to_first_job")
    ScoreOverride.objects.create(cycle=sample, provider=provider, criterion=probe, value=0.25, justification="j",
                                 status="approved", proposed_by=a, decided_by=b, decided_at=now)
    ScoreOverride.objects.create(cycle=sample, provider=provider, criterion=doc, value=0.9, justification="j",
                                 status="proposed", proposed_by=a)  # not approved: no effect
    inp = cycle_evidence_get(cycle=sample, seed=1)
    assert [(o.criterion, o.score) for o in inp.overrides] == [("time_to_first_job", 0.25)]
    snapshot = cycle_scores_compute(cycle=sample)
    row = snapshot.assignments.get(provider=provider)
    by_key = {c["key"]: c for c in row.criteria}
    assert by_key["time_to_first_job"]["score"] == 0.25 and by_key["time_to_first_job"]["kinds"][0]["kind"] == "override"
    assert by_key[doc.key]["score"] != 0.9  # the proposed (unapproved) override changed nothing
    assert "override:time_to_first_job" in row.flags
