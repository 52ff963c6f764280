"""RightOfReply.report_id becomes a real foreign key to reports.Report; the column keeps its name.

A reply filed before replies were checked could name a report id that does not exist (the
id was a plain integer). Such a dangling id is set to NULL first: the reply itself, its
cycle, fact and text stay, and it no longer points at a report that is not there. Reports
are never deleted (database triggers), so nothing else can dangle. The history table keeps
its old ids, as history does (its column has no constraint).
"""

import django.db.models.deletion
from django.db import migrations, models

HELP = "The draft report replied to, if any."


def dangling_report_ids_clear(apps, schema_editor):
    reply = apps.get_model("reviews", "RightOfReply")
    report = apps.get_model("reports", "Report")
    db = schema_editor.connection.alias
    replies = reply.objects.using(db).filter(report_id__isnull=False)
    dangling = replies.exclude(report_id__in=report.objects.using(db).values("pk"))
    dangling.update(report_id=None)


def _as_plain_column(model_name: str) -> list:
    """State only: the integer field ``report_id`` becomes ``report`` on the same column."""
    return [
        migrations.RemoveField(model_name=model_name, name="report_id"),
        migrations.AddField(
            model_name=model_name, name="report",
            field=models.BigIntegerField(null=True, blank=True, db_column="report_id", help_text=HELP),
        ),
    ]


class Migration(migrations.Migration):

    dependencies = [
        ("reports", "0005_moved_to_providers"),
        ("reviews", "0006_score_override_moves_to_ratings"),
    ]

    operations = [
        migrations.RunPython(dangling_report_ids_clear, migrations.RunPython.noop),
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=_as_plain_column("rightofreply") + _as_plain_column("historicalrightofreply"),
        ),
        migrations.AlterField(
            model_name="historicalrightofreply",
            name="report",
            field=models.ForeignKey(blank=True, db_constraint=False, help_text=HELP, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name="+", to="reports.report"),
        ),
        migrations.AlterField(
            model_name="rightofreply",
            name="report",
            field=models.ForeignKey(blank=True, help_text=HELP, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="replies", to="reports.report"),
        ),
    ]
