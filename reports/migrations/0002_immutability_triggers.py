"""Install the database triggers that keep published reports immutable (reports.guards)."""

from django.db import migrations

from config import immutability

FROZEN_COLUMNS = [
    "cycle_id", "content", "content_hash", "supersedes_id", "correction_notice", "published_at",
    "published_by_id", "created_at", "created_by_id", "fact_check_opened_at",
]


def _guards():
    from reports.guards import report_guard

    return (report_guard(FROZEN_COLUMNS),)  # the columns as this migration was written


forwards, backwards = immutability.migration_operations(_guards)


class Migration(migrations.Migration):
    dependencies = [("reports", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
