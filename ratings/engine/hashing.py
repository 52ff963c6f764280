"""Hashes: the canonical text of a rubric's scoring content and of a whole engine input.

``inputs_hash`` binds everything a result depends on (engine version, rubric content and
fingerprint, peer set, seed, every evidence row); rows are sorted, so their order does not
count. Pure: standard library only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from ratings.engine_types import ProbeObservation, RubricSpec, ScoringInput

# 2.0.0: the tier rule of issue 14 (confirmed gaps, at most four), common random numbers
# keyed by the seed and the rubric slot (not the provider's name), feedback shrunk toward the
# rubric's prior, exact coverage, `declined`, gates failed by any failing replicate.
# 2.1.0 (issue 27): P(tier) reruns the whole rule on joint replicates; gaps are confirmed on a
# fixed stream (the seed moves no tier); a provider that declines is rated, never Not rated.
ENGINE_VERSION = "opgrade-scoring/2.1.0"


def canonical_dumps(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rubric_content(rubric: RubricSpec) -> dict[str, Any]:
    """Everything that decides a score, in canonical form (the rubric's id and label excluded)."""
    params = dataclasses.asdict(rubric.params)
    return {
        "params": params,
        "areas": sorted(([a.key, float(a.weight)] for a in rubric.areas), key=lambda x: x[0]),
        "criteria": sorted(
            (
                {
                    "key": c.key,
                    "area": c.area,
                    "weight": float(c.weight),
                    "evidence_kinds": sorted(str(k) for k in c.evidence_kinds),
                    "anchor_best": float(c.anchor_best),
                    "anchor_worst": float(c.anchor_worst),
                    "direction": str(c.direction),
                    "scale": str(c.scale),
                    "probe_id": c.probe_id,
                    "probe_metric": c.probe_metric,
                    "is_gate": bool(c.is_gate),
                    "gate_cap_tier": c.gate_cap_tier,
                    "gate_threshold": float(c.gate_threshold),
                }
                for c in rubric.criteria
            ),
            key=lambda x: x["key"],
        ),
    }


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _hashable(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is float or value is None or kind is bool:
        return value
    if isinstance(value, str):
        return str(value)  # an enum member hashes like its plain value
    if kind is tuple:  # an override's disputed finding refs: a set, so order does not count
        return tuple(sorted(map(str, value)))
    return float(value)  # ints (ratings, integral values) hash like the equal float


def _probe_row(r: ProbeObservation) -> str:
    value = r.value
    if value is not None and type(value) is not float:
        value = float(value)
    return repr((r.rubric_version, r.provider, r.criterion, str(r.outcome), value, bool(r.critical), r.ref))


def _rows(items: Iterable[Any]) -> list[str]:
    out = []
    for item in items:
        if type(item) is ProbeObservation:  # the bulk of a cycle: a direct path
            out.append(_probe_row(item))
            continue
        names = _FIELD_NAMES.get(type(item))
        if names is None:
            names = _FIELD_NAMES[type(item)] = tuple(f.name for f in dataclasses.fields(item))
        # repr() of str/float/bool/None is unambiguous and stable, and far cheaper than json
        out.append(repr(tuple(map(_hashable, map(item.__getattribute__, names)))))
    out.sort()
    return out


def inputs_hash(inp: ScoringInput) -> str:
    """Hash of everything the result depends on; rows are sorted, so row order does not count.

    sha256 over a canonical JSON header (engine version, rubric, peer set, seed) followed by
    each section's sorted row reprs, one per line, each section introduced by its name.
    """
    header = {
        "engine_version": ENGINE_VERSION,
        "rubric": {
            "id": inp.rubric.id,
            "name": inp.rubric.name,
            "version": inp.rubric.version,
            "fingerprint": inp.rubric.fingerprint,
            "content": rubric_content(inp.rubric),
        },
        "providers": sorted(inp.providers),
        "seed": inp.seed,
    }
    digest = hashlib.sha256(canonical_dumps(header).encode("utf-8"))
    for name in ("probe_observations", "doc_scores", "feedback", "previous_tiers", "overrides"):
        rows = _rows(getattr(inp, name))
        digest.update(f"\n#{name} {len(rows)}\n".encode())
        digest.update("\n".join(rows).encode("utf-8"))
    return digest.hexdigest()
