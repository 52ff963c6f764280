"""The engine's calibration figures shown on the methodology page (pure; no models).

They come from ``bench/calibration_bench.py``: generated cycles scored by the engine, each
provider's stated P(published tier) against whether the noise-free truth gives that tier. The
bench writes them with ``--write-figures reports/data/calibration.json``; that file is committed
beside this module and read here, so the page shows the figures of the run that was committed,
with its date, engine version and the command that recomputes them.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

FIGURES_PATH = Path(__file__).resolve().parent / "data" / "calibration.json"
REQUIRED = ("engine_version", "date", "command", "cycles", "ece", "brier", "brier_sure", "seed_flip_tiers", "bins")


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> dict[str, Any] | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or any(key not in data for key in REQUIRED) or not isinstance(data["bins"], list):
        return None
    goals = data.get("goals") or {}
    tolerance, least = goals.get("bin_tolerance", 0.05), goals.get("bin_min_providers", 100)
    for b in data["bins"]:  # what the page prints beside each bin: how far off, and whether it counts
        b["difference"] = b["observed_truth"] - b["stated"]
        b["counted"] = b["providers"] >= least
        b["within"] = abs(b["difference"]) <= tolerance
    return data


def calibration_figures(path: Path = FIGURES_PATH) -> dict[str, Any] | None:
    """The committed figures, or None when the file is missing or not the bench's shape."""
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return None
    return _load(str(path), mtime)
