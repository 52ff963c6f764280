"""Database triggers that refuse any write to a frozen rubric version, its areas or criteria.

The services, the models, the admin and the API already refuse such edits; these triggers
are the last line, so a raw ``QuerySet.update()``, a bulk write or a SQL console cannot
change a frozen version either. The freeze itself (draft -> frozen, one UPDATE of the
version row) is allowed because the trigger looks at the row's *old* status.

The SQL is vendor-specific: PostgreSQL (tests, production) gets plpgsql trigger functions
that raise with SQLSTATE 23000 (Django: IntegrityError); SQLite (the quick start) gets
triggers that ``RAISE(ABORT, ...)`` (also IntegrityError).
"""

from django.db import migrations

MESSAGE = "rubric version is frozen; clone it into a new draft to change it"

POSTGRES_FORWARD = [
    f"""
    CREATE OR REPLACE FUNCTION rubric_refuse_frozen_version() RETURNS trigger AS $$
    BEGIN
        IF OLD.status = 'frozen' THEN
            RAISE EXCEPTION '% (rubric_rubricversion id=%)', '{MESSAGE}', OLD.id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END;
    $$ LANGUAGE plpgsql;
    """,
    f"""
    CREATE OR REPLACE FUNCTION rubric_refuse_frozen_child() RETURNS trigger AS $$
    BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') AND EXISTS (
            SELECT 1 FROM rubric_rubricversion v WHERE v.id = OLD.rubric_version_id AND v.status = 'frozen'
        ) THEN
            RAISE EXCEPTION '% (% id=%)', '{MESSAGE}', TG_TABLE_NAME, OLD.id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') AND EXISTS (
            SELECT 1 FROM rubric_rubricversion v WHERE v.id = NEW.rubric_version_id AND v.status = 'frozen'
        ) THEN
            RAISE EXCEPTION '% (% into version id=%)', '{MESSAGE}', TG_TABLE_NAME, NEW.rubric_version_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END;
    $$ LANGUAGE plpgsql;
    """,  # noqa: S608 (constant text, no input)
    """
    CREATE TRIGGER rubric_version_frozen_guard
        BEFORE UPDATE OR DELETE ON rubric_rubricversion
        FOR EACH ROW EXECUTE FUNCTION rubric_refuse_frozen_version();
    """,
    """
    CREATE TRIGGER rubric_area_frozen_guard
        BEFORE INSERT OR UPDATE OR DELETE ON rubric_area
        FOR EACH ROW EXECUTE FUNCTION rubric_refuse_frozen_child();
    """,
    """
    CREATE TRIGGER rubric_criterion_frozen_guard
        BEFORE INSERT OR UPDATE OR DELETE ON rubric_criterion
        FOR EACH ROW EXECUTE FUNCTION rubric_refuse_frozen_child();
    """,
]

POSTGRES_REVERSE = [
    "DROP TRIGGER IF EXISTS rubric_criterion_frozen_guard ON rubric_criterion;",
    "DROP TRIGGER IF EXISTS rubric_area_frozen_guard ON rubric_area;",
    "DROP TRIGGER IF EXISTS rubric_version_frozen_guard ON rubric_rubricversion;",
    "DROP FUNCTION IF EXISTS rubric_refuse_frozen_child();",
    "DROP FUNCTION IF EXISTS rubric_refuse_frozen_version();",
]


def _sqlite_child(table: str) -> list[str]:
    frozen = "(SELECT status FROM rubric_rubricversion WHERE id = {ref}.rubric_version_id) = 'frozen'"
    return [
        f"""
        CREATE TRIGGER {table}_frozen_insert BEFORE INSERT ON {table}
        FOR EACH ROW WHEN {frozen.format(ref="NEW")}
        BEGIN SELECT RAISE(ABORT, '{MESSAGE} ({table})'); END;
        """,
        f"""
        CREATE TRIGGER {table}_frozen_update BEFORE UPDATE ON {table}
        FOR EACH ROW WHEN {frozen.format(ref="OLD")} OR {frozen.format(ref="NEW")}
        BEGIN SELECT RAISE(ABORT, '{MESSAGE} ({table})'); END;
        """,
        f"""
        CREATE TRIGGER {table}_frozen_delete BEFORE DELETE ON {table}
        FOR EACH ROW WHEN {frozen.format(ref="OLD")}
        BEGIN SELECT RAISE(ABORT, '{MESSAGE} ({table})'); END;
        """,
    ]


SQLITE_FORWARD = [
    f"""
    CREATE TRIGGER rubric_rubricversion_frozen_update BEFORE UPDATE ON rubric_rubricversion
    FOR EACH ROW WHEN OLD.status = 'frozen'
    BEGIN SELECT RAISE(ABORT, '{MESSAGE} (rubric_rubricversion)'); END;
    """,
    f"""
    CREATE TRIGGER rubric_rubricversion_frozen_delete BEFORE DELETE ON rubric_rubricversion
    FOR EACH ROW WHEN OLD.status = 'frozen'
    BEGIN SELECT RAISE(ABORT, '{MESSAGE} (rubric_rubricversion)'); END;
    """,
    *_sqlite_child("rubric_area"),
    *_sqlite_child("rubric_criterion"),
]

SQLITE_REVERSE = [
    f"DROP TRIGGER IF EXISTS {name};"
    for name in (
        "rubric_rubricversion_frozen_update", "rubric_rubricversion_frozen_delete",
        *(f"{t}_frozen_{op}" for t in ("rubric_area", "rubric_criterion") for op in ("insert", "update", "delete")),
    )
]


def _run(statements: dict[str, list[str]]):
    def apply(apps, schema_editor) -> None:
        vendor = schema_editor.connection.vendor
        if vendor not in statements:
            raise RuntimeError(f"no frozen-rubric triggers written for database vendor {vendor!r}")
        for sql in statements[vendor]:
            schema_editor.execute(sql, params=None)

    return apply


class Migration(migrations.Migration):
    dependencies = [
        ("rubric", "0002_constraints_and_choices"),
    ]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES_FORWARD, "sqlite": SQLITE_FORWARD}),
            _run({"postgresql": POSTGRES_REVERSE, "sqlite": SQLITE_REVERSE}),
        ),
    ]
