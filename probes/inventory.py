"""A cluster's compute nodes as the scheduler (or the provider API) lists them now: a pure core.

Operators drain, replace and add nodes every day; the good ones fastest. So a probe run never
trusts a list typed into the admin: it reads the inventory at run time
(``probes.services.cluster_inventory_refresh``), compares it with the one seen last
(:func:`inventory_diff`), and targets the nodes the scheduler would give a tenant now
(:func:`inventory_endpoints`). A node that left is recorded as *departed* (when, and what the
scheduler said about it), a node that came is *joined* and probed; neither is an error.

Text in, frozen values out: nothing here talks to a host, reads the clock or touches the database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from probes.parsers import ParseError
from probes.parsers.slurm import parse_sinfo_nodes
from probes.transport import Command, Endpoint, HostKey

#: One line per node (and partition): name, address, state, reason.
SINFO_INVENTORY = Command("sinfo -N -h -o {fmt}", fmt="%N|%o|%T|%E")
#: How many departed / joined entries the cluster access keeps (newest first).
HISTORY = 50
#: What the scheduler said about a departed node is kept to this many characters.
SAID_CHARS = 300


@dataclass(frozen=True)
class InventoryNode:
    """One compute node as the inventory lists it."""

    name: str
    address: str
    state: str
    reason: str = ""
    usable: bool = True  # the scheduler would place a tenant's work here now
    port: int = 22

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "address": self.address, "state": self.state, "reason": self.reason,
            "usable": self.usable, "port": self.port,
        }  # fmt: skip


def scontrol_node(name: str) -> Command:
    """``scontrol -o show node NAME``: what the scheduler says now about a node that left."""
    return Command("scontrol -o show node {node}", node=name)


def parse_sinfo_inventory(text: str) -> tuple[InventoryNode, ...]:
    """Parse :data:`SINFO_INVENTORY`'s output; a node in several partitions appears once.

    Raises ParseError on a line that is not NAME|ADDRESS|STATE|REASON or an unknown state.
    """
    nodes: dict[str, InventoryNode] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|", 3)
        if len(parts) < 3 or not parts[0].strip():
            raise ParseError(f"sinfo line {lineno}: expected NODE|ADDRESS|STATE|REASON, got {line!r}")
        name, address, state = parts[0].strip(), parts[1].strip(), parts[2].strip()
        reason = parts[3].strip() if len(parts) > 3 else ""
        (parsed,) = parse_sinfo_nodes(f"{name}|{state}|{reason}")
        if name in nodes:
            continue
        nodes[name] = InventoryNode(
            name=name,
            address=address if address and not any(c.isspace() for c in address) else name,
            state=state.lower(),
            reason=parsed.reason,
            usable=parsed.healthy_in_pool,
        )
    return tuple(nodes.values())


def parse_provider_nodes(payload: Mapping[str, Any]) -> tuple[InventoryNode, ...]:
    """The reference provider API's ``GET /v1/nodes`` answer: ``{"nodes": [{name, address, status,
    ssh_port, slurm_state}]}``. A node is usable when its status is ``ready``."""
    raw = payload.get("nodes") if isinstance(payload, Mapping) else None
    if not isinstance(raw, list):
        raise ParseError("provider API: no list of nodes")
    nodes: dict[str, InventoryNode] = {}
    for item in raw:
        if not isinstance(item, Mapping) or not str(item.get("name") or "").strip():
            raise ParseError(f"provider API: a node without a name: {item!r}"[:200])
        name = str(item["name"]).strip()
        port = item.get("ssh_port") or 22
        nodes.setdefault(
            name,
            InventoryNode(
                name=name,
                address=str(item.get("address") or name).strip(),
                state=str(item.get("status") or "unknown").lower(),
                reason=str(item.get("slurm_state") or ""),
                usable=str(item.get("status") or "").lower() == "ready",
                port=int(port) if str(port).isdigit() and 0 < int(port) < 65536 else 22,
            ),
        )
    return tuple(nodes.values())


def departed_names(previous: Mapping[str, Any], current: Sequence[InventoryNode]) -> list[str]:
    """Names listed last time and not now (nothing on the first read)."""
    now = {n.name for n in current}
    return [str(n["name"]) for n in previous.get("nodes") or [] if str(n.get("name")) not in now]


def inventory_diff(
    previous: Mapping[str, Any],
    current: Sequence[InventoryNode],
    *,
    source: str,
    at: str,
    said: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The inventory state to store after a read at ``at`` (ISO time): the nodes as seen now, and
    the departed and joined lists with this read's changes in front.

    The first read is the baseline: nothing departed or joined. ``said``: what the scheduler
    answered about each departed node (``scontrol show node``), kept short.
    """
    said = said or {}
    before = {str(n["name"]): n for n in previous.get("nodes") or [] if n.get("name")}
    first = "nodes" not in previous
    departed = [
        {
            "name": name,
            "address": str(node.get("address", "")),
            "at": at,
            "last_state": str(node.get("state", "")),
            "last_reason": str(node.get("reason", "")),
            "last_seen": str(previous.get("seen_at", "")),
            "scheduler_said": (said.get(name) or "not listed")[:SAID_CHARS],
        }
        for name, node in before.items()
        if name not in {n.name for n in current}
    ]
    joined = [
        {"name": n.name, "address": n.address, "at": at, "state": n.state}
        for n in current
        if not first and n.name not in before
    ]
    return {
        "source": source,
        "seen_at": at,
        "nodes": [n.as_dict() for n in current],
        "departed": (departed + list(previous.get("departed") or []))[:HISTORY],
        "joined": (joined + list(previous.get("joined") or []))[:HISTORY],
    }


def node_departed_mid_run(previous: Mapping[str, Any], *, name: str, at: str, said: str) -> dict[str, Any]:
    """The state after a node vanished between the inventory read and its probe (the scheduler
    refused it as unknown): it leaves ``nodes`` and is recorded as departed."""
    nodes = [n for n in previous.get("nodes") or [] if n.get("name") != name]
    gone = next((n for n in previous.get("nodes") or [] if n.get("name") == name), {})
    entry = {
        "name": name,
        "address": str(gone.get("address", "")),
        "at": at,
        "last_state": str(gone.get("state", "")),
        "last_reason": str(gone.get("reason", "")),
        "last_seen": str(previous.get("seen_at", "")),
        "scheduler_said": said[:SAID_CHARS],
    }
    return {**previous, "nodes": nodes, "departed": [entry, *(previous.get("departed") or [])][:HISTORY]}


def inventory_endpoints(
    nodes: Sequence[InventoryNode],
    *,
    login: Endpoint,
    through_scheduler: bool,
    pins: Mapping[tuple[str, int], tuple[HostKey, ...]],
    hints: Mapping[str, int] | None = None,
    host_cas: tuple[str, ...] = (),
) -> tuple[Endpoint, ...]:
    """Endpoints for the usable nodes, behind the login node.

    Through the scheduler a node is named by its scheduler name (``srun --nodelist``) and needs
    no pin. With direct SSH a node carries the pins recorded for its address (or name) and the
    cluster's pinned host CAs, with its scheduler name as the principal its host certificate must
    name; a node with neither is left without, and the runner reports it unverified rather than
    connecting.
    ``hints``: an SSH port per host or name, from the list typed into the admin.
    """
    hints = hints or {}
    out = []
    for node in nodes:
        if not node.usable:
            continue
        if through_scheduler:
            out.append(Endpoint(host=node.address, port=22, jump=login, scheduler_node=node.name))
            continue
        port = hints.get(node.address) or hints.get(node.name) or node.port
        keys = pins.get((node.address, port)) or pins.get((node.name, port)) or ()
        out.append(
            Endpoint(host=node.address, port=port, host_keys=keys, jump=login, host_cas=host_cas,
                     principal=node.name if host_cas else "", job_node=node.name)
        )  # fmt: skip
    return tuple(out)


def last_seen_nodes(inventory: Mapping[str, Any]) -> tuple[InventoryNode, ...]:
    """The stored inventory's nodes back as values (for sizing a run before it reads the inventory)."""
    out = []
    for n in inventory.get("nodes") or []:
        try:
            out.append(
                InventoryNode(
                    name=str(n["name"]),
                    address=str(n.get("address") or n["name"]),
                    state=str(n.get("state", "")),
                    reason=str(n.get("reason", "")),
                    usable=bool(n.get("usable", True)),
                    port=int(n.get("port", 22)),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(out)
