"""The database refuses any change to a frozen grade definition (config.immutability).

The freeze itself (draft -> frozen, one UPDATE) is allowed: the guard looks at the row's *old*
status. Installed by migration 0002 and again after every migrate.
"""

from __future__ import annotations

from config.immutability import Guard

MESSAGE = "grade definition is frozen; clone it into a new draft to change it"

GUARDS: tuple[Guard, ...] = (
    Guard(
        name="grades_gradedefinition_frozen", table="grades_gradedefinition", message=MESSAGE,
        refuse={"UPDATE": "OLD.status = 'frozen'", "DELETE": "OLD.status = 'frozen'"},
    ),
)
