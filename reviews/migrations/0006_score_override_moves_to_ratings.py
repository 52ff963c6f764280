"""ScoreOverride now lives in ratings (state only; the table reviews_scoreoverride stays).
"""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('ratings', '0005_score_override_moves_to_ratings'),
        ('reviews', '0005_moved_to_providers'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveConstraint(
                    model_name='scoreoverride',
                    name='override_value_0_1',
                ),
                migrations.RemoveConstraint(
                    model_name='scoreoverride',
                    name='override_has_justification',
                ),
                migrations.RemoveConstraint(
                    model_name='scoreoverride',
                    name='override_four_eyes',
                ),
                migrations.RemoveConstraint(
                    model_name='scoreoverride',
                    name='override_decision_recorded',
                ),
                migrations.RemoveConstraint(
                    model_name='scoreoverride',
                    name='override_one_approved_per_unit',
                ),
                migrations.DeleteModel(
                    name='ScoreOverride',
                ),
            ],
        ),
    ]
