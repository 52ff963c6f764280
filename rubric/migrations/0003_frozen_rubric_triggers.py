"""Database triggers that refuse any write to a frozen rubric version, its areas or criteria.

The services, the models, the admin and the API already refuse such edits; these triggers
are the last line, so a raw ``QuerySet.update()``, a bulk write or a SQL console cannot
change a frozen version either. The freeze itself (draft -> frozen, one UPDATE of the
version row) is allowed because the trigger looks at the row's *old* status.

The guards are ``rubric.guards``; ``config.immutability`` writes them for PostgreSQL (tests,
production) and SQLite (the quick start), both surfacing as IntegrityError.
"""

from django.db import migrations

from config import immutability


def _guards():
    from rubric.guards import GUARDS

    return GUARDS


class Migration(migrations.Migration):
    dependencies = [
        ("rubric", "0002_constraints_and_choices"),
    ]

    operations = [
        migrations.RunPython(*immutability.migration_operations(_guards)),
    ]
