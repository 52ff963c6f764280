"""Serialisation: the result as plain JSON-able data, canonically; its content hash."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ratings.engine.hashing import canonical_dumps, sha256_hex
from ratings.engine_types import ScoringResult

OUTPUT_DECIMALS = 10  # floats in the canonical serialisation


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            raise ValueError("non-finite float in a scoring result")
        return round(float(value), OUTPUT_DECIMALS) + 0.0
    raise TypeError(f"cannot serialise {type(value).__name__}")


def result_to_dict(result: ScoringResult) -> dict[str, Any]:
    """The result as plain JSON-able data (floats rounded to OUTPUT_DECIMALS)."""
    return _plain(result)


def canonical_json(result: ScoringResult) -> str:
    """Canonical serialisation: sorted keys, no whitespace, rounded floats; stable byte for byte."""
    return canonical_dumps(result_to_dict(result))


def content_hash(result: ScoringResult) -> str:
    return sha256_hex(canonical_json(result))

