"""node_inventory: what does each node run? OS, kernel, CPUs, memory, Slurm, and its GPUs.

One command collects everything, in sections marked ``===name``, so a node costs one round trip.
:func:`parse_inventory` is pure and tested on captured outputs. The node's inventory is one
pass/fail finding (empty metric; the facts in its evidence); its GPUs are a second finding
(metric ``gpu_count``) that is ``not_applicable``
where the node has no ``nvidia-smi`` (a CPU-only node or testbed), never ``pass`` by default.
Judging the GPUs against what was ordered is ``gpu_inventory``'s job, not this probe's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from probes.catalog import register
from probes.catalog.base import (
    Area,
    Direction,
    FindingDraft,
    Metric,
    Outcome,
    Probe,
    ProbeContext,
    Requirement,
    Scope,
    Target,
)
from probes.parsers import ParseError
from probes.transport import Command

NO_GPU_TOOL = "NO_NVIDIA_SMI"

INVENTORY = Command(
    "echo ===os; cat /etc/os-release 2>/dev/null; "
    "echo ===kernel; uname -sr; "
    "echo ===cpus; nproc; "
    "echo ===meminfo; grep -E '^MemTotal:' /proc/meminfo; "
    "echo ===slurm; (sinfo --version || slurmd -V) 2>/dev/null; "
    "echo ===gpus; if command -v nvidia-smi >/dev/null 2>&1; then "
    "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader,nounits; "
    "else echo {no_gpu}; fi",
    no_gpu=NO_GPU_TOOL,
)


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_mib: int | None
    driver: str


@dataclass(frozen=True)
class Inventory:
    os_name: str
    kernel: str
    cpus: int
    memory_kib: int
    slurm_version: str | None
    gpus: tuple[Gpu, ...] | None  # None: no nvidia-smi on the node

    def as_dict(self) -> dict[str, object]:
        return {
            "os": self.os_name,
            "kernel": self.kernel,
            "cpus": self.cpus,
            "memory_gib": round(self.memory_kib / 1024 / 1024, 2),
            "slurm_version": self.slurm_version,
            "gpus": None if self.gpus is None else [g.__dict__ for g in self.gpus],
        }


def _sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith("===") and line[3:].isidentifier():
            current = sections.setdefault(line[3:], [])
        elif current is not None and line.strip():
            current.append(line.strip())
    return sections


def parse_inventory(text: str) -> Inventory:
    """Parse the sectioned output of :data:`INVENTORY`. Raises ParseError on anything else."""
    s = _sections(text)
    missing = {"os", "kernel", "cpus", "meminfo", "slurm", "gpus"} - s.keys()
    if missing:
        raise ParseError(f"inventory output lacks sections {sorted(missing)}")
    os_release = dict(line.split("=", 1) for line in s["os"] if "=" in line)
    os_name = os_release.get("PRETTY_NAME", os_release.get("NAME", "unknown")).strip('"')
    if not s["kernel"] or not s["cpus"] or not s["cpus"][0].isdigit():
        raise ParseError("kernel or CPU count missing")
    mem = s["meminfo"][0].split() if s["meminfo"] else []
    if len(mem) < 2 or mem[0] != "MemTotal:" or not mem[1].isdigit():
        raise ParseError("MemTotal missing from /proc/meminfo")
    slurm = None
    if s["slurm"]:
        words = s["slurm"][0].split()
        # "slurm 23.11.4" upstream, "slurm-wlm 22.05.8" on Debian
        slurm = words[-1] if len(words) >= 2 and words[0].lower().startswith("slurm") else None
    gpus: tuple[Gpu, ...] | None
    if s["gpus"] == [NO_GPU_TOOL]:
        gpus = None
    else:
        parsed = []
        for line in s["gpus"]:
            fields = [f.strip() for f in line.split(",")]
            if len(fields) != 3:
                raise ParseError(f"unexpected nvidia-smi line {line!r}")
            memory = int(fields[1]) if fields[1].isdigit() else None
            parsed.append(Gpu(name=fields[0], memory_mib=memory, driver=fields[2]))
        gpus = tuple(parsed)
    return Inventory(
        os_name=os_name,
        kernel=s["kernel"][0],
        cpus=int(s["cpus"][0]),
        memory_kib=int(mem[1]),
        slurm_version=slurm,
        gpus=gpus,
    )


GPU_METRIC = Metric(name="gpu_count", unit="gpus", direction=Direction.HIGHER)


@register
class NodeInventory(Probe):
    id = "node_inventory"
    version = 1
    area = Area.PROVISIONING
    question = "What OS, kernel, CPUs, memory, Slurm version and GPUs does each node have?"
    scope = Scope.NODE
    requirements = frozenset({Requirement.SSH})
    timeout_s = 60
    # The inventory itself is a pass/fail check (empty metric, as the rubric binds it): ``pass``
    # when the node answered with a readable inventory; the facts are in the evidence.
    metric = Metric(name="", unit="", direction=Direction.HIGHER)

    def execute(self, ctx: ProbeContext, target: Target) -> Sequence[FindingDraft]:
        assert target.endpoint is not None
        result = ctx.ssh(target.endpoint).run(INVENTORY, timeout_s=self.timeout_s)
        evidence = ctx.evidence(result)
        if result.timed_out:
            return [
                self.finding(
                    target, Outcome.TIMEOUT, summary="inventory command timed out", evidence=evidence
                )
            ]
        try:
            inventory = parse_inventory(result.stdout)
        except ParseError as exc:
            return [
                self.finding(
                    target, Outcome.ERROR, summary=f"could not read inventory: {exc}", evidence=evidence
                )
            ]
        facts = inventory.as_dict()
        node = self.finding(
            target,
            Outcome.PASS,
            summary=f"{inventory.os_name}, {inventory.kernel}, {inventory.cpus} CPUs, "
            f"{facts['memory_gib']} GiB, Slurm {inventory.slurm_version or 'absent'}",
            evidence={**evidence, "inventory": facts},
        )
        if inventory.gpus is None:
            gpu = self.finding(
                target,
                Outcome.NOT_APPLICABLE,
                metric=GPU_METRIC,
                summary="no nvidia-smi: no NVIDIA GPU on this node",
            )
        else:
            names = sorted({g.name for g in inventory.gpus})
            gpu = self.finding(
                target,
                Outcome.PASS,
                metric=GPU_METRIC,
                value=len(inventory.gpus),
                summary=f"{len(inventory.gpus)} x {', '.join(names) or 'none'}",
                evidence={"gpus": facts["gpus"]},
            )
        return [node, gpu]
