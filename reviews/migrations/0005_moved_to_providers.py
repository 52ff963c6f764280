"""The provider and cycle foreign keys now name providers.Provider / providers.Cycle (state only).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('providers', '0001_initial'),
        ('reviews', '0004_evidence_rows'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='conflictofinterest',
                    name='provider',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='conflicts_of_interest', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='feedbackimport',
                    name='cycle',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='feedback_imports', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='historicalcluster',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='historicalconflictofinterest',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='historicalcustomerfeedback',
                    name='cycle',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='historicalcustomerfeedback',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='historicaldocreview',
                    name='cycle',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='historicaldocreview',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='historicalinterviewnote',
                    name='cycle',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='historicalinterviewnote',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='historicalprovidermembership',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='historicalreconciliation',
                    name='cycle',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='historicalreconciliation',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='historicalreport',
                    name='cycle',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='historicalreviewassignment',
                    name='cycle',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='historicalreviewassignment',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='historicalrightofreply',
                    name='cycle',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='historicalrightofreply',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='historicalscoreoverride',
                    name='cycle',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='historicalscoreoverride',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='historicalscoresnapshot',
                    name='cycle',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='historicaltierassignment',
                    name='provider',
                    field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='interviewnote',
                    name='cycle',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='interview_notes', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='interviewnote',
                    name='provider',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='interview_notes', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='providermembership',
                    name='provider',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='reconciliation',
                    name='cycle',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reconciliations', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='reconciliation',
                    name='provider',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reconciliations', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='reviewassignment',
                    name='cycle',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='review_assignments', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='reviewassignment',
                    name='provider',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='review_assignments', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='rightofreply',
                    name='cycle',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='replies', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='rightofreply',
                    name='provider',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='replies', to='providers.provider'),
                ),
                migrations.AlterField(
                    model_name='scoreoverride',
                    name='cycle',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='score_overrides', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='scoreoverride',
                    name='provider',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='score_overrides', to='providers.provider'),
                ),
            ],
        ),
    ]
