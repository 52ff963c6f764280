"""Database triggers that refuse UPDATE and DELETE of score snapshots and tier assignments.

The models refuse it in ``save``/``delete``; these triggers are the last line, so a raw
``QuerySet.update()``, a bulk delete or a SQL console cannot rewrite a computed result
either. A correction is a new snapshot. The guards are ``ratings.guards``, written for
PostgreSQL and SQLite by ``config.immutability`` (both surface as IntegrityError).
"""

from django.db import migrations

from config import immutability


def _guards():
    from ratings.guards import GUARDS

    return GUARDS


class Migration(migrations.Migration):
    dependencies = [
        ("ratings", "0002_evidence_and_score_snapshots"),
    ]

    operations = [
        migrations.RunPython(*immutability.migration_operations(_guards)),
        migrations.RunPython(
            lambda apps, schema_editor: _citations_check(schema_editor, add=True),
            lambda apps, schema_editor: _citations_check(schema_editor, add=False),
        ),
    ]


def _citations_check(schema_editor, *, add: bool) -> None:
    """PostgreSQL also checks in the table that a doc review carries at least one citation."""
    if schema_editor.connection.vendor != "postgresql":
        return  # SQLite (quick start): the model validator and the service enforce it
    if add:
        schema_editor.execute(
            "ALTER TABLE ratings_docreview ADD CONSTRAINT ratings_docreview_has_citation "
            "CHECK (jsonb_typeof(citations) = 'array' AND jsonb_array_length(citations) >= 1)"
        )
    else:
        schema_editor.execute("ALTER TABLE ratings_docreview DROP CONSTRAINT IF EXISTS ratings_docreview_has_citation")
