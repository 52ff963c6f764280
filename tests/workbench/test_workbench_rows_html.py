"""The providers table and the matrix are built as HTML in Python (for speed): every text is escaped,
and the links and the per-provider form are what the template used to make."""

from __future__ import annotations

import pytest
from django.test import Client

from config.access import Role
from tests.factories import AreaFactory, ClusterFactory, CriterionFactory, CycleFactory, ProviderFactory
from tests.workbench.builders import user

pytestmark = pytest.mark.django_db


def test_provider_and_cluster_names_are_escaped_and_the_row_links_and_form_are_right():
    area = AreaFactory(key="sec")
    CriterionFactory(area=area, key="gate1", evidence_kinds=["doc_review"], is_gate=True, gate_cap_tier="bronze")
    evil = ProviderFactory(name='<script>alert("x")</script> & Co', slug="evil")
    cluster = ClusterFactory(provider=evil, name="<b>main</b>")
    cycle = CycleFactory(rubric_version=area.rubric_version, slug="esc", providers=[evil])
    c = Client(enforce_csrf_checks=True)
    c.force_login(user("ana", Role.ANALYST))
    page = c.get(f"/admin/workbench/{cycle.slug}/").content.decode()
    assert "<script>alert" not in page and "<b>main</b>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co" in page
    assert f'<a href="/admin/providers/provider/{evil.pk}/change/">' in page
    assert f'<a href="/admin/providers/cluster/{cluster.pk}/change/">&lt;b&gt;main&lt;/b&gt;</a>' in page
    assert '<span class="wb-missing">gate1: not measured (cap bronze)</span>' in page
    token = c.cookies["csrftoken"].value
    assert f'<input type="hidden" name="provider" value="{evil.pk}">' in page
    assert 'name="csrfmiddlewaretoken"' in page
    # the row's own form posts (its CSRF token is accepted) and reaches the probes action
    form_token = page.split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    resp = c.post(f"/admin/workbench/{cycle.slug}/probes/", {"csrfmiddlewaretoken": form_token,
                                                              "provider": evil.pk})
    assert resp.status_code == 302 and token
    publisher = Client()
    publisher.force_login(user("pub", Role.PUBLISHER))
    assert "Run missing probes" not in publisher.get(f"/admin/workbench/{cycle.slug}/").content.decode()


def test_the_workbench_refreshes_itself_while_runs_are_pending_and_stops_when_they_end():
    """Issue 15, 'what was seen': the run list did not refresh. The workbench page does (no JavaScript)."""
    from probes.models import ProbeRun
    from tests.workbench.builders import run

    area = AreaFactory(key="rel")
    CriterionFactory(area=area, key="ssh", evidence_kinds=["probe"], probe_id="ssh_reachable")
    p = ProviderFactory(slug="p1")
    cycle = CycleFactory(rubric_version=area.rubric_version, slug="refresh", providers=[p])
    pending = run(ClusterFactory(provider=p), cycle, "ssh_reachable", status="pending")
    c = Client()
    c.force_login(user("ana", Role.ANALYST))
    assert '<meta http-equiv="refresh" content="20">' in c.get(f"/admin/workbench/{cycle.slug}/").content.decode()
    ProbeRun.objects.filter(pk=pending.pk).update(status="done")
    assert 'http-equiv="refresh"' not in c.get(f"/admin/workbench/{cycle.slug}/").content.decode()
