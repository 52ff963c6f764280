"""Install the database triggers that keep published reports immutable (reports.dbguard)."""

from django.db import migrations

from reports import dbguard

FROZEN_COLUMNS = [
    "cycle_id", "content", "content_hash", "supersedes_id", "correction_notice", "published_at",
    "published_by_id", "created_at", "created_by_id", "fact_check_opened_at",
]


def forwards(apps, schema_editor):
    dbguard.install(schema_editor, FROZEN_COLUMNS)


def backwards(apps, schema_editor):
    dbguard.uninstall(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("reports", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
