"""The database refuses UPDATE and DELETE of score snapshots and tier assignments.

A correction is a new snapshot (config.immutability; migration 0003).
"""

from __future__ import annotations

from config.immutability import Guard

MESSAGE = "score snapshots and tier assignments are immutable; compute a new snapshot instead"

GUARDS: tuple[Guard, ...] = tuple(
    Guard(
        name=f"{table}_immutable", table=table, message=MESSAGE, refuse={"UPDATE": "TRUE", "DELETE": "TRUE"},
        replaces=("ratings_refuse_snapshot_change",),
    )
    for table in ("ratings_scoresnapshot", "ratings_tierassignment")
)
