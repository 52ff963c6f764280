"""Provider, Cluster and Cycle move here from ratings: state only, the tables keep their names.

The rows never move: ``db_table`` names the existing ``ratings_*`` tables (and the M2M
table ``ratings_cycle_providers`` follows from it). The content types are renamed so that
permissions, admin log entries and group grants keep pointing at the same models.
"""

import django.db.models.deletion
from django.db import migrations, models

MOVED = ("provider", "cluster", "cycle")


def _relabel(apps, schema_editor, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MOVED:
        if content_type.objects.using(db).filter(app_label=new, model=model).exists():
            continue  # already there (created by a post_migrate); keep it, leave the old one be
        content_type.objects.using(db).filter(app_label=old, model=model).update(app_label=new)


def _content_types_to_providers(apps, schema_editor) -> None:
    _relabel(apps, schema_editor, "ratings", "providers")


def _content_types_to_ratings(apps, schema_editor) -> None:
    _relabel(apps, schema_editor, "providers", "ratings")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('ratings', '0003_score_snapshot_triggers'),
        ('rubric', '0003_frozen_rubric_triggers'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='Provider',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200, unique=True)),
                        ('slug', models.SlugField(max_length=64, unique=True)),
                        ('website', models.URLField(blank=True)),
                        ('status', models.CharField(choices=[('active', 'Active (rated)'), ('tracked', 'Tracked (not rated yet)'), ('retired', 'Retired')], default='active', max_length=16)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'ratings_provider',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='Cycle',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('slug', models.SlugField(max_length=64, unique=True)),
                        ('period_start', models.DateField()),
                        ('period_end', models.DateField()),
                        ('status', models.CharField(choices=[('planned', 'Planned'), ('collecting', 'Collecting evidence'), ('scoring', 'Scoring'), ('closed', 'Closed')], default='planned', max_length=16)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('rubric_version', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='cycles', to='rubric.rubricversion')),
                        ('providers', models.ManyToManyField(blank=True, help_text='The peer set.', related_name='cycles', to='providers.provider')),
                    ],
                    options={
                        'db_table': 'ratings_cycle',
                        'ordering': ['-period_start', 'slug'],
                        'constraints': [models.CheckConstraint(condition=models.Q(('period_end__gte', models.F('period_start'))), name='cycle_period_ordered')],
                    },
                ),
                migrations.CreateModel(
                    name='Cluster',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('region', models.CharField(blank=True, max_length=64)),
                        ('gpu_model', models.CharField(blank=True, help_text="As ordered, e.g. 'H100-SXM-80GB'.", max_length=64)),
                        ('gpu_count', models.PositiveIntegerField(default=0, help_text='GPUs ordered in this cluster.')),
                        ('orchestrator', models.CharField(choices=[('slurm', 'Slurm'), ('kubernetes', 'Kubernetes'), ('standalone', 'Standalone')], default='slurm', max_length=16)),
                        ('list_price_per_gpu_hour', models.DecimalField(blank=True, decimal_places=4, help_text='List price in $/GPU-hour.', max_digits=8, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('provider', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='clusters', to='providers.provider')),
                    ],
                    options={
                        'db_table': 'ratings_cluster',
                        'ordering': ['provider__name', 'name'],
                        'constraints': [models.UniqueConstraint(fields=('provider', 'name'), name='cluster_unique_name_per_provider'), models.CheckConstraint(condition=models.Q(('list_price_per_gpu_hour__isnull', True), ('list_price_per_gpu_hour__gte', 0), _connector='OR'), name='cluster_price_not_negative')],
                    },
                ),
            ],
        ),
        migrations.RunPython(_content_types_to_providers, _content_types_to_ratings),
    ]
