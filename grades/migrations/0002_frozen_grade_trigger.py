"""A database trigger that refuses any change to a frozen grade definition (grades.guards).

The services, the model and the admin refuse it already; this is the last line, so a raw
``QuerySet.update()`` or a SQL console cannot change a frozen grade either. The freeze itself is
allowed: the trigger looks at the row's *old* status.
"""

from django.db import migrations

from config import immutability


def _guards():
    from grades.guards import GUARDS

    return GUARDS


class Migration(migrations.Migration):
    dependencies = [
        ("grades", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(*immutability.migration_operations(_guards)),
    ]
