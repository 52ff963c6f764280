"""A finding may be ``declined``: the provider did not allow or provide what the probe needs.

The outcome vocabulary is rubric.spec.Outcome; this only widens the column's choices.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('probes', '0004_moved_to_providers'),
    ]

    operations = [
        migrations.AlterField(
            model_name='finding',
            name='outcome',
            field=models.CharField(choices=[('pass', 'Pass'), ('fail', 'Fail'), ('warn', 'Warn'), ('error', 'Error (our harness)'), ('provider_error', 'Provider error'), ('timeout', 'Timeout'), ('not_applicable', 'Not applicable'), ('declined', 'Declined by the provider')], max_length=16),
        ),
    ]
