"""ClusterMAX's published minimum versions, as shipped in the ``clustermax`` wheel, turned into floors.

SemiAnalysis publishes the table at https://www.clustermax.ai/minimum-versions.json and ships a
copy in its audit CLI (``cmax/scripts/1-audit/minimum-versions.json`` in the ``clustermax``
wheel that ``scripts/fetch-cmax-wheels.sh`` fetches). Opgrade takes the floors it can observe
from that file, not from its own notes: :func:`floors_from_cmax` is the pure mapping, and
``min_versions.yaml`` holds its output with the wheel, the file's SHA-256 and its ``generated``
stamp as provenance (``python -m probes.thresholds.cmax_floors`` prints the block to paste;
tests/probes/catalog/test_catalog_definitions.py checks the YAML against the wheel).
"""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

WHEEL_DIR = Path(__file__).resolve().parents[2] / "var" / "wheels" / "cmax"
MEMBER = "cmax/scripts/1-audit/minimum-versions.json"
# cmax component -> Opgrade component (software_baseline's names)
COMPONENTS = {
    "nvidiaDriver": "nvidia_driver",
    "cudaToolkit": "cuda_toolkit",
    "dcgm": "dcgm",
    "nvidiaContainerToolkit": "nvidia_container_toolkit",
}


def wheel_table(wheel: Path) -> tuple[dict[str, Any], str]:
    """The wheel's minimum-versions.json and the SHA-256 of its bytes."""
    with zipfile.ZipFile(wheel) as zf:
        raw = zf.read(MEMBER)
    return json.loads(raw), hashlib.sha256(raw).hexdigest()


def _url(block: Mapping[str, Any]) -> str:
    source = block.get("source") or {}
    return str(block.get("advisory") or source.get("url") or "")


def floors_from_cmax(doc: Mapping[str, Any], *, provenance: str) -> dict[str, dict[str, Any]]:
    """``min_versions.yaml`` entries for the components Opgrade observes, from cmax's table.

    A driver branch map keeps its branches; ``minimum`` (the floor of a branch the table does
    not list) is the oldest listed branch's floor.
    """
    if doc.get("schemaVersion") != 1:
        raise ValueError(f"unsupported minimum-versions schemaVersion {doc.get('schemaVersion')!r}")
    out: dict[str, dict[str, Any]] = {}
    for cmax_name, name in COMPONENTS.items():
        block = (doc.get("components") or {}).get(cmax_name)
        if not block:
            continue
        entry: dict[str, Any] = {}
        if block.get("kind") == "branchMap":
            branches = {
                str(k): str(v) for k, v in sorted(block["branches"].items(), key=lambda kv: int(kv[0]))
            }
            entry["minimum"] = branches[min(branches, key=int)]
            entry["branches"] = branches
        elif block.get("kind") == "minimum":
            entry["minimum"] = str(block["minimum"])
        else:
            continue
        entry["source"] = f"ClusterMAX minimum-versions ({provenance}); advisory {_url(block)}"
        out[name] = entry
    return out


def newest_wheel(wheel_dir: Path = WHEEL_DIR) -> Path | None:
    wheels = sorted(wheel_dir.glob("clustermax-*.whl"))
    return wheels[-1] if wheels else None


def provenance_of(wheel: Path, doc: Mapping[str, Any], sha256: str) -> str:
    return f"{wheel.name} {MEMBER}, generated {doc.get('generated')}, sha256 {sha256[:16]}"


def main() -> int:
    wheel = Path(sys.argv[1]) if len(sys.argv) > 1 else newest_wheel()
    if wheel is None:
        print("no clustermax wheel: run scripts/fetch-cmax-wheels.sh", file=sys.stderr)
        return 2
    doc, sha = wheel_table(wheel)
    print(
        yaml.safe_dump(
            floors_from_cmax(doc, provenance=provenance_of(wheel, doc, sha)), sort_keys=False, width=200
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
