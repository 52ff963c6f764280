"""Report.cycle now names providers.Cycle (state only).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('providers', '0001_initial'),
        ('reports', '0004_report_source'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='report',
                    name='cycle',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reports', to='providers.cycle'),
                ),
            ],
        ),
    ]
