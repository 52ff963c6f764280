"""A critical finding's gate cap and score overrides, end to end (issue 24 item 10).

An outside test had a provider with a critical isolation finding, an approved plain override
of that gate to a high score, and a report that said Platinum instead of Underperforming.
Now: a gate failed by a critical finding is overridden only as "measurement was wrong", with
a later finding that shows it, approved by two publishers besides the proposer; every other
attempt is refused (service, API, admin form) and writes nothing; and a tier that rests on
such an override says so in the HTML, JSON, CSV and print (PDF) report.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import textwrap
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from config.access import Role
from probes.models import Finding, ProbeRun
from providers.models import Cycle
from ratings.models import ScoreOverride
from ratings.selectors import cycle_evidence_get
from ratings.services import cycle_scores_compute
from reports import rendering
from reports import services as report_services
from reviews import services
from rubric.models import Criterion
from rubric.services import rubric_version_import
from tests.factories import ClusterFactory, CycleFactory, ProviderFactory
from tests.reviews.world import citation

pytestmark = pytest.mark.django_db

RUBRIC = textwrap.dedent("""\
    format: opgrade-rubric/1
    name: override-gate-test
    version: '1.0'
    title: A two-criterion rubric with an isolation gate
    description: One measured criterion and one isolation gate that caps at Underperforming.
    scoring:
      coverage_floor: 0.6
      area_coverage_floor: 0.5
      bootstrap_size: 200
      boundary_confidence: 0.9
      borderline_threshold: 0.7
      hysteresis_threshold: 0.2
      feedback_prior_strength: 5.0
      feedback_prior_mean: 3.0
      boundary_min_gap: 0.02
      tier_floors: {platinum: 0.8, gold: 0.65, silver: 0.5, bronze: 0.4}
    areas:
    - key: security
      title: Security
      weight: 1.0
      description: Isolation and speed.
    criteria:
    - key: time_to_first_job
      area: security
      title: Time to first job
      description: Job submit to running.
      weight: 0.5
      evidence: [probe]
      probe: {id: time_to_first_job, metric: seconds}
      unit: s
      direction: lower
      scale: log
      anchors: {best: 5.0, worst: 900.0}
    - key: tenant_log_isolation
      area: security
      title: Tenant log isolation
      description: Tenant A finds no trace of tenant B's logs.
      weight: 0.5
      evidence: [probe]
      probe: {id: tenant_log_isolation, metric: ''}
      unit: pass_rate
      direction: higher
      scale: linear
      anchors: {best: 1.0, worst: 0.0}
      gate: {cap_tier: underperforming, threshold: 0.5}
""")

JUSTIFICATION = "The canary matched a nonce our own harness wrote into tenant A's log; rerun shows no leak."


class Scene:
    def __init__(self) -> None:
        from tests.reviews.world import _user

        rv = rubric_version_import(text=RUBRIC, filename="override-gate.yaml", freeze=True).rubric_version
        self.provider = ProviderFactory(slug="leaky", name="Leaky Cloud")
        self.cluster = ClusterFactory(provider=self.provider)
        self.cycle: Cycle = CycleFactory(rubric_version=rv, slug="gate-cycle", providers=[self.provider])
        self.gate = Criterion.objects.get(rubric_version=rv, key="tenant_log_isolation")
        self.speed = Criterion.objects.get(rubric_version=rv, key="time_to_first_job")
        self.n = 0
        for _ in range(3):
            self.finding("time_to_first_job", "seconds", "pass", 5.0)
        self.finding("tenant_log_isolation", "", "pass")
        self.users = {name: _user(name, Role.PUBLISHER) for name in ("pub-a", "pub-b", "pub-c")}

    def finding(self, probe_id: str, metric: str, outcome: str, value: float | None = None, *,
                critical: bool = False) -> Finding:
        self.n += 1
        run = ProbeRun.objects.create(
            cycle=self.cycle, cluster=self.cluster, probe_id=probe_id, status=ProbeRun.Status.DONE,
            scheduled_for=dt.datetime(2026, 11, 1, tzinfo=dt.UTC), idempotency_key=f"gate:{self.n}",
        )
        return Finding.objects.create(run=run, probe_id=probe_id, probe_version="1", target=f"node-{self.n}",
                                      metric=metric, outcome=outcome, value=value, critical=critical)

    def breach(self) -> Finding:
        return self.finding("tenant_log_isolation", "", "fail", critical=True)

    def propose(self, by: str = "pub-a", **kw: Any) -> ScoreOverride:
        args = {"cycle": self.cycle, "provider": self.provider, "criterion": self.gate, "value": 1.0,
                "justification": JUSTIFICATION, "evidence": citation("Harness bug 4711: nonce written by us.")}
        args.update(kw)
        return services.override_propose(by=self.users[by], **args)

    def tier(self) -> Any:
        return cycle_scores_compute(cycle=self.cycle).assignments.get(provider=self.provider)

    def api(self, name: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(self.users[name])
        return client


@pytest.fixture
def scene() -> Scene:
    return Scene()


def _nothing_written(scene: Scene, before: list[tuple[Any, ...]]) -> None:
    assert list(ScoreOverride.objects.order_by("id").values_list("id", "status", "decided_by", "second_decided_by")) == before


def test_without_a_breach_the_provider_is_platinum_and_with_one_underperforming(scene):
    assert scene.tier().tier == "platinum"
    scene.breach()
    row = scene.tier()
    assert row.tier == "underperforming" and [g["reason"] for g in row.gate_caps] == ["critical"]


def test_the_outside_case_a_plain_approved_override_keeps_the_critical_cap(scene):
    """The override was proposed and approved before the critical finding arrived (so it was
    allowed then); the breach that follows caps the tier whatever the override says."""
    override = scene.propose(value=1.0)
    services.override_decide(override=override, by=scene.users["pub-b"], approve=True)
    assert ScoreOverride.objects.get().status == "approved"
    breach = scene.breach()
    [sent] = cycle_evidence_get(cycle=scene.cycle, seed=1).overrides
    assert (sent.reason, sent.approvals, sent.disputes) == ("judgement", 1, ())
    row = scene.tier()
    assert row.tier == "underperforming"
    assert [(g["criterion"], g["reason"], g["finding"]) for g in row.gate_caps] == [
        ("tenant_log_isolation", "critical", f"finding {breach.pk}")]
    assert "override_kept_critical_cap:tenant_log_isolation" in row.flags
    assert not any(f.startswith("critical_overridden") for f in row.flags)


def test_a_legacy_approved_row_without_the_rule_keeps_the_cap_too(scene, django_user_model):
    scene.breach()
    ScoreOverride.objects.create(
        cycle=scene.cycle, provider=scene.provider, criterion=scene.gate, value=1.0, justification="j",
        status="approved", proposed_by=scene.users["pub-a"], decided_by=scene.users["pub-b"], decided_at=timezone.now(),
    )
    assert scene.tier().tier == "underperforming"


def test_any_other_override_of_a_critical_gate_is_refused_by_the_service_and_writes_nothing(scene):
    scene.breach()
    with pytest.raises(services.ReviewsError, match="can be overridden only as 'measurement was wrong'"):
        scene.propose()  # a plain (judgement) override, as in the outside test
    with pytest.raises(services.ReviewsError, match="evidence that shows it"):
        scene.propose(reason="measurement_wrong")  # no evidence finding
    assert not ScoreOverride.objects.exists()
    assert scene.tier().tier == "underperforming"


@pytest.fixture
def breached(scene: Scene) -> Scene:
    scene.finding_before = scene.finding("tenant_log_isolation", "", "pass")  # type: ignore[attr-defined]
    scene.critical = scene.breach()  # type: ignore[attr-defined]
    scene.later = scene.finding("tenant_log_isolation", "", "pass")  # type: ignore[attr-defined]
    return scene


def test_measurement_was_wrong_needs_a_later_passing_non_critical_finding_of_the_same_probe(breached):
    s = breached
    other_probe = s.finding("time_to_first_job", "seconds", "pass", 5.0)
    failing = s.finding("tenant_log_isolation", "", "fail")
    for evidence, message in (
        (None, "evidence that shows it"),
        (s.finding_before, "older than the critical finding"),
        (s.critical, "not a passing, non-critical finding"),
        (failing, "not a passing, non-critical finding"),
        (other_probe, "findings of probe tenant_log_isolation"),
        (999_999, "findings of probe tenant_log_isolation"),
    ):
        with pytest.raises(services.ReviewsError, match=message):
            s.propose(reason="measurement_wrong", evidence_finding=evidence)
    assert not ScoreOverride.objects.exists()
    before = s.tier().tier
    assert before == "underperforming"


def test_the_api_refuses_a_plain_override_of_a_critical_gate_with_a_clear_400(breached):
    s = breached
    body = {"cycle": s.cycle.slug, "provider": s.provider.slug, "criterion": s.gate.key, "value": 1.0,
            "justification": JUSTIFICATION, "evidence": citation()}
    response = s.api("pub-a").post("/api/v1/overrides/", body, format="json")
    assert response.status_code == 400, response.content
    assert "measurement was wrong" in response.content.decode()
    response = s.api("pub-a").post("/api/v1/overrides/", {**body, "reason": "measurement_wrong"}, format="json")
    assert response.status_code == 400 and "evidence that shows it" in response.content.decode()
    assert not ScoreOverride.objects.exists()


def test_the_admin_form_refuses_a_plain_override_of_a_critical_gate(breached, client):
    s = breached
    client.force_login(s.users["pub-a"])
    form = {"cycle": s.cycle.pk, "provider": s.provider.pk, "criterion": s.gate.pk, "value": "1.0",
            "reason": "judgement", "justification": JUSTIFICATION, "evidence": json.dumps(citation()),
            "evidence_finding": ""}
    response = client.post("/admin/ratings/scoreoverride/add/", form)
    assert response.status_code == 200  # the form again, with the refusal
    assert "measurement was wrong" in response.content.decode()
    assert not ScoreOverride.objects.exists()
    response = client.post("/admin/ratings/scoreoverride/add/",
                           {**form, "reason": "measurement_wrong", "evidence_finding": str(s.later.pk)})
    assert response.status_code == 302, response.content.decode()[-2000:]
    created = ScoreOverride.objects.get()
    assert (created.reason, created.evidence_finding_id, created.disputed_findings) == (
        "measurement_wrong", s.later.pk, [s.critical.pk])


def test_one_approver_only_or_the_same_one_twice_changes_nothing(breached, client):
    s = breached
    override = s.propose(reason="measurement_wrong", evidence_finding=s.later)
    assert override.disputed_findings == [s.critical.pk] and override.status == "proposed"
    with pytest.raises(services.RoleRefused, match="four eyes"):
        services.override_decide(override=override, by=s.users["pub-a"], approve=True)
    first = services.override_decide(override=override, by=s.users["pub-b"], approve=True)
    assert (first.status, first.decided_by, first.second_decided_by) == ("confirming", s.users["pub-b"], None)
    assert cycle_evidence_get(cycle=s.cycle, seed=1).overrides == ()  # not approved yet: the engine sees nothing
    assert s.tier().tier == "underperforming"
    before = list(ScoreOverride.objects.order_by("id").values_list("id", "status", "decided_by", "second_decided_by"))
    with pytest.raises(services.RoleRefused, match="a different publisher must confirm"):
        services.override_decide(override=override, by=s.users["pub-b"], approve=True)
    response = s.api("pub-b").post(f"/api/v1/overrides/{override.pk}/approve/", {}, format="json")
    assert response.status_code == 403 and "different publisher" in response.content.decode()
    response = s.api("pub-a").post(f"/api/v1/overrides/{override.pk}/approve/", {}, format="json")
    assert response.status_code == 403
    client.force_login(s.users["pub-b"])
    response = client.post("/admin/ratings/scoreoverride/", {
        "action": "approve_selected", "_selected_action": [override.pk]}, follow=True)
    assert "a different publisher must confirm" in response.content.decode()
    _nothing_written(s, before)
    assert s.tier().tier == "underperforming"


def test_the_database_refuses_a_measurement_was_wrong_approval_without_a_second_distinct_approver(breached):
    s = breached
    override = s.propose(reason="measurement_wrong", evidence_finding=s.later)
    services.override_decide(override=override, by=s.users["pub-b"], approve=True)
    rows = ScoreOverride.objects.filter(pk=override.pk)
    with pytest.raises(IntegrityError), transaction.atomic():
        rows.update(status="approved")
    with pytest.raises(IntegrityError), transaction.atomic():
        rows.update(status="approved", second_decided_by=s.users["pub-b"], second_decided_at=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        rows.update(status="approved", second_decided_by=s.users["pub-a"], second_decided_at=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        rows.update(reason="judgement")  # a disputed critical finding takes only "measurement was wrong"
    with pytest.raises(IntegrityError), transaction.atomic():
        rows.update(evidence_finding=None)


def test_a_second_approver_can_reject_and_nothing_counts(breached):
    s = breached
    override = s.propose(reason="measurement_wrong", evidence_finding=s.later)
    services.override_decide(override=override, by=s.users["pub-b"], approve=True)
    rejected = services.override_decide(override=override, by=s.users["pub-c"], approve=False, note="bug not shown")
    assert (rejected.status, rejected.second_decided_by) == ("rejected", s.users["pub-c"])
    assert s.tier().tier == "underperforming"


def test_a_critical_finding_after_the_proposal_blocks_its_approval(breached):
    s = breached
    override = s.propose(reason="measurement_wrong", evidence_finding=s.later)
    services.override_decide(override=override, by=s.users["pub-b"], approve=True)
    s.breach()
    with pytest.raises(services.ReviewsError, match="not disputed"):
        services.override_decide(override=override, by=s.users["pub-c"], approve=True)
    assert ScoreOverride.objects.get().status == "confirming"


def _publish(s: Scene) -> Any:
    publisher = s.users["pub-a"]
    snapshot = cycle_scores_compute(cycle=s.cycle)
    draft = report_services.report_draft_create_from_snapshot(snapshot=snapshot, user=publisher)
    report_services.report_fact_check_open(report=draft, user=publisher)
    return report_services.report_publish(report=draft, user=publisher)


def test_measurement_was_wrong_with_two_approvers_lifts_the_cap_and_every_report_format_says_so(
    breached, client, monkeypatch
):
    s = breached
    response = s.api("pub-a").post("/api/v1/overrides/", {
        "cycle": s.cycle.slug, "provider": s.provider.slug, "criterion": s.gate.key, "value": 1.0,
        "reason": "measurement_wrong", "evidence_finding": s.later.pk, "justification": JUSTIFICATION,
        "evidence": citation("Harness bug 4711: nonce written by us."),
    }, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert (created["reason"], created["evidence_finding"], created["disputed_findings"]) == (
        "measurement_wrong", s.later.pk, [s.critical.pk])
    pk = created["id"]
    assert s.api("pub-b").post(f"/api/v1/overrides/{pk}/approve/", {}, format="json").json()["status"] == "confirming"
    second = s.api("pub-c").post(f"/api/v1/overrides/{pk}/approve/", {}, format="json")
    assert second.status_code == 200 and second.json()["status"] == "approved"
    assert (second.json()["decided_by"], second.json()["second_decided_by"]) == ("pub-b", "pub-c")
    [sent] = cycle_evidence_get(cycle=s.cycle, seed=1).overrides
    assert (sent.reason, sent.approvals, sent.disputes) == ("measurement_wrong", 2, (f"finding {s.critical.pk}",))

    row = s.tier()
    assert row.tier == "platinum" and row.gate_caps == []
    assert "critical_overridden:tenant_log_isolation" in row.flags

    report = _publish(s)
    [provider] = report.content["providers"]
    assert provider["tier"] == "platinum"
    assert provider["resting_on_override"] == [{
        "criterion": "tenant_log_isolation", "reason": "measurement_wrong", "justification": JUSTIFICATION,
        "evidence_finding": s.later.pk, "approvers": ["pub-b", "pub-c"],
    }]
    assert "measurement was wrong, shown by a later finding" in json.dumps(report.content["methodology"])
    exported = json.loads(client.get(f"/reports/{report.pk}/report.json").content)
    assert exported["document"]["providers"][0]["resting_on_override"] == provider["resting_on_override"]
    for page in (f"/reports/{report.pk}/", f"/reports/{report.pk}/providers/{s.provider.slug}/"):
        html = client.get(page).content.decode()
        assert 'data-testid="tier-rests-on-override"' in html and "tenant_log_isolation" in html, page
    provider_html = client.get(f"/reports/{report.pk}/providers/{s.provider.slug}/").content.decode()
    assert "measurement was wrong" in provider_html and "pub-b and pub-c" in provider_html
    assert "The canary matched a nonce" in provider_html
    rows = list(csv.DictReader(io.StringIO(client.get(f"/reports/{report.pk}/providers.csv").content.decode())))
    assert rows[0]["tier"] == "platinum"
    assert rows[0]["tier_rests_on_override"].startswith("tenant_log_isolation: critical finding overridden")
    assert f"finding {s.later.pk}" in rows[0]["tier_rests_on_override"]
    text = client.get(f"/reports/{report.pk}/providers/{s.provider.slug}.txt").content.decode()
    assert "Tier rests on an override: tenant_log_isolation" in text
    printed: list[str] = []  # the HTML the PDF is made from (WeasyPrint's text layer is not read here)
    monkeypatch.setattr(rendering, "html_to_pdf", lambda html: printed.append(html) or b"%PDF-1.7 captured")
    pdf = client.get(f"/reports/{report.pk}/report.pdf")
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
    [html] = printed
    assert "Leaky Cloud: Platinum (rests on an override)" in html
    assert "Tier rests on an override: tenant_log_isolation: critical finding overridden" in html


def test_a_report_without_overrides_marks_no_tier(scene):
    report = _publish(scene)
    assert report.content["providers"][0]["resting_on_override"] == []


def test_the_pure_builder_refuses_a_tier_resting_on_an_override_it_cannot_name():
    import dataclasses

    from reports import context as ctx
    from tests.reports.conftest import RUBRIC as REPORT_RUBRIC
    from tests.reports.conftest import provider_result

    lifted = dataclasses.replace(provider_result("alpha", "platinum", score=0.85), critical_overrides=("isolation",))
    inp = ctx.ReportInput(
        cycle_slug="c", cycle_name="C", period_start="2026-10-01", period_end="2026-12-31", rubric=REPORT_RUBRIC,
        engine_version="e1", seed=1, inputs_hash="a" * 64, snapshot_hash="b" * 64, providers=(lifted,),
    )
    with pytest.raises(ctx.DocumentError, match="rests on an override of isolation"):
        ctx.build_report_document(inp)
    entry = ctx.OverrideEntry(provider_slug="alpha", criterion_key="isolation", from_value=0.0, to_value=1.0,
                              justification=JUSTIFICATION, proposer="pat", approver="sam", reason="measurement_wrong",
                              second_approver="kim", evidence_finding=42)
    doc = ctx.build_report_document(dataclasses.replace(inp, overrides=(entry,)))
    assert doc["providers"][0]["resting_on_override"] == [{
        "criterion": "isolation", "reason": "measurement_wrong", "justification": JUSTIFICATION,
        "evidence_finding": 42, "approvers": ["sam", "kim"],
    }]
    assert rendering.override_note(doc["providers"][0]).startswith(
        "isolation: critical finding overridden as measurement was wrong (shown by finding 42); approved by sam and kim."
    )
