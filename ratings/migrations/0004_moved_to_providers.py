"""Provider, Cluster and Cycle now live in the providers app (state only; no table changes).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('probes', '0004_moved_to_providers'),
        ('providers', '0001_initial'),
        ('ratings', '0003_score_snapshot_triggers'),
        ('reports', '0005_moved_to_providers'),
        ('reviews', '0005_moved_to_providers'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveConstraint(
                    model_name='cluster',
                    name='cluster_unique_name_per_provider',
                ),
                migrations.RemoveConstraint(
                    model_name='cluster',
                    name='cluster_price_not_negative',
                ),
                migrations.RemoveConstraint(
                    model_name='cycle',
                    name='cycle_period_ordered',
                ),
                migrations.AlterField(
                    model_name='scoresnapshot',
                    name='cycle',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='score_snapshots', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='customerfeedback',
                    name='cycle',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='customer_feedback', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='docreview',
                    name='cycle',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='doc_reviews', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='tierassignment',
                    name='provider',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='tier_assignments', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='customerfeedback',
                    name='provider',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='customer_feedback', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='docreview',
                    name='provider',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='doc_reviews', to='providers.provider'),
                ),
                migrations.RemoveField(
                    model_name='cycle',
                    name='providers',
                ),
                migrations.RemoveField(
                    model_name='cycle',
                    name='rubric_version',
                ),
                migrations.DeleteModel(
                    name='Cluster',
                ),
                migrations.DeleteModel(
                    name='Provider',
                ),
                migrations.DeleteModel(
                    name='Cycle',
                ),
            ],
        ),
    ]
