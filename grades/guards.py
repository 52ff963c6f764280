"""The database refuses any change to a frozen grade definition (config.immutability).

The freeze itself (draft -> frozen, one UPDATE) is allowed: the guard
(``rubric.versioned.frozen_document_guard``, as for rubric versions) looks at the row's *old*
status. Installed by migration 0002 and again after every migrate.
"""

from __future__ import annotations

from config.immutability import Guard
from rubric.versioned import frozen_document_guard

MESSAGE = "grade definition is frozen; clone it into a new draft to change it"

GUARDS: tuple[Guard, ...] = (frozen_document_guard(table="grades_gradedefinition", message=MESSAGE),)
