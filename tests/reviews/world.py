"""A small world of two providers, every role, and private data planted for provider B.

Provider B's private rows carry the marker ``B-SECRET`` in a text field (reply text,
interview notes, feedback comment, finding summary, review notes and citation quotes,
override justification, COI note, B's section of the fact-check draft) so a test can
prove that none of it reaches a caller who must not see it. The raw respondent
organisation ``RAW-ORG-NAME`` must never be stored at all (only its keyed hash).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.utils import timezone

from config.access import Role
from providers.models import Cycle, Provider
from ratings.models import ScoreOverride
from reviews import services
from reviews.api_tokens import api_token_issue
from reviews.models import (
    ConflictOfInterest,
    FeedbackImport,
    InterviewNote,
    Reconciliation,
    ReviewAssignment,
    RightOfReply,
)
from tests.factories import AreaFactory, ClusterFactory, CriterionFactory, CycleFactory, ProviderFactory

B_SECRET = "B-SECRET"
RAW_ORG = "RAW-ORG-NAME"
SECRET_CIPHERTEXT = "CIPHERTEXT-NEVER-SHOWN"  # stored (as if encrypted) credentials: never served to anyone
ROLES = ("anonymous", "analyst", "reviewer", "publisher", "admin", "provider")
PASSWORD = "correct horse battery staple 42"


@dataclass
class World:
    a: Provider
    b: Provider
    cycle: Cycle
    cycle_b_only: Cycle
    criterion: Any
    criterion2: Any
    users: dict[str, Any]
    objects: dict[str, Any] = field(default_factory=dict)

    def user_for(self, role: str) -> Any | None:
        return None if role == "anonymous" else self.users[role]


def _user(username: str, role: Role | None, provider: Provider | None = None) -> Any:
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    if role is not None:
        services.user_role_set(user=user, role=role, provider=provider)
    return user


def citation(text: str = "Nodes are replaced within 15 minutes.") -> list[dict[str, str]]:
    return [{"url": "https://docs.example.com/reliability", "quote": text}]


def world_build(*, private_data: bool = True) -> World:
    area = AreaFactory(key="reliability")
    criterion = CriterionFactory(area=area, key="docs-replacement", title="Node replacement documented")
    criterion2 = CriterionFactory(area=area, key="docs-maintenance", title="Maintenance windows documented")
    # The one criterion of the area that takes customer feedback: feedback rated for the area goes to it.
    CriterionFactory(area=area, key="customers-reliability", title="Customers rate reliability",
                     evidence_kinds=["customer_feedback"], anchor_best=5.0, anchor_worst=1.0)
    a = ProviderFactory(name="Alpha Cloud", slug="alpha")
    b = ProviderFactory(name="Bravo Cloud", slug="bravo")
    cycle = CycleFactory(rubric_version=area.rubric_version, slug="cycle-ab", providers=[a, b])
    cycle_b_only = CycleFactory(rubric_version=area.rubric_version, slug="cycle-b-only", providers=[b])
    users = {
        "analyst": _user("ana", Role.ANALYST),
        "reviewer": _user("rev1", Role.REVIEWER),
        "reviewer2": _user("rev2", Role.REVIEWER),
        "reviewer3": _user("rev3", Role.REVIEWER),
        "publisher": _user("pub1", Role.PUBLISHER),
        "publisher2": _user("pub2", Role.PUBLISHER),
        "admin": _user("adm", Role.ADMIN),
        "provider": _user("prov-a", Role.PROVIDER, provider=a),
        "provider_b": _user("prov-b", Role.PROVIDER, provider=b),
    }
    world = World(a=a, b=b, cycle=cycle, cycle_b_only=cycle_b_only, criterion=criterion, criterion2=criterion2,
                  users=users)
    if private_data:
        _private_data_plant(world)
    return world


def _private_data_plant(w: World) -> None:
    u, o = w.users, w.objects
    analyst = u["analyst"]
    for name, provider, tag in (("a", w.a, "A-OWN"), ("b", w.b, B_SECRET)):
        first = services.assignment_create(
            cycle=w.cycle, provider=provider, criterion=w.criterion, reviewer=u["reviewer"], slot="first", by=analyst
        )
        second = services.assignment_create(
            cycle=w.cycle, provider=provider, criterion=w.criterion, reviewer=u["reviewer2"], slot="second",
            by=analyst,
        )
        services.review_submit(assignment=second, by=u["reviewer2"], score=3, citations=citation(f"{tag} quote"),
                               notes=f"{tag} review notes")
        o[f"{name}_assignment"] = first
        o[f"{name}_assignment_other"] = second
        reply = RightOfReply.objects.create(
            provider=provider, user=u["provider" if name == "a" else "provider_b"], cycle=w.cycle,
            fact_ref="F1", text=f"{tag} reply text",
        )
        o[f"{name}_reply"] = reply
        o[f"{name}_override"] = ScoreOverride.objects.create(
            cycle=w.cycle, provider=provider, criterion=w.criterion, value=0.5,
            justification=f"{tag} justification", evidence=citation(), proposed_by=u["publisher2"],
        )
        o[f"{name}_interview"] = services.interview_note_create(
            cycle=w.cycle, provider=provider, area_or_criterion="reliability", respondent_org=RAW_ORG,
            notes=f"{tag} interview notes", interviewed_on=dt.date(2026, 11, 2), by=analyst, rating=4,
        )
        cluster = ClusterFactory(provider=provider, name=f"{tag.lower()}-cluster")
        o[f"{name}_cluster"] = cluster
        o[f"{name}_finding"] = _finding(cluster, w.cycle, f"{tag} finding summary")
        o[f"{name}_probe_run"] = o[f"{name}_finding"].run
        o[f"{name}_tenant_account"] = _tenant_account(cluster)
        o[f"{name}_price"] = _price(cluster, w.cycle, f"{tag} price notes")
        o[f"{name}_price_observation"] = _price_observation(cluster, f"{tag} price source")
    o["grade"] = apps.get_model("grades", "GradeDefinition").objects.get(name="testbed-slurm-t1")
    o["b_conflict"] = ConflictOfInterest.objects.create(reviewer=u["reviewer3"], provider=w.b, note=f"{B_SECRET} coi")
    csv_text = (
        "provider_slug,area_or_criterion,rating,source,respondent_org,comment,date\n"
        f"bravo,reliability,2,survey,{RAW_ORG},{B_SECRET} feedback comment,2026-11-01\n"
        f"alpha,reliability,5,survey,{RAW_ORG},A-OWN feedback comment,2026-11-01\n"
    )
    report = services.feedback_import(cycle=w.cycle, text=csv_text, filename="survey.csv", by=analyst, dry_run=False)
    assert report.ok, report.parsed.errors
    o["b_feedback_import"] = FeedbackImport.objects.get(pk=report.batch_id)
    o["b_feedback_response"] = o["b_feedback_import"].rows.get(provider=w.b)
    # A reconciliation of B's criterion (both reviews in, gap < 2).
    first_b = o["b_assignment"]
    services.review_submit(assignment=first_b, by=u["reviewer"], score=2, citations=citation(f"{B_SECRET} quote 2"))
    o["b_reconciliation"] = services.reconciliation_create(
        cycle=w.cycle, provider=w.b, criterion=w.criterion, by=analyst
    )
    first_b.refresh_from_db()
    o["b_report"] = _report(w)
    o["snapshot"], o["b_tier_assignment"] = _snapshot(w)
    o["b_membership"] = u["provider_b"].provider_membership
    o["b_audit_event"] = None  # the audit log is global; its list is staff-only
    # Provider B's API token: its name is B's; the token itself must never appear on any page.
    issued = api_token_issue(user=u["provider_b"], name=f"{B_SECRET} token", by=u["provider_b"])
    o["b_api_token"], o["b_api_token_clear"] = issued.row, issued.token


def _finding(cluster: Any, cycle: Cycle, summary: str) -> Any:
    probe_run = apps.get_model("probes", "ProbeRun")
    finding = apps.get_model("probes", "Finding")
    run = probe_run.objects.create(
        cycle=cycle, cluster=cluster, probe_id="docs.check", target="cluster", scheduled_for=timezone.now(),
        idempotency_key=f"run-{cluster.pk}",
    )
    return finding.objects.create(
        run=run, probe_id="docs.check", probe_version="1", target="cluster", metric="", outcome="fail",
        summary=summary,
    )


def _price(cluster: Any, cycle: Cycle, notes: str) -> Any:
    """The cluster's price in the cycle (issue 16), with a private marker in its notes."""
    try:
        model = apps.get_model("costs", "ClusterPrice")
    except LookupError:
        return None
    return model.objects.create(cluster=cluster, cycle=cycle, base="negotiated", base_per_gpu_hour=2,
                                base_source="contract", notes=notes)


def _grade() -> Any:
    """A frozen grade definition (issue 17): the shipped testbed grade, stored as is."""
    from pathlib import Path

    model = apps.get_model("grades", "GradeDefinition")
    text = (Path(__file__).resolve().parents[2] / "grades" / "data" / "testbed-slurm-t1.yaml").read_text()
    return model.objects.create(name="testbed-slurm-t1", version="2026.1", title="Testbed grade", status="frozen",
                                rubric_label="opgrade@2026.2", gpu_model="none", canonical=text,
                                frozen_at=timezone.now(), fingerprint="f" * 64)


def _price_observation(cluster: Any, source: str) -> Any:
    """A rent observed for the cluster under the world's grade, with a private marker in its source."""
    grade = apps.get_model("grades", "GradeDefinition").objects.filter(name="testbed-slurm-t1").first() or _grade()
    return apps.get_model("grades", "PriceObservation").objects.create(
        grade=grade, cluster=cluster, source=source, observed_on=dt.date(2026, 11, 1), term="on-demand",
        price_per_gpu_hour=1,
    )


def _tenant_account(cluster: Any) -> Any:
    try:
        model = apps.get_model("probes", "TenantAccount")
    except LookupError:
        return None
    return model.objects.create(cluster=cluster, label="tenant-a", username="opgrade-a",
                                password_encrypted=SECRET_CIPHERTEXT)


def _snapshot(w: World) -> tuple[Any, Any]:
    """A score snapshot with tiers for A and B (once the scoring models exist)."""
    try:
        snapshot_model = apps.get_model("ratings", "ScoreSnapshot")
        tier_model = apps.get_model("ratings", "TierAssignment")
    except LookupError:
        return None, None
    snapshot = snapshot_model.objects.create(
        cycle=w.cycle, rubric_version=w.cycle.rubric_version, engine_version="test", seed=1, bootstrap_size=10,
        inputs_hash="a" * 64, content_hash="b" * 64, result={},
    )
    tier_model.objects.create(snapshot=snapshot, provider=w.a, tier="gold", coverage=0.9, composite=0.7)
    b_tier = tier_model.objects.create(snapshot=snapshot, provider=w.b, tier="bronze", coverage=0.9, composite=0.4)
    return snapshot, b_tier


def _report(w: World) -> Any:
    report = apps.get_model("reports", "Report")
    content = {"providers": [
        {"slug": "alpha", "name": "Alpha Cloud", "summary": "A-OWN draft section"},
        {"slug": "bravo", "name": "Bravo Cloud", "summary": f"{B_SECRET} draft section"},
    ]}
    return report.objects.create(cycle=w.cycle, status="fact_check", content=content, content_hash="0" * 64,
                                 fact_check_opened_at=timezone.now())


def provider_private_rows() -> dict[str, Any]:
    """Models with a provider FK whose B rows the world plants (for listing checks)."""
    return {
        "assignment": ReviewAssignment, "reconciliation": Reconciliation, "override": ScoreOverride,
        "reply": RightOfReply, "interview": InterviewNote,
    }
