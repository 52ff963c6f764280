"""Admin forms and lists the workbench leads to (issue 15): bad input refused in words, good input
kept as typed, criterion choices limited to the cycle's rubric, findings filtered, runs that broke
on our side shown as such."""

from __future__ import annotations

import pytest
from django.test import Client

from config.access import Role
from probes.admin import ClusterAccessForm, host_with_port
from reviews import services as review_services
from tests.factories import AreaFactory, ClusterFactory, CriterionFactory, CycleFactory, ProviderFactory
from tests.workbench.builders import finding, run, user

pytestmark = pytest.mark.django_db


def _client(u) -> Client:
    c = Client()
    c.force_login(u)
    return c


def _access_form(**overrides) -> ClusterAccessForm:
    cluster = ClusterFactory()
    data = {"cluster": cluster.pk, "login_host": "10.200.59.3", "login_port": 22, "compute_nodes": "",
            "api_base_url": "", "max_concurrency": 4, "settings": "{}", **overrides}
    return ClusterAccessForm(data=data)


@pytest.mark.parametrize("host", ["10.200.59.3:22", "login.example:2222", "[fe80::1]:22"])
def test_a_login_host_with_a_port_inside_is_refused_with_words_that_say_where_the_port_goes(host):
    form = _access_form(login_host=host)
    assert not form.is_valid()
    assert "login port field" in str(form.errors["login_host"])


@pytest.mark.parametrize("host", ["10.200.59.3", "login.example", "fe80::1"])
def test_a_plain_host_or_ipv6_address_is_accepted_as_the_login_host(host):
    assert not host_with_port(host)


def test_an_http_api_address_is_stored_as_typed_never_switched_to_https():
    form = _access_form(api_base_url="http://10.200.59.3:8080/api")
    assert form.is_valid(), form.errors
    assert form.save().api_base_url == "http://10.200.59.3:8080/api"


def test_an_api_address_without_a_scheme_is_refused_rather_than_guessed():
    form = _access_form(api_base_url="10.200.59.3:8080/api")
    assert not form.is_valid()
    assert "http:// or https://" in str(form.errors["api_base_url"])


def test_the_review_assignment_form_offers_only_doc_review_criteria_of_the_cycles_rubric_labelled():
    area = AreaFactory(key="reliability", title="Reliability")
    mine = CriterionFactory(area=area, key="docs-maint", title="Maintenance documented")
    CriterionFactory(area=area, key="probe-only", evidence_kinds=["probe"], probe_id="ssh_reachable")
    other_rubric = CriterionFactory(key="elsewhere")
    p = ProviderFactory()
    cycle = CycleFactory(rubric_version=area.rubric_version, providers=[p])
    body = _client(user("ana", Role.ANALYST)).get(
        f"/admin/reviews/reviewassignment/add/?cycle={cycle.pk}"
    ).content.decode()
    version = area.rubric_version
    assert f"{version.name} {version.version} · Reliability · Maintenance documented (docs-maint)" in body
    assert f'value="{mine.pk}"' in body
    assert "probe-only" not in body and other_rubric.key not in body


def test_findings_can_be_filtered_by_provider_cluster_cycle_probe_and_outcome():
    a, b = ProviderFactory(slug="fa"), ProviderFactory(slug="fb")
    area = AreaFactory()
    cycle = CycleFactory(rubric_version=area.rubric_version, providers=[a, b])
    ca, cb = ClusterFactory(provider=a, name="ca"), ClusterFactory(provider=b, name="cb")
    fa = finding(run(ca, cycle, "ssh_reachable"), "fail")
    fb = finding(run(cb, cycle, "ssh_reachable"), "pass")
    client = _client(user("ana", Role.ANALYST))
    for query, shown, hidden in [
        (f"run__cluster__provider__id__exact={a.pk}", fa, fb),
        (f"run__cluster__id__exact={cb.pk}", fb, fa),
        (f"run__cycle__id__exact={cycle.pk}&outcome__exact=fail&probe_id__exact=ssh_reachable", fa, fb),
    ]:
        response = client.get(f"/admin/probes/finding/?{query}")
        assert response.status_code == 200, query
        body = response.content.decode()
        assert f"/admin/probes/finding/{shown.pk}/change/" in body
        assert f"/admin/probes/finding/{hidden.pk}/change/" not in body


def test_a_done_run_holding_harness_errors_reads_done_with_errors_in_the_run_list():
    cluster = ClusterFactory()
    cycle = CycleFactory(providers=[cluster.provider])
    broken = run(cluster, cycle, "metrics_coverage")
    finding(broken, "pass", target="node-1")
    finding(broken, "error", target="node-2")
    clean = run(cluster, cycle, "ssh_reachable")
    finding(clean, "pass")
    body = _client(user("ana", Role.ANALYST)).get("/admin/probes/proberun/").content.decode()
    assert body.count("Done with errors") == 1


def test_the_workbench_links_to_evidence_open_filtered_lists_not_an_error_page():
    reviewer = user("rev", Role.REVIEWER)
    area = AreaFactory()
    probe_c = CriterionFactory(area=area, key="p", evidence_kinds=["probe"], probe_id="ssh_reachable")
    doc_c = CriterionFactory(area=area, key="d")
    p = ProviderFactory()
    cycle = CycleFactory(rubric_version=area.rubric_version, providers=[p])
    finding(run(ClusterFactory(provider=p), cycle, probe_c.probe_id), "pass")
    review_services.assignment_create(cycle=cycle, provider=p, criterion=doc_c, reviewer=reviewer, slot="first",
                                      by=user("ana2", Role.ANALYST))
    from workbench.selectors import cycle_workbench_get
    from workbench.views import _EvidenceLinks

    client = _client(user("ana", Role.ANALYST))
    wb = cycle_workbench_get(cycle=cycle)
    links = _EvidenceLinks(cycle)
    urls = [links.url(p, c, cell) for c, cell in zip(wb.criteria, wb.rows[0].cells, strict=True)]
    assert all(urls)
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200 and "?e=1" not in response.get("Location", ""), url


def _cycle_post(rubric_version, **overrides) -> dict:
    return {"name": "Q4", "slug": "q4", "rubric_version": rubric_version.pk, "period_start": "2026-10-01",
            "period_end": "2026-12-31", "status": "planned", **overrides}


def test_a_cycle_period_ending_before_it_starts_is_refused_in_words_not_by_constraint_name():
    from rubric.services import rubric_version_freeze

    version = rubric_version_freeze(rubric_version=CriterionFactory().rubric_version)
    body = _client(user("ana", Role.ANALYST)).post(
        "/admin/providers/cycle/add/", _cycle_post(version, period_end="2026-09-01")
    ).content.decode()
    assert "The period cannot end (2026-09-01) before it starts (2026-10-01)." in body
    assert "cycle_period_ordered" not in body


def test_a_cycle_can_only_be_set_on_a_frozen_rubric_version():
    from providers.models import Cycle
    from rubric.services import rubric_version_freeze

    draft = AreaFactory().rubric_version
    frozen = rubric_version_freeze(rubric_version=CriterionFactory().rubric_version)
    client = _client(user("ana", Role.ANALYST))
    page = client.get("/admin/providers/cycle/add/").content.decode()
    assert f'value="{frozen.pk}"' in page and f'value="{draft.pk}"' not in page
    refused = client.post("/admin/providers/cycle/add/", _cycle_post(draft))
    assert refused.status_code == 200 and not Cycle.objects.filter(slug="q4").exists()
    assert client.post("/admin/providers/cycle/add/", _cycle_post(frozen)).status_code == 302
    assert Cycle.objects.get(slug="q4").rubric_version == frozen
