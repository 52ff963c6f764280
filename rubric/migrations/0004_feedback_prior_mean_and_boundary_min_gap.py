"""Two scoring parameters of issue 14: the prior mean customer feedback is shrunk toward, and
the minimum gap of a tier boundary. Defaults keep every existing version's behaviour.

SQLite rebuilds a table to add a column, and the frozen-rubric triggers on the area and
criterion tables name the version table, so the guards step aside for the rebuild and come
back right after (they are also reinstalled after every migrate).
"""

from django.db import migrations, models

from config import immutability


def _guards():
    from rubric.guards import GUARDS

    return GUARDS


def _lift(apps, schema_editor):  # type: ignore[no-untyped-def]
    immutability.uninstall(schema_editor, *_guards())


_restore, _ = immutability.migration_operations(_guards)


class Migration(migrations.Migration):

    dependencies = [
        ('rubric', '0003_frozen_rubric_triggers'),
    ]

    operations = [
        migrations.RunPython(_lift, _restore),
        migrations.AddField(
            model_name='rubricversion',
            name='boundary_min_gap',
            field=models.FloatField(default=0.0, help_text="Composite points (0-1) a tier boundary needs besides the bootstrap's confirmation."),
        ),
        migrations.AddField(
            model_name='rubricversion',
            name='feedback_prior_mean',
            field=models.FloatField(default=3.0, help_text='The rating (1-5) customer feedback is shrunk toward: a rubric constant, never the peer mean.'),
        ),
        migrations.AlterField(
            model_name='rubricversion',
            name='feedback_prior_strength',
            field=models.FloatField(default=5.0, help_text="Pseudo-count of the Bayesian average toward the rubric's prior mean."),
        ),
        migrations.RunPython(_restore, _lift),
    ]
