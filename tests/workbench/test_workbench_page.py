"""The cycle workbench page: what each matrix cell says, who sees what, and a bounded query count."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from config.access import Role
from ratings.models import CustomerFeedback, DocReview
from reviews import services as review_services
from tests.factories import AreaFactory, ClusterFactory, CriterionFactory, CycleFactory, ProviderFactory
from tests.workbench.builders import finding, grid_build, run, user
from workbench.selectors import cycle_workbench_get

pytestmark = pytest.mark.django_db


def _client(u) -> Client:
    c = Client()
    c.force_login(u)
    return c


@pytest.fixture
def small(db):
    area = AreaFactory(key="security")
    kinds = {
        "measured_probe": ["probe"], "gate": ["probe"], "declined": ["probe"], "na": ["probe"],
        "harness": ["probe"], "doc": ["doc_review"], "feedback": ["customer_feedback"], "reviewing": ["doc_review"],
        "nothing": ["doc_review"],
    }
    crit = {
        key: CriterionFactory(area=area, key=key, position=i, evidence_kinds=kind,
                              probe_id=f"t.{key}" if kind == ["probe"] else "", is_gate=key == "gate",
                              gate_cap_tier="bronze" if key == "gate" else "")
        for i, (key, kind) in enumerate(kinds.items())
    }
    p = ProviderFactory(name="Leaky", slug="leaky")
    cycle = CycleFactory(rubric_version=area.rubric_version, slug="wb", providers=[p])
    cluster = ClusterFactory(provider=p, name="main")
    finding(run(cluster, cycle, "t.measured_probe"), "pass")
    gate_run = run(cluster, cycle, "t.gate")
    finding(gate_run, "pass", target="node-1")
    finding(gate_run, "fail", target="node-2", critical=True)
    finding(run(cluster, cycle, "t.declined"), "declined")
    finding(run(cluster, cycle, "t.na"), "not_applicable")
    finding(run(cluster, cycle, "t.harness"), "error")
    reviewer = user("rev-small", Role.REVIEWER)
    DocReview.objects.create(cycle=cycle, provider=p, criterion=crit["doc"], reviewer=reviewer, score=3,
                             citations=[{"url": "https://docs.example", "quote": "q"}])
    CustomerFeedback.objects.create(cycle=cycle, provider=p, criterion=crit["feedback"], rating=4, source="survey",
                                    respondent_org_hash="0" * 64)
    review_services.assignment_create(cycle=cycle, provider=p, criterion=crit["reviewing"], reviewer=reviewer,
                                      slot="first", by=user("ana-small", Role.ANALYST))
    return cycle, crit


def test_each_matrix_cell_is_labelled_by_its_strongest_evidence(small):
    cycle, _ = small
    wb = cycle_workbench_get(cycle=cycle)
    labels = {c.key: cell.label for c, cell in zip(wb.criteria, wb.rows[0].cells, strict=True)}
    assert labels == {
        "measured_probe": "measured", "gate": "critical", "declined": "declined", "na": "not applicable",
        "harness": "missing", "doc": "measured", "feedback": "measured", "reviewing": "under review",
        "nothing": "missing",
    }
    gate = wb.rows[0].gates[0]
    assert gate == {"criterion": "gate", "status": "fails", "cap": "bronze"}


def test_the_workbench_shows_the_matrix_with_links_to_the_evidence_and_the_runs_with_harness_errors(small):
    cycle, _ = small
    body = _client(user("ana", Role.ANALYST)).get(f"/admin/workbench/{cycle.slug}/").content.decode()
    assert 'id="wb-matrix"' in body and "critical" in body and "under review" in body
    assert "/admin/probes/finding/?" in body and "/admin/ratings/docreview/?" in body
    assert "done with errors" in body  # the t.harness run is "done" but holds a harness error
    assert "The rubric version" in body and "is frozen" in body


def test_the_readiness_checklist_withholds_compute_tiers_while_the_rubric_is_a_draft(small):
    cycle, _ = small
    wb = cycle_workbench_get(cycle=cycle)
    assert not wb.can_compute and not wb.can_draft
    body = _client(user("ana", Role.ANALYST)).get(f"/admin/workbench/{cycle.slug}/").content.decode()
    assert "Compute tiers" not in body and "Draft the report" not in body


def test_a_reviewer_sees_only_their_own_assignments_and_never_the_matrix(small):
    cycle, crit = small
    other = user("rev-other", Role.REVIEWER)
    p = cycle.providers.get()
    review_services.assignment_create(cycle=cycle, provider=p, criterion=crit["nothing"], reviewer=other,
                                      slot="first", by=user("ana2", Role.ANALYST))
    body = _client(other).get(f"/admin/workbench/{cycle.slug}/").content.decode()
    assert 'id="wb-matrix"' not in body
    assert "nothing" in body and "reviewing" not in body  # rev-small's assignment is not theirs
    index = _client(other).get("/admin/workbench/").content.decode()
    assert cycle.name in index


def test_a_provider_account_is_kept_out_of_every_workbench_page(small):
    cycle, _ = small
    provider_user = user("prov", Role.ANALYST)
    review_services.user_role_set(user=provider_user, role=Role.PROVIDER, provider=cycle.providers.get())
    c = _client(provider_user)
    for url in ("/admin/workbench/", f"/admin/workbench/{cycle.slug}/", f"/admin/workbench/{cycle.slug}/tiers/"):
        response = c.get(url)
        assert response.status_code == 302 and "login" in response["Location"]


def test_a_publisher_reads_the_workbench_but_may_not_run_probes_or_compute_tiers(small):
    cycle, _ = small
    c = _client(user("pub", Role.PUBLISHER))
    page = c.get(f"/admin/workbench/{cycle.slug}/")
    assert page.status_code == 200 and "Run missing" not in page.content.decode()
    assert c.post(f"/admin/workbench/{cycle.slug}/probes/").status_code == 403
    assert c.post(f"/admin/workbench/{cycle.slug}/tiers/").status_code == 403
    assert c.post(f"/admin/workbench/{cycle.slug}/report/").status_code == 403


def _queries(cycle, client) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(f"/admin/workbench/{cycle.slug}/").status_code == 200
    return len(ctx.captured_queries)


def test_the_number_of_queries_does_not_grow_with_providers_or_criteria(db):
    client = _client(user("ana", Role.ANALYST))
    small = grid_build(providers=2, criteria=3, slug="s")
    large = grid_build(providers=9, criteria=15, slug="l")
    assert _queries(small.cycle, client) == _queries(large.cycle, client)


def test_the_cycle_change_page_and_the_admin_index_link_to_the_workbench(small):
    cycle, _ = small
    c = _client(user("ana", Role.ANALYST))
    assert f"/admin/workbench/{cycle.slug}/" in c.get(f"/admin/providers/cycle/{cycle.pk}/change/").content.decode()
    assert "/admin/workbench/" in c.get("/admin/").content.decode()


def test_coverage_counts_measured_failed_critical_and_declined_cells_against_both_floors(small):
    cycle, _ = small
    empty = ProviderFactory(name="Empty", slug="empty")
    cycle.providers.add(empty)
    rows = {r.provider.slug: r for r in cycle_workbench_get(cycle=cycle).rows}
    leaky, nothing = rows["leaky"], rows["empty"]
    assert leaky.coverage_now == round(5 / 9, 4) and leaky.below_floor and leaky.areas_below_floor == []
    assert nothing.coverage_now == 0 and nothing.areas_below_floor == ["security"]


def test_feedback_on_a_criterion_that_takes_none_blocks_compute_tiers_in_the_checklist(small):
    cycle, crit = small
    CustomerFeedback.objects.create(cycle=cycle, provider=cycle.providers.get(), criterion=crit["doc"], rating=2,
                                    source="survey", respondent_org_hash="1" * 64)
    wb = cycle_workbench_get(cycle=cycle)
    item = next(i for i in wb.readiness if "customer-feedback rows" in i.text)
    assert item.blocking and not item.ok and item.text.startswith("1 customer-feedback rows")
