"""Probe definitions and thresholds, kept as data (``catalog.yaml``, ``min_versions.yaml``).

The catalog modules read their declaration from here; analysts change a threshold by editing
YAML, and findings record which threshold row judged them (``threshold_ref``), so a re-score
against a new table is possible without re-running anything.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from probes.parsers.cmax import CheckMapping
from probes.parsers.versions import MinimumSpec

DATA_DIR = Path(__file__).resolve().parent
_DEF_KEYS = {
    "version",
    "area",
    "question",
    "scope",
    "requires",
    "disruptive",
    "timeout_s",
    "settings",
    "metrics",
    "thresholds",
}


class DefinitionError(ValueError):
    """A probe definition in catalog.yaml is malformed."""


@cache
def definitions() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load((DATA_DIR / "catalog.yaml").read_text())
    if not isinstance(data, dict):
        raise DefinitionError("catalog.yaml: top level must be a mapping of probe id -> definition")
    for probe_id, spec in data.items():
        unknown = set(spec) - _DEF_KEYS
        if unknown:
            raise DefinitionError(f"catalog.yaml {probe_id}: unknown keys {sorted(unknown)}")
        for key in ("version", "area", "question", "scope", "metrics"):
            if key not in spec:
                raise DefinitionError(f"catalog.yaml {probe_id}: missing {key!r}")
        for metric in spec.get("thresholds") or {}:
            if metric not in spec["metrics"]:
                raise DefinitionError(f"catalog.yaml {probe_id}: thresholds for undeclared metric {metric!r}")
    return data


def definition(probe_id: str) -> dict[str, Any]:
    try:
        return definitions()[probe_id]
    except KeyError:
        raise DefinitionError(f"catalog.yaml has no probe {probe_id!r}") from None


@cache
def min_versions() -> dict[str, MinimumSpec]:
    data = yaml.safe_load((DATA_DIR / "min_versions.yaml").read_text()) or {}
    return {
        name: MinimumSpec(
            component=name,
            minimum=str(spec["minimum"]),
            branches={str(k): str(v) for k, v in (spec.get("branches") or {}).items()} or None,
            source=str(spec.get("source", "")),
            choice=str(spec.get("choice", "")),
        )
        for name, spec in data.items()
    }


@cache
def cmax_check_map() -> dict[str, CheckMapping]:
    """Every cmax check id -> the rubric criterion asking the same question (``cmax_checks.yaml``)."""
    data = yaml.safe_load((DATA_DIR / "cmax_checks.yaml").read_text()) or {}
    return {
        str(check): CheckMapping(
            criterion=spec.get("criterion") or None,
            gpu=bool(spec.get("gpu", False)),
            critical=bool(spec.get("critical", False)),
        )
        for check, spec in data.items()
    }


def real_scale_value(probe_id: str, metric: str, value: float | None, threshold_ref: str) -> float | None:
    """A value judged on a scale row (``threshold_ref`` like ``scale=testbed``), restated on the
    real-world scale the rubric's anchors are written in: multiplied by the ratio of the default
    row's pass bar to that row's pass bar. A testbed node ready in 20 s against a testbed bar of
    8 s (real bar 600 s) reads as 1500 s: as far past the bar as it was on the testbed, so the
    rubric's anchors and the probe's thresholds agree. Other values pass through unchanged."""
    if value is None or not threshold_ref.startswith("scale="):
        return value
    rows = ((definitions().get(probe_id) or {}).get("thresholds") or {}).get(metric) or []
    scale = threshold_ref.removeprefix("scale=")
    scaled = next((r for r in rows if (r.get("match") or {}) == {"scale": scale}), None)
    default = next((r for r in rows if not r.get("match")), None)
    if scaled is None or default is None or not float(scaled["pass_at"]):
        return value
    return value * float(default["pass_at"]) / float(scaled["pass_at"])


def sources_summary() -> str:
    """Plain text for the methodology page: which bars come from ClusterMAX, which are Opgrade's own."""
    clustermax = sorted(n for n, s in min_versions().items() if s.source.startswith("ClusterMAX"))
    own_floors = sorted(f"{n} >= {s.minimum}" for n, s in min_versions().items() if s.choice == "opgrade")
    own_bars = []
    for probe_id, spec in sorted(definitions().items()):
        for metric, rows in sorted((spec.get("thresholds") or {}).items()):
            for row in rows:
                if str(row.get("reference", "")).startswith("Opgrade's own choice") and not row.get("match"):
                    unit = spec["metrics"][metric].get("unit", "")
                    name = f"{probe_id}.{metric}" if metric else probe_id
                    own_bars.append(f"{name} pass at {row['pass_at']:g} {unit}".rstrip())
    return (
        "Minimum software versions ClusterMAX publishes ("
        + ", ".join(clustermax)
        + ") are taken unchanged from its minimum-versions table as shipped in its open-source audit CLI. "
        "These bars are Opgrade's own choice, with no outside standard behind them: "
        + "; ".join(own_bars + own_floors)
        + ". Testbed-scale bars apply only to Opgrade's cluster-in-a-box, and a testbed value is restated on "
        "the real-world scale (times the ratio of the two pass bars) before it meets the rubric's anchors."
    )
