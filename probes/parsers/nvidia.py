"""nvidia-smi ``--query-gpu`` CSV and the GPU inventory check.

The probe runs ``nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader``.
Captured public outputs also carry the header line (``--format=csv``), which is skipped. The
memory column reads ``81559 MiB`` (or ``[N/A]``). A model name may contain commas on old cards
(``Tesla V100, SXM2``), so the name is whatever is left when the fixed trailing fields are taken.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from probes.parsers import ParseError

DEFAULT_FIELDS = ("name", "memory.total", "driver_version")


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_mib: int | None
    driver_version: str | None


def _mib(cell: str) -> int | None:
    cell = cell.strip()
    if cell.startswith("[") or not cell:
        return None
    match = re.match(r"^(\d+)(?:\s*MiB)?$", cell)
    if not match:
        raise ParseError(f"memory cell {cell!r} is not 'N MiB'")
    return int(match.group(1))


def parse_query_gpu(text: str, fields: Sequence[str] = DEFAULT_FIELDS) -> tuple[Gpu, ...]:
    """Parse ``--query-gpu=<fields> --format=csv[,noheader]`` with ``name`` as the first field."""
    if not fields or fields[0] != "name":
        raise ValueError("the name must be the first queried field")
    rest = len(fields) - 1
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.lower().startswith("name,") or line.strip().lower() == "name":
            continue  # header row of --format=csv
        if "NVIDIA-SMI has failed" in line or "No devices were found" in line:
            raise ParseError(line.strip())
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < len(fields):
            raise ParseError(f"expected {len(fields)} CSV fields, got {line!r}")
        name = ", ".join(cells[: len(cells) - rest]) if rest else ", ".join(cells)
        values = dict(zip(fields[1:], cells[len(cells) - rest :], strict=True))
        gpus.append(
            Gpu(
                name=name,
                memory_mib=_mib(values["memory.total"]) if "memory.total" in values else None,
                driver_version=values.get("driver_version") or None,
            )
        )
    return tuple(gpus)


def _norm(model: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", model.lower().replace("nvidia", ""))


@dataclass(frozen=True)
class InventoryVerdict:
    ok: bool
    found_count: int
    found_models: tuple[str, ...]
    mismatched: tuple[str, ...]  # models that are not the ordered one


def inventory_matches(gpus: Sequence[Gpu], *, model: str, count: int) -> InventoryVerdict:
    """Every GPU is the ordered ``model`` (case and punctuation ignored) and there are ``count`` of them."""
    want = _norm(model)
    mismatched = tuple(sorted({g.name for g in gpus if _norm(g.name) != want}))
    models = tuple(sorted({g.name for g in gpus}))
    return InventoryVerdict(
        ok=not mismatched and len(gpus) == count,
        found_count=len(gpus),
        found_models=models,
        mismatched=mismatched,
    )
