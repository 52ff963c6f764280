"""Findings are immutable in the database too; the stuck-run sweeper runs every minute.

The trigger is the last line behind ``Finding.save``/``delete``: ``QuerySet.update``, raw SQL or a
careless migration cannot change or delete a finding either. (TRUNCATE, which test teardown uses,
does not fire row triggers.)
"""

from django.db import migrations

PG_FORWARD = """
CREATE OR REPLACE FUNCTION probes_finding_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION USING
        MESSAGE = 'probes_finding: a finding is immutable (' || TG_OP || ' refused)',
        ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER probes_finding_immutable
    BEFORE UPDATE OR DELETE ON probes_finding
    FOR EACH ROW EXECUTE FUNCTION probes_finding_immutable();
"""
PG_BACKWARD = """
DROP TRIGGER IF EXISTS probes_finding_immutable ON probes_finding;
DROP FUNCTION IF EXISTS probes_finding_immutable();
"""
SQLITE_FORWARD = [
    "CREATE TRIGGER probes_finding_no_update BEFORE UPDATE ON probes_finding "
    "BEGIN SELECT RAISE(ABORT, 'probes_finding: a finding is immutable'); END;",
    "CREATE TRIGGER probes_finding_no_delete BEFORE DELETE ON probes_finding "
    "BEGIN SELECT RAISE(ABORT, 'probes_finding: a finding is immutable'); END;",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS probes_finding_no_update;",
    "DROP TRIGGER IF EXISTS probes_finding_no_delete;",
]

SWEEPER_NAME = "probes: re-send stuck probe runs"


def install_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_FORWARD)
    elif schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE_FORWARD:
            schema_editor.execute(sql)


def remove_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_BACKWARD)
    elif schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE_BACKWARD:
            schema_editor.execute(sql)


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
