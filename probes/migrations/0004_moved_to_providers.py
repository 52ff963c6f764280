"""The cluster and cycle foreign keys now name providers.Cluster / providers.Cycle (state only).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('probes', '0003_finding_immutable_and_sweeper'),
        ('providers', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='clusteraccess',
                    name='cluster',
                    field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='access', to='providers.cluster'),
                ),
                migrations.AlterField(
                    model_name='hostkeypin',
                    name='cluster',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='host_key_pins', to='providers.cluster'),
                ),
                migrations.AlterField(
                    model_name='proberun',
                    name='cluster',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='probe_runs', to='providers.cluster'),
                ),
                migrations.AlterField(
                    model_name='proberun',
                    name='cycle',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='probe_runs', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='probeschedule',
                    name='cluster',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='probe_schedules', to='providers.cluster'),
                ),
                migrations.AlterField(
                    model_name='probeschedule',
                    name='cycle',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='probe_schedules', to='providers.cycle'),
                ),
                migrations.AlterField(
                    model_name='tenantaccount',
                    name='cluster',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tenant_accounts', to='providers.cluster'),
                ),
            ],
        ),
    ]
