"""Slurm command output: node states, job listings, ``scontrol show config`` and versions.

The probes ask Slurm for machine-readable shapes and parse exactly those:

* ``sinfo -N -h -o '%N|%T|%E'``: one node a line, long state name, reason. A trailing ``*``
  means the node is not responding; ``+FLAG`` suffixes (``idle+drain``) carry extra flags.
* ``squeue -h -a -o '%i|%j|%u|%T|%N|%r'`` and ``sacct -X -n -P -a -o JobID,JobName,User,State[,NodeList]``:
  one job a line. With ``PrivateData=jobs`` a tenant sees only their own jobs; that is what
  ``scheduler_privacy`` tests with a canary job name.
* ``scontrol show config`` (``Key = value`` lines) and ``scontrol show job`` (``Key=value`` tokens).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from probes.parsers import ParseError

# Long (%T) and short (%t) base states Slurm prints; anything else is a format we do not know.
_BASE_STATES = {
    "allocated": "allocated",
    "alloc": "allocated",
    "completing": "completing",
    "comp": "completing",
    "down": "down",
    "drained": "drained",
    "drain": "drained",
    "draining": "draining",
    "drng": "draining",
    "fail": "fail",
    "failing": "failing",
    "failg": "failing",
    "future": "future",
    "futr": "future",
    "idle": "idle",
    "inval": "invalid",
    "invalid": "invalid",
    "maint": "maint",
    "mixed": "mixed",
    "mix": "mixed",
    "perfctrs": "perfctrs",
    "npc": "perfctrs",
    "planned": "planned",
    "plnd": "planned",
    "power_down": "powered_down",
    "powered_down": "powered_down",
    "powering_down": "powering_down",
    "powering_up": "powering_up",
    "pow_up": "powering_up",
    "reboot_issued": "reboot",
    "reboot_requested": "reboot",
    "reboot": "reboot",
    "reserved": "reserved",
    "resv": "reserved",
    "unknown": "unknown",
    "unk": "unknown",
}
# Flag characters sinfo appends to a state: * not responding, ~ powered off, # powering up,
# % powering down, ! pending power down, $ maintenance reservation, @ pending reboot, ^ reboot issued,
# - planned.
_SUFFIX_FLAGS = "*~#%!$@^-"


@dataclass(frozen=True)
class NodeState:
    """One node as ``sinfo`` reports it."""

    name: str
    state: str  # normalised base state, e.g. "idle", "down", "drained"
    flags: frozenset[str]  # "+drain" style flags, lower case
    not_responding: bool
    reason: str

    @property
    def drained(self) -> bool:
        return self.state in ("drained", "draining") or bool(self.flags & {"drain", "drained", "draining"})

    @property
    def down(self) -> bool:
        return self.state in ("down", "fail", "failing") or "fail" in self.flags

    @property
    def unavailable(self) -> bool:
        """The scheduler will not place new work here: down, drained or not responding."""
        return (
            self.down or self.drained or self.not_responding or self.state in ("unknown", "invalid", "future")
        )

    @property
    def healthy_in_pool(self) -> bool:
        """Idle, allocated or mixed, responding and without a drain or fail flag."""
        return self.state in ("idle", "allocated", "mixed", "completing") and not self.unavailable


def _parse_state(raw: str) -> tuple[str, frozenset[str], bool]:
    token = raw.strip().lower()
    not_responding = False
    while token and token[-1] in _SUFFIX_FLAGS:
        not_responding = not_responding or token[-1] == "*"
        token = token[:-1]
    base, *extra = token.split("+")
    if base not in _BASE_STATES:
        raise ParseError(f"unknown Slurm node state {raw!r}")
    return _BASE_STATES[base], frozenset(extra), not_responding


def parse_sinfo_nodes(text: str) -> tuple[NodeState, ...]:
    """Parse ``sinfo -N -h -o '%N|%T|%E'`` (or ``%t``). A node listed in several partitions appears once."""
    nodes: dict[str, NodeState] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|", 2)
        if len(parts) < 2 or not parts[0].strip():
            raise ParseError(f"sinfo line {lineno}: expected NODE|STATE|REASON, got {line!r}")
        name = parts[0].strip()
        state, flags, not_responding = _parse_state(parts[1])
        reason = parts[2].strip() if len(parts) > 2 else ""
        nodes.setdefault(
            name, NodeState(name, state, flags, not_responding, "" if reason == "none" else reason)
        )
    return tuple(nodes.values())


def node_state(nodes: Iterable[NodeState], name: str) -> NodeState | None:
    """The state of ``name``, or None when sinfo did not list it."""
    return next((n for n in nodes if n.name == name), None)


@dataclass(frozen=True)
class Job:
    """One job line from ``squeue`` or ``sacct``."""

    job_id: str
    name: str
    user: str
    state: str  # upper case as Slurm prints it, first word only ("CANCELLED by 0" -> "CANCELLED")
    nodes: str = ""
    reason: str = ""


def _parse_jobs(text: str, *, tool: str, min_fields: int) -> tuple[Job, ...]:
    jobs = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith(("slurm_load_jobs error", "sacct: error", "squeue: error")) or " error: " in line:
            raise ParseError(f"{tool} reported an error: {line.strip()[:200]}")
        if line.strip() == "Slurm accounting storage is disabled":
            raise ParseError("sacct: Slurm accounting storage is disabled")
        parts = line.split("|")
        if len(parts) < min_fields:
            raise ParseError(f"{tool} line {lineno}: expected at least {min_fields} '|' fields, got {line!r}")
        state = parts[3].strip().split(" ")[0].upper()
        jobs.append(
            Job(
                job_id=parts[0].strip(),
                name=parts[1].strip(),
                user=parts[2].strip(),
                state=state,
                nodes=parts[4].strip() if len(parts) > 4 else "",
                reason=parts[5].strip() if len(parts) > 5 else "",
            )
        )
    return tuple(jobs)


def parse_squeue(text: str) -> tuple[Job, ...]:
    """Parse ``squeue -h -a -o '%i|%j|%u|%T|%N|%r'`` (the last two fields are optional)."""
    return _parse_jobs(text, tool="squeue", min_fields=4)


def parse_sacct(text: str) -> tuple[Job, ...]:
    """Parse ``sacct -X -n -P -a -o JobID,JobName,User,State[,NodeList]``.

    Raises :class:`ParseError` when accounting is disabled: that path is then "not measurable",
    which a probe must keep apart from "no foreign job seen".
    """
    return _parse_jobs(text, tool="sacct", min_fields=4)


def jobs_named(jobs: Iterable[Job], name: str) -> tuple[Job, ...]:
    """Jobs whose name is exactly ``name`` (a canary nonce is a whole job name, never a prefix)."""
    return tuple(j for j in jobs if j.name == name)


def jobs_containing(jobs: Iterable[Job], needle: str) -> tuple[Job, ...]:
    """Jobs whose name contains ``needle``: squeue truncates nothing with %j, but users may prefix names."""
    return tuple(j for j in jobs if needle and needle in j.name)


_CONFIG_LINE = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s?(?P<value>.*)$")


def parse_scontrol_config(text: str) -> dict[str, str]:
    """Parse ``scontrol show config`` into ``{Key: value}``; ``(null)`` becomes the empty string."""
    config: dict[str, str] = {}
    for line in text.splitlines():
        match = _CONFIG_LINE.match(line.strip())
        if not match:
            continue
        value = match["value"].strip()
        config[match["key"]] = "" if value == "(null)" else value
    if "ClusterName" not in config and "SlurmctldHost[0]" not in config and "SlurmctldPort" not in config:
        raise ParseError("not the output of `scontrol show config` (no ClusterName / SlurmctldPort)")
    return config


_DURATION = re.compile(r"^(?P<n>\d+)\s*(?P<unit>sec|secs|s|min|mins)?$")


def _seconds(value: str) -> int | None:
    match = _DURATION.match(value.strip())
    if not match:
        return None
    n = int(match["n"])
    return n * 60 if (match["unit"] or "").startswith("min") else n


@dataclass(frozen=True)
class SlurmConfigFacts:
    """What the reliability and security probes need from ``scontrol show config``."""

    health_check_program: str
    health_check_interval_s: int | None
    prolog: str
    private_data: frozenset[str]
    slurmd_timeout_s: int | None
    accounting_storage: str

    @property
    def health_check_configured(self) -> bool:
        """A HealthCheckProgram that runs periodically, or a prolog that calls NHC or DCGM."""
        periodic = bool(self.health_check_program) and (self.health_check_interval_s or 0) > 0
        prolog_check = bool(re.search(r"nhc|dcgm", self.prolog, re.IGNORECASE))
        return periodic or prolog_check

    @property
    def jobs_private(self) -> bool:
        return "jobs" in self.private_data


def slurm_config_facts(config: Mapping[str, str]) -> SlurmConfigFacts:
    """Extract the health-check, privacy and timeout settings from a parsed config."""
    private = config.get("PrivateData", "")
    flags = frozenset(
        p.strip().lower() for p in private.split(",") if p.strip() and p.strip().lower() != "none"
    )
    return SlurmConfigFacts(
        health_check_program=config.get("HealthCheckProgram", ""),
        health_check_interval_s=_seconds(config.get("HealthCheckInterval", "")),
        prolog=config.get("Prolog", ""),
        private_data=flags,
        slurmd_timeout_s=_seconds(config.get("SlurmdTimeout", "")),
        accounting_storage=config.get("AccountingStorageType", ""),
    )


_KV_TOKEN = re.compile(r"(?P<key>[A-Za-z][A-Za-z0-9_:/]*)=(?P<value>\S*)")


def parse_scontrol_show(text: str) -> dict[str, str]:
    """Parse ``scontrol show job|node ID`` (``Key=value`` tokens, several per line)."""
    if not text.strip() or "Invalid" in text.split("\n", 1)[0]:
        raise ParseError(f"scontrol show: no record ({text.strip()[:120]!r})")
    return {m["key"]: m["value"] for m in _KV_TOKEN.finditer(text)}


_SLURM_VERSION = re.compile(r"^slurm(?:-wlm)?\s+(?P<v>\d+\.\d+\.\d+\S*)\s*$")


def parse_slurm_version(text: str) -> str:
    """``sinfo --version`` -> ``22.05.8``."""
    for line in text.splitlines():
        match = _SLURM_VERSION.match(line.strip())
        if match:
            return match["v"]
    raise ParseError(f"not a Slurm version line: {text.strip()[:80]!r}")


def parse_node_addresses(text: str) -> dict[str, str]:
    """``sinfo -N -h -o '%N|%o'`` -> ``{node: address}`` (a node in several partitions appears once)."""
    out: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, addr = line.partition("|")
        if not sep or not name.strip():
            raise ParseError(f"sinfo line {lineno}: expected NODE|ADDRESS, got {line!r}")
        out.setdefault(name.strip(), addr.strip())
    return out
