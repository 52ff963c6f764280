"""Database triggers that refuse UPDATE and DELETE of score snapshots and tier assignments.

The models refuse it in ``save``/``delete``; these triggers are the last line, so a raw
``QuerySet.update()``, a bulk delete or a SQL console cannot rewrite a computed result
either. A correction is a new snapshot. PostgreSQL (tests, production) gets a plpgsql
function raising SQLSTATE 23000 (Django: IntegrityError); SQLite (the quick start) gets
``RAISE(ABORT, ...)`` triggers (also IntegrityError). TRUNCATE (test database flushes) is
not a row operation and stays possible for the database owner.
"""

from django.db import migrations

MESSAGE = "score snapshots and tier assignments are immutable; compute a new snapshot instead"
TABLES = ("ratings_scoresnapshot", "ratings_tierassignment")

POSTGRES_FORWARD = [
    f"""
    CREATE OR REPLACE FUNCTION ratings_refuse_snapshot_change() RETURNS trigger AS $$
    BEGIN
        RAISE EXCEPTION '% (% % id=%)', '{MESSAGE}', TG_OP, TG_TABLE_NAME, OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END;
    $$ LANGUAGE plpgsql;
    """,
    *(
        f"""
        CREATE TRIGGER {table}_immutable
            BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION ratings_refuse_snapshot_change();
        """
        for table in TABLES
    ),
]
POSTGRES_REVERSE = [
    *(f"DROP TRIGGER IF EXISTS {table}_immutable ON {table};" for table in TABLES),
    "DROP FUNCTION IF EXISTS ratings_refuse_snapshot_change();",
]
SQLITE_FORWARD = [
    f"""
    CREATE TRIGGER {table}_immutable_{op} BEFORE {op.upper()} ON {table}
    FOR EACH ROW BEGIN SELECT RAISE(ABORT, '{MESSAGE} ({table})'); END;
    """
    for table in TABLES
    for op in ("update", "delete")
]
SQLITE_REVERSE = [f"DROP TRIGGER IF EXISTS {table}_immutable_{op};" for table in TABLES for op in ("update", "delete")]


def _run(statements: dict[str, list[str]]):
    def apply(apps, schema_editor) -> None:
        vendor = schema_editor.connection.vendor
        if vendor not in statements:
            raise RuntimeError(f"no snapshot immutability triggers written for database vendor {vendor!r}")
        for sql in statements[vendor]:
            schema_editor.execute(sql, params=None)

    return apply


class Migration(migrations.Migration):
    dependencies = [
        ("ratings", "0002_evidence_and_score_snapshots"),
    ]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES_FORWARD, "sqlite": SQLITE_FORWARD}),
            _run({"postgresql": POSTGRES_REVERSE, "sqlite": SQLITE_REVERSE}),
        ),
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
