"""The database refuses any write to a frozen rubric version, its areas or its criteria.

The freeze itself (draft -> frozen, one UPDATE of the version row) is allowed: the version's
guard (``rubric.versioned.frozen_document_guard``, as for grade definitions) looks at the row's
*old* status. Installed by migration 0003 and again after every
migrate (config.immutability).
"""

from __future__ import annotations

from config.immutability import Guard
from rubric.versioned import frozen_document_guard

MESSAGE = "rubric version is frozen; clone it into a new draft to change it"
_PARENT_FROZEN = "(SELECT v.status FROM rubric_rubricversion v WHERE v.id = {row}.rubric_version_id) = 'frozen'"


def _child(table: str) -> Guard:
    old, new = _PARENT_FROZEN.format(row="OLD"), _PARENT_FROZEN.format(row="NEW")
    return Guard(
        name=f"{table}_frozen", table=table, message=MESSAGE,
        refuse={"INSERT": new, "UPDATE": f"{old} OR {new}", "DELETE": old},
        replaces=(f"{table}_frozen_guard", "rubric_refuse_frozen_child"),  # the first triggers' names
    )


GUARDS: tuple[Guard, ...] = (
    frozen_document_guard(
        table="rubric_rubricversion", message=MESSAGE,
        replaces=("rubric_version_frozen_guard", "rubric_refuse_frozen_version"),
    ),
    _child("rubric_area"),
    _child("rubric_criterion"),
)
