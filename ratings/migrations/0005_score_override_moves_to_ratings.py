"""ScoreOverride moves here from reviews: state only, the table keeps its name.

The engine reads approved overrides as evidence, and ratings sits below reviews, so the row
belongs here; the four-eyes workflow stays in reviews.services. The table
``reviews_scoreoverride`` and its history (``reviews.HistoricalScoreOverride``) are untouched;
the content type is renamed so permissions and admin log entries follow the model.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _relabel(apps, schema_editor, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    if not content_type.objects.using(db).filter(app_label=new, model="scoreoverride").exists():
        content_type.objects.using(db).filter(app_label=old, model="scoreoverride").update(app_label=new)


def _content_type_to_ratings(apps, schema_editor) -> None:
    _relabel(apps, schema_editor, "reviews", "ratings")


def _content_type_to_reviews(apps, schema_editor) -> None:
    _relabel(apps, schema_editor, "ratings", "reviews")


class Migration(migrations.Migration):

    dependencies = [
        ('reviews', '0005_moved_to_providers'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('providers', '0001_initial'),
        ('ratings', '0004_moved_to_providers'),
        ('rubric', '0003_frozen_rubric_triggers'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='ScoreOverride',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('value', models.FloatField(help_text='New normalised criterion score, 0 (worst) to 1 (best).')),
                        ('justification', models.TextField()),
                        ('evidence', models.JSONField(default=list, help_text='List of {url, quote} supporting the change.')),
                        ('status', models.CharField(choices=[('proposed', 'Proposed'), ('approved', 'Approved'), ('rejected', 'Rejected')], default='proposed', max_length=10)),
                        ('decision_note', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('decided_at', models.DateTimeField(blank=True, null=True)),
                        ('criterion', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='score_overrides', to='rubric.criterion')),
                        ('cycle', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='score_overrides', to='providers.cycle')),
                        ('decided_by', models.ForeignKey(blank=True, help_text='The second publisher who approved or rejected it.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('proposed_by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('provider', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='score_overrides', to='providers.provider')),
                    ],
                    options={
                        'db_table': 'reviews_scoreoverride',
                        'ordering': ['-created_at'],
                        'constraints': [models.CheckConstraint(condition=models.Q(('value__gte', 0), ('value__lte', 1)), name='override_value_0_1'), models.CheckConstraint(condition=models.Q(('justification', ''), _negated=True), name='override_has_justification'), models.CheckConstraint(condition=models.Q(('decided_by__isnull', True), models.Q(('decided_by', models.F('proposed_by')), _negated=True), _connector='OR'), name='override_four_eyes'), models.CheckConstraint(condition=models.Q(('status', 'proposed'), models.Q(('decided_by__isnull', False), ('decided_at__isnull', False)), _connector='OR'), name='override_decision_recorded'), models.UniqueConstraint(condition=models.Q(('status', 'approved')), fields=('cycle', 'provider', 'criterion'), name='override_one_approved_per_unit')],
                    },
                ),
            ],
        ),
        migrations.RunPython(_content_type_to_ratings, _content_type_to_reviews),
    ]
