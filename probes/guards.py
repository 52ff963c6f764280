"""The database refuses UPDATE and DELETE of a finding (config.immutability; migration 0003)."""

from __future__ import annotations

from config.immutability import Guard

GUARDS: tuple[Guard, ...] = (
    Guard(
        name="probes_finding_immutable", table="probes_finding",
        message="probes_finding: a finding is immutable; record a new run instead",
        refuse={"UPDATE": "TRUE", "DELETE": "TRUE"}, errcode="restrict_violation",
        replaces=("probes_finding_no_update", "probes_finding_no_delete"),
    ),
)
