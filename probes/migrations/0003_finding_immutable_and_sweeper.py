"""Findings are immutable in the database too; the stuck-run sweeper runs every minute.

The trigger (``probes.guards``, written by ``config.immutability``) is the last line behind
``Finding.save``/``delete``: ``QuerySet.update``, raw SQL or a careless migration cannot change or
delete a finding either. (TRUNCATE, which test teardown uses, does not fire row triggers.)
"""

from django.db import migrations

from config import immutability

SWEEPER_NAME = "probes: re-send stuck probe runs"


def _guards():
    from probes.guards import GUARDS

    return GUARDS


install_trigger, remove_trigger = immutability.migration_operations(_guards)


def add_sweeper(apps, schema_editor):
    interval_model = apps.get_model("django_celery_beat", "IntervalSchedule")
    task_model = apps.get_model("django_celery_beat", "PeriodicTask")
    every_minute, _ = interval_model.objects.get_or_create(every=1, period="minutes")
    task_model.objects.get_or_create(
        name=SWEEPER_NAME,
        defaults={"task": "probes.probe_run_sweep", "interval": every_minute, "queue": "default"},
    )


def remove_sweeper(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=SWEEPER_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("probes", "0002_access_schedules_run_lifecycle"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [
        migrations.RunPython(install_trigger, remove_trigger),
        migrations.RunPython(add_sweeper, remove_sweeper),
    ]
