"""Load a captured real output from ``tests/probes/captured/``, without its ``#@`` provenance header.

Each fixture starts with ``#@ captured: ...``/``#@ source: ...`` and ``#@ command: ...`` lines
that say where and how it was captured; the parser under test sees only what the tool printed.
"""

from __future__ import annotations

from pathlib import Path

CAPTURED = Path(__file__).resolve().parent.parent / "captured"


def captured(relpath: str) -> str:
    text = (CAPTURED / relpath).read_text()
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#@"):
        lines.pop(0)
    return "".join(lines)


def provenance(relpath: str) -> str:
    return "".join(
        line for line in (CAPTURED / relpath).read_text().splitlines(keepends=True) if line.startswith("#@")
    )
