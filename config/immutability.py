"""Immutable records, in the models and in the database: one error, one model mixin, one trigger helper.

Frozen rubric versions, probe findings, score snapshots and published reports never change.
Their models refuse it (``ImmutableModel`` for rows that are final once written; the rubric
and the reports refuse conditionally in their own ``save``), and every refusal raises
:class:`ImmutableError` or a subclass of it. The database is the last line: a :class:`Guard`
describes, per row operation, when the table refuses it, and :func:`install` writes that as
PostgreSQL (one plpgsql function + trigger, SQLSTATE 23000/23001 -> Django ``IntegrityError``)
or SQLite (one ``RAISE(ABORT, ...)`` trigger per operation, also ``IntegrityError``) triggers.

SQLite rebuilds a table for most ``ALTER``s (create a copy, move the rows, drop the old one),
and the rebuild silently drops the table's triggers. So each app also ``register``s its
guards, and after every ``migrate`` (``post_migrate``) they are installed again, replacing
what is there: a later migration can never leave an immutable table unguarded.

Conditions are SQL over ``OLD``/``NEW`` written once for both vendors: ``{distinct}`` stands
for "differs, NULL-safe" and ``{same}`` for "equal, NULL-safe". TRUNCATE (test database
flushes) is not a row operation and stays possible for the owner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connections, models
from django.db.models.signals import post_migrate

from config.errors import Conflict

OPERATIONS = ("INSERT", "UPDATE", "DELETE")
_VENDOR_OPS = {
    "postgresql": {"distinct": "IS DISTINCT FROM", "same": "IS NOT DISTINCT FROM"},
    "sqlite": {"distinct": "IS NOT", "same": "IS"},
}


class ImmutableError(Conflict):
    """An immutable record (frozen rubric, finding, snapshot, published report) was asked to change."""


class ImmutableModel(models.Model):
    """A row that is final once inserted: ``save`` of a stored row and ``delete`` both refuse.

    ``immutable_hint`` says what to do instead (it ends the error message).
    """

    immutable_hint = "record a new one instead"

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableError(f"{type(self).__name__} {self.pk} is immutable; {self.immutable_hint}")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ImmutableError(f"{type(self).__name__} {self.pk} is immutable and is never deleted")


@dataclass(frozen=True)
class Guard:
    """When ``table`` refuses a row operation: ``refuse`` maps INSERT/UPDATE/DELETE to a SQL
    condition over OLD/NEW (``"TRUE"``: always). ``name`` names the triggers (and the
    PostgreSQL function); ``replaces`` lists older trigger/function names to drop first."""

    name: str
    table: str
    message: str
    refuse: Mapping[str, str]
    errcode: str = "integrity_constraint_violation"
    replaces: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        unknown = set(self.refuse) - set(OPERATIONS)
        if unknown or not self.refuse:
            raise ValueError(f"guard {self.name}: operations must be among {OPERATIONS}, got {sorted(self.refuse)}")
        if "'" in self.message:
            raise ValueError(f"guard {self.name}: the message must not contain a quote")

    def condition(self, operation: str, vendor: str) -> str:
        return self.refuse[operation].format(**_VENDOR_OPS[vendor])


def postgresql_sql(guard: Guard) -> list[str]:
    ops = [op for op in OPERATIONS if op in guard.refuse]
    # Nested IFs: the condition of one operation may name a row (OLD or NEW) the others lack.
    checks = "\n".join(
        f"    IF TG_OP = '{op}' THEN\n"
        f"        IF {guard.condition(op, 'postgresql')} THEN\n"
        f"            RAISE EXCEPTION '% (% % refused)', '{guard.message}', TG_TABLE_NAME, TG_OP\n"
        f"                USING ERRCODE = '{guard.errcode}';\n"
        "        END IF;\n"
        "    END IF;"
        for op in ops
    )
    return [
        f"""
CREATE OR REPLACE FUNCTION {guard.name}() RETURNS trigger AS $$
BEGIN
{checks}
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
""",
        f"DROP TRIGGER IF EXISTS {guard.name} ON {guard.table};",
        f"CREATE TRIGGER {guard.name} BEFORE {' OR '.join(ops)} ON {guard.table} "
        f"FOR EACH ROW EXECUTE FUNCTION {guard.name}();",
    ]


def sqlite_sql(guard: Guard) -> list[str]:
    out = []
    for op in OPERATIONS:
        if op not in guard.refuse:
            continue
        condition = guard.condition(op, "sqlite")
        when = "" if condition.strip().upper() == "TRUE" else f" WHEN {condition}"
        trigger = f"{guard.name}_{op.lower()}"
        out += [
            f"DROP TRIGGER IF EXISTS {trigger};",
            f"CREATE TRIGGER {trigger} BEFORE {op} ON {guard.table} FOR EACH ROW{when} "
            f"BEGIN SELECT RAISE(ABORT, '{guard.message} ({guard.table} {op} refused)'); END;",
        ]
    return out


def uninstall_sql(guard: Guard, vendor: str) -> list[str]:
    if vendor == "postgresql":
        return [f"DROP TRIGGER IF EXISTS {guard.name} ON {guard.table};", f"DROP FUNCTION IF EXISTS {guard.name}();"]
    if vendor == "sqlite":
        return [f"DROP TRIGGER IF EXISTS {guard.name}_{op.lower()};" for op in OPERATIONS]
    return []


def _replaced_sql(guard: Guard, vendor: str) -> list[str]:
    if vendor == "postgresql":
        return [f"DROP TRIGGER IF EXISTS {old} ON {guard.table};" for old in guard.replaces] + [
            f"DROP FUNCTION IF EXISTS {old}() CASCADE;" for old in guard.replaces
        ]
    return [f"DROP TRIGGER IF EXISTS {old};" for old in guard.replaces]


def install_sql(guard: Guard, vendor: str) -> list[str]:
    if vendor == "postgresql":
        return _replaced_sql(guard, vendor) + postgresql_sql(guard)
    if vendor == "sqlite":
        return _replaced_sql(guard, vendor) + sqlite_sql(guard)
    raise NotImplementedError(f"no immutability triggers for database vendor {vendor!r} ({guard.table})")


def install(schema_editor: Any, *guards: Guard) -> None:
    """Install (or replace) the guards' triggers; a migration's ``RunPython`` calls this."""
    for guard in guards:
        for statement in install_sql(guard, schema_editor.connection.vendor):
            schema_editor.execute(statement, params=None)


def uninstall(schema_editor: Any, *guards: Guard) -> None:
    for guard in guards:
        for statement in uninstall_sql(guard, schema_editor.connection.vendor):
            schema_editor.execute(statement, params=None)


def migration_operations(guards: Callable[[], Iterable[Guard]]) -> tuple[Callable[..., None], Callable[..., None]]:
    """``(forward, backward)`` for ``migrations.RunPython``; ``guards`` is called at migrate time.

    A guard whose table a later migration creates is left to the reinstall after migrate.
    """

    def forward(apps: Any, schema_editor: Any) -> None:
        tables = set(schema_editor.connection.introspection.table_names())
        install(schema_editor, *(guard for guard in guards() if guard.table in tables))

    def backward(apps: Any, schema_editor: Any) -> None:
        uninstall(schema_editor, *guards())

    return forward, backward


# ---------------------------------------------------------------------------- after every migrate
_REGISTRY: dict[str, tuple[Guard, ...]] = {}


def register(app_label: str, guards: Iterable[Guard]) -> None:
    """Have ``app_label``'s guards reinstalled after every ``migrate`` (call from ``AppConfig.ready``)."""
    _REGISTRY[app_label] = tuple(guards)
    post_migrate.connect(_reinstall, dispatch_uid="config.immutability.reinstall")


def registered() -> dict[str, tuple[Guard, ...]]:
    return dict(_REGISTRY)


def reinstall(using: str = "default", app_labels: Iterable[str] | None = None) -> list[str]:
    """Install the registered guards (of ``app_labels``, default all) whose tables exist.

    Returns the tables guarded.
    """
    connection = connections[using]
    if connection.vendor not in _VENDOR_OPS:
        return []
    labels = list(_REGISTRY) if app_labels is None else [label for label in app_labels if label in _REGISTRY]
    tables = set(connection.introspection.table_names())
    wanted = [guard for label in labels for guard in _REGISTRY[label] if guard.table in tables]
    if wanted:
        with connection.schema_editor(atomic=True) as editor:
            install(editor, *wanted)
    return [guard.table for guard in wanted]


def _reinstall(sender: Any, *, using: str = "default", **kwargs: Any) -> None:
    # post_migrate is sent to every app after each migrate (and test flush), when all
    # migrations of the run have been applied: each app puts its own guards back.
    reinstall(using, [sender.label])
