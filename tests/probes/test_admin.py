"""The analysts' admin for probes: write-only secrets, explicit pinning, schedules, runs."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from django.urls import reverse
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from probes import services
from probes.models import ClusterAccess, HostKeyPin, ProbeRun, ProbeSchedule, TenantAccount
from tests.factories import ClusterFactory
from tests.sshd import Sshd

pytestmark = pytest.mark.django_db


def test_tenant_secrets_are_accepted_encrypted_and_never_shown_back(admin_client, user_key: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = ClusterFactory()
    key_text = user_key.read_text()
    response = admin_client.post(
        reverse("admin:probes_tenantaccount_add"),
        {
            "cluster": cluster.pk,
            "label": "tenant-a",
            "username": "alice",
            "private_key": key_text,
            "password": "pw-123456",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    account = TenantAccount.objects.get()
    assert account.private_key_encrypted and "PRIVATE KEY" not in account.private_key_encrypted
    page = admin_client.get(reverse("admin:probes_tenantaccount_change", args=[account.pk])).content.decode()
    listing = admin_client.get(reverse("admin:probes_tenantaccount_changelist")).content.decode()
    for text in (page, listing):
        assert key_text.splitlines()[1] not in text and "pw-123456" not in text
        assert account.private_key_encrypted not in text


def test_a_bad_private_key_is_refused_on_the_form_and_nothing_is_saved(admin_client) -> None:  # type: ignore[no-untyped-def]
    cluster = ClusterFactory()
    response = admin_client.post(
        reverse("admin:probes_tenantaccount_add"),
        {"cluster": cluster.pk, "label": "tenant-a", "username": "alice", "private_key": "-----BEGIN junk"},
    )
    assert response.status_code == 200 and b"could not be read" in response.content
    assert not TenantAccount.objects.exists()


def test_the_api_token_is_write_only(admin_client) -> None:  # type: ignore[no-untyped-def]
    cluster = ClusterFactory()
    response = admin_client.post(
        reverse("admin:probes_clusteraccess_add"),
        {"cluster": cluster.pk, "login_host": "login.example", "login_port": 22, "compute_nodes": "n1\nn2:2200",
         "api_base_url": "https://api.example", "api_token": "tok-SECRET-42", "max_concurrency": 4, "settings": "{}"},
    )  # fmt: skip
    assert response.status_code == 302, response.content[:3000]
    access = ClusterAccess.objects.get()
    assert access.has_api_token and "tok-SECRET-42" not in access.api_token_encrypted
    page = admin_client.get(reverse("admin:probes_clusteraccess_change", args=[access.pk])).content.decode()
    assert "tok-SECRET-42" not in page and access.api_token_encrypted not in page
    assert services.probe_context_build(cluster=cluster).api.token == "tok-SECRET-42"


@pytest.mark.integration
def test_host_keys_are_pinned_only_after_the_analyst_saw_them(admin_client, sshd: Sshd) -> None:  # type: ignore[no-untyped-def]
    cluster = ClusterFactory()
    access = ClusterAccess.objects.create(cluster=cluster, login_host=sshd.host, login_port=sshd.port)
    page = admin_client.get(reverse("admin:probes_clusteraccess_pin", args=[access.pk])).content.decode()
    assert sshd.host_key_fingerprint in page and not HostKeyPin.objects.exists()
    value = f"{sshd.host}|{sshd.port}|ssh-ed25519|{sshd.host_key_fingerprint}"
    response = admin_client.post(
        reverse("admin:probes_clusteraccess_pin", args=[access.pk]), {"pin": [value]}
    )
    assert response.status_code == 302
    pin = HostKeyPin.objects.get()
    assert (pin.host, pin.port, pin.fingerprint) == (sshd.host, sshd.port, sshd.host_key_fingerprint)
    assert pin.recorded_by is not None
    time.sleep(0.2)
    assert "userauth-request" not in sshd.log_text()  # reading the key sent no credential
    assert admin_client.get(reverse("admin:probes_hostkeypin_add")).status_code == 403  # no manual pins


def test_a_schedule_saved_in_the_admin_is_mirrored_into_celery_beat_and_runs_now(admin_client) -> None:  # type: ignore[no-untyped-def]
    cluster = ClusterFactory()
    every = IntervalSchedule.objects.create(every=6, period=IntervalSchedule.HOURS)
    response = admin_client.post(
        reverse("admin:probes_probeschedule_add"),
        {"name": "hourly basics", "cluster": cluster.pk, "probes": ["ssh_reachable", "node_inventory"],
         "interval": every.pk, "enabled": "on"},
    )  # fmt: skip
    assert response.status_code == 302, response.content[:3000]
    schedule = ProbeSchedule.objects.get()
    task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
    assert task.task == "probes.probe_schedule_fire" and task.args == f"[{schedule.pk}]"
    assert task.interval == every and task.enabled

    admin_client.post(
        reverse("admin:probes_probeschedule_changelist"),
        {"action": "action_run_now", "_selected_action": [schedule.pk]},
    )
    assert sorted(ProbeRun.objects.filter(schedule=schedule).values_list("probe_id", flat=True)) == [
        "node_inventory",
        "ssh_reachable",
    ]


def test_a_schedule_needs_exactly_one_timing(admin_client) -> None:  # type: ignore[no-untyped-def]
    cluster = ClusterFactory()
    response = admin_client.post(
        reverse("admin:probes_probeschedule_add"),
        {"name": "x", "cluster": cluster.pk, "probes": ["ssh_reachable"]},
    )
    assert response.status_code == 200 and b"exactly one of a crontab or an interval" in response.content
    assert (
        not ProbeSchedule.objects.exists()
        and not PeriodicTask.objects.filter(task="probes.probe_schedule_fire").exists()
    )


def test_firing_the_same_slot_twice_starts_each_probe_once() -> None:
    cluster = ClusterFactory()
    every = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    schedule = ProbeSchedule.objects.create(
        name="s", cluster=cluster, probes=["ssh_reachable"], interval=every
    )
    now = dt.datetime(2026, 11, 30, 11, 0, 30, tzinfo=dt.UTC)
    first = services.probe_schedule_fire(schedule_id=schedule.pk, now=now)
    again = services.probe_schedule_fire(schedule_id=schedule.pk, now=now + dt.timedelta(seconds=20))
    assert [r.pk for r in first] == [r.pk for r in again] and ProbeRun.objects.count() == 1


def test_the_run_list_shows_progress_and_its_queries_do_not_grow_with_rows(
    admin_client, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    cluster = ClusterFactory()
    slot = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)

    def add_runs(n: int, offset: int) -> None:
        for i in range(n):
            run = services.probe_runs_start(
                cluster=ClusterFactory(provider=cluster.provider), probe_ids=["ssh_reachable"],
                slot=slot + dt.timedelta(minutes=offset + i),
            )[0]  # fmt: skip
            ProbeRun.objects.filter(pk=run.pk).update(progress_done=2, progress_total=3)

    add_runs(2, 0)
    url = reverse("admin:probes_proberun_changelist")
    with django_assert_max_num_queries(12) as few:
        page = admin_client.get(url).content.decode()
    assert "2/3" in page
    add_runs(10, 100)
    with django_assert_max_num_queries(len(few.captured_queries)):
        admin_client.get(url)


def test_a_schedule_saved_outside_the_admin_fires_through_celery_beat_and_follows_each_change() -> None:
    cluster = ClusterFactory()
    hourly = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    daily = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.DAYS)
    schedule = ProbeSchedule.objects.create(name="orm", cluster=cluster, probes=["ssh_reachable"], interval=hourly)
    task = PeriodicTask.objects.get(pk=ProbeSchedule.objects.get(pk=schedule.pk).periodic_task_id)
    assert task.task == "probes.probe_schedule_fire" and task.args == f"[{schedule.pk}]"
    assert task.interval == hourly and task.enabled

    schedule.interval, schedule.enabled = daily, False
    schedule.save()
    task.refresh_from_db()
    assert task.interval == daily and not task.enabled

    schedule.delete()
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()


def test_the_sweeper_fires_every_minute_after_migrate_even_if_its_task_was_lost() -> None:
    from django.apps import apps as django_apps
    from django.db.models.signals import post_migrate

    PeriodicTask.objects.filter(name=services.SWEEPER_NAME).delete()
    probes_app = django_apps.get_app_config("probes")
    post_migrate.send(
        sender=probes_app, app_config=probes_app, verbosity=0, interactive=False, using="default",
        apps=django_apps, plan=[],
    )
    task = PeriodicTask.objects.get(name=services.SWEEPER_NAME)
    assert task.task == "probes.probe_run_sweep" and task.queue == "default" and task.enabled
    assert (task.interval.every, task.interval.period) == (1, IntervalSchedule.MINUTES)
