"""Issue 15, 'what was seen': "Run now" gave no link to the runs it started, and the run list did
not refresh. Now the message links to exactly those runs, and the list refreshes itself (a meta
refresh, no JavaScript) while any listed run is pending or running."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django_celery_beat.models import IntervalSchedule

from probes.models import ProbeRun, ProbeSchedule
from tests.factories import ClusterFactory

pytestmark = pytest.mark.django_db


def test_run_now_links_to_the_runs_it_started_and_their_list_refreshes_until_they_end(
    admin_client, django_capture_on_commit_callbacks
):
    cluster = ClusterFactory()
    every = IntervalSchedule.objects.create(every=6, period=IntervalSchedule.HOURS)
    admin_client.post(reverse("admin:probes_probeschedule_add"), {
        "name": "basics", "cluster": cluster.pk, "probes": ["ssh_reachable", "node_inventory"], "interval": every.pk,
    })
    schedule = ProbeSchedule.objects.get()
    other = ProbeRun.objects.create(cluster=cluster, probe_id="ssh_reachable", target="cluster",
                                    scheduled_for="2026-11-01T00:00Z", idempotency_key="unrelated", status="done")
    with django_capture_on_commit_callbacks(execute=False):
        page = admin_client.post(reverse("admin:probes_probeschedule_changelist"),
                                 {"action": "action_run_now", "_selected_action": [schedule.pk]}, follow=True)
    started = sorted(ProbeRun.objects.filter(schedule=schedule).values_list("pk", flat=True))
    assert len(started) == 2
    link = reverse("admin:probes_proberun_changelist") + "?id__in=" + ",".join(map(str, started))
    body = page.content.decode()
    assert f'Started 2 probe run(s): <a href="{link}">follow them</a>' in body
    listed = admin_client.get(link)
    assert [r.pk for r in listed.context["cl"].result_list] == sorted(started, reverse=True)
    text = listed.content.decode()
    assert '<meta http-equiv="refresh" content="15">' in text and "2 runs pending or running" in text
    ProbeRun.objects.filter(pk__in=started).update(status="done")
    done = admin_client.get(link).content.decode()
    assert 'http-equiv="refresh"' not in done and other.pk not in [r.pk for r in admin_client.get(
        link).context["cl"].result_list]


def test_a_typed_token_that_could_not_be_saved_says_so_and_is_never_echoed(admin_client):
    """Issue 15, 'what was seen': the token field was emptied after an error, silently."""
    cluster = ClusterFactory()
    body = admin_client.post(reverse("admin:probes_clusteraccess_add"), {
        "cluster": cluster.pk, "login_host": "10.200.59.3:22", "login_port": "22", "api_base_url": "",
        "max_concurrency": "4", "settings": "{}", "api_token": "tok-secret-123",
    }).content.decode()
    assert "Not saved: fix the errors on this page, then type the token again" in body
    assert "tok-secret-123" not in body
    from probes.models import ClusterAccess

    assert not ClusterAccess.objects.exists()
