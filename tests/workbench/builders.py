"""Worlds for the workbench tests and its benchmark: a cycle with every kind of matrix cell."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from config.access import Role
from probes.models import ClusterAccess, Finding, ProbeRun
from providers.models import Cluster, Cycle
from ratings.models import CustomerFeedback, DocReview
from reviews import services as review_services
from tests.factories import AreaFactory, ClusterFactory, CriterionFactory, CycleFactory, ProviderFactory


def user(username: str, role: Role) -> Any:
    u = get_user_model().objects.create_user(username=username, password="x")
    review_services.user_role_set(user=u, role=role)
    return u


def run(cluster: Cluster, cycle: Cycle, probe_id: str, *, status: str = "done", n: int = 0) -> ProbeRun:
    return ProbeRun.objects.create(
        cycle=cycle, cluster=cluster, probe_id=probe_id, target="cluster", scheduled_for=timezone.now(),
        idempotency_key=f"{cycle.pk}-{cluster.pk}-{probe_id}-{n}-{ProbeRun.objects.count()}", status=status,
    )


def finding(r: ProbeRun, outcome: str, *, metric: str = "", critical: bool = False, target: str = "cluster",
            value: float | None = None) -> Finding:
    return Finding.objects.create(
        run=r, probe_id=r.probe_id, probe_version="1", target=target, metric=metric, outcome=outcome,
        critical=critical, value=value,
    )


@dataclass
class Grid:
    cycle: Cycle
    providers: list[Any]
    criteria: list[Any]
    clusters: list[Cluster]


def grid_build(*, providers: int, criteria: int, slug: str = "grid", findings: bool = True) -> Grid:
    """``providers`` x ``criteria``: probe, doc-review and feedback criteria in two areas, with
    findings, doc reviews, feedback and review assignments spread over the cells."""
    area_a = AreaFactory(key=f"{slug}-a", position=0)
    area_b = AreaFactory(key=f"{slug}-b", rubric_version=area_a.rubric_version, position=1)
    crits = []
    for i in range(criteria):
        kind = ("probe", "doc_review", "customer_feedback")[i % 3]
        crits.append(CriterionFactory(
            area=area_a if i % 2 else area_b, key=f"{slug}-c{i}", position=i, evidence_kinds=[kind],
            probe_id=f"{slug}.probe{i}" if kind == "probe" else "", is_gate=(i == 0),
            gate_cap_tier="bronze" if i == 0 else "",
        ))
    provs = [ProviderFactory(name=f"{slug} provider {i:03d}", slug=f"{slug}-p{i}") for i in range(providers)]
    cycle = CycleFactory(rubric_version=area_a.rubric_version, slug=f"{slug}-cycle", providers=provs)
    reviewer = get_user_model().objects.create_user(username=f"{slug}-reviewer")
    clusters = []
    docs, feedback = [], []
    for pi, p in enumerate(provs):
        cluster = ClusterFactory(provider=p, name=f"{slug}-cluster-{pi}")
        clusters.append(cluster)
        for ci, c in enumerate(crits):
            if "probe" in c.evidence_kinds and findings:
                r = run(cluster, cycle, c.probe_id, n=ci)
                outcome = ("pass", "fail", "declined", "not_applicable", "error")[(pi + ci) % 5]
                finding(r, outcome, critical=(outcome == "fail" and ci == 0))
            elif "doc_review" in c.evidence_kinds and (pi + ci) % 2:
                docs.append(DocReview(cycle=cycle, provider=p, criterion=c, reviewer=reviewer, score=3,
                                      citations=[{"url": "https://x.example", "quote": "q"}]))
            elif "customer_feedback" in c.evidence_kinds and (pi + ci) % 2:
                feedback.append(CustomerFeedback(cycle=cycle, provider=p, criterion=c, rating=4, source="survey",
                                                 respondent_org_hash="0" * 64))
    DocReview.objects.bulk_create(docs)
    CustomerFeedback.objects.bulk_create(feedback)
    return Grid(cycle=cycle, providers=provs, criteria=crits, clusters=clusters)


def access_for(cluster: Cluster) -> ClusterAccess:
    return ClusterAccess.objects.create(cluster=cluster, login_host="10.0.0.1")
