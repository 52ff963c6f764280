"""The rubric YAML format: parse, validate, emit and diff, with no models and no clock.

A rubric version travels as one YAML document (documented in ``rubric/README.md``). This
module is the pure core behind ``manage.py rubric import/export/diff``, the admin import
form and the API; the reading, checking, canonical writing and diff records it shares with
the grade format are ``rubric.yaml_kit``'s:

* :func:`parse_rubric` composes the YAML node tree (so every value keeps its line), checks
  every field and returns a frozen :class:`RubricSpec`, or raises
  :class:`RubricFormatError` listing each problem as ``FILE:LINE: FIELD: message``.
* :func:`emit_rubric` writes a spec in the *canonical* form: fixed key order, floats in
  Python's shortest round-trip notation, strings quoted only where YAML needs it. Importing
  a canonical file and exporting it again gives the same bytes; the fingerprint of a
  frozen version is the sha256 of this text (``rubric.spec.rubric_fingerprint``).
* :func:`diff_specs` lists what changed between two versions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from config.errors import MalformedFile
from rubric.spec import EVIDENCE_KINDS, GATE_CAP_TIERS, TIERS, Direction, Scale
from rubric.yaml_kit import (
    KEY_RE,
    Checker,
    FieldChange,
    Flow,
    FlowList,
    FormatError,
    ItemChange,
    Path,
    Problem,
    Reader,
    check_identity,
    diff_keyed,
    dump_canonical,
    field_changes,
    read_document,
    show_number,
)

FORMAT_ID = "opgrade-rubric/1"
WEIGHT_TOLERANCE = 1e-6
DIRECTIONS: tuple[str, ...] = tuple(d.value for d in Direction)
SCALES: tuple[str, ...] = tuple(s.value for s in Scale)
HEADER = "# Opgrade rubric, canonical form (manage.py rubric export). Format: rubric/README.md\n"


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class ScoringSpec:
    coverage_floor: float
    area_coverage_floor: float
    bootstrap_size: int
    boundary_confidence: float
    borderline_threshold: float
    hysteresis_threshold: float
    feedback_prior_strength: float
    tier_floor_platinum: float
    tier_floor_gold: float
    tier_floor_silver: float
    tier_floor_bronze: float
    # Optional in the file (absent = these defaults, so 2026.1 exports byte for byte as before).
    feedback_prior_mean: float = 3.0  # the rating (1-5) feedback is shrunk toward; never the peer mean
    boundary_min_gap: float = 0.0  # composite points a tier boundary needs besides confirmation


SCORING_OPTIONAL_DEFAULTS: dict[str, float] = {"feedback_prior_mean": 3.0, "boundary_min_gap": 0.0}


@dataclass(frozen=True)
class AreaSpec:
    key: str
    title: str
    weight: float
    description: str = ""


@dataclass(frozen=True)
class CriterionSpec:
    key: str
    area: str
    title: str
    weight: float
    evidence: tuple[str, ...]
    direction: str
    scale: str
    anchor_best: float
    anchor_worst: float
    description: str = ""
    probe_id: str = ""
    probe_metric: str = ""
    unit: str = ""
    is_gate: bool = False
    gate_cap_tier: str = ""
    gate_threshold: float = 0.5


@dataclass(frozen=True)
class RubricSpec:
    name: str
    version: str
    title: str
    description: str
    scoring: ScoringSpec
    areas: tuple[AreaSpec, ...]
    criteria: tuple[CriterionSpec, ...] = field(default_factory=tuple)


# --------------------------------------------------------------------------- errors

RubricProblem = Problem  # one problem in a rubric file: where it is and what is wrong


class RubricFormatError(FormatError, MalformedFile):
    """A rubric file is malformed; ``problems`` lists every problem found, in file order."""

    api_detail = "the rubric is malformed; nothing was written"


# --------------------------------------------------------------------------- parsing


def parse_rubric(text: str, *, filename: str = "<rubric>") -> RubricSpec:
    """Parse and validate a rubric document; raise RubricFormatError naming file, line and field."""
    data, reader = read_document(text, filename=filename, error=RubricFormatError)
    spec = _check(data, reader)
    if reader.problems or spec is None:
        raise RubricFormatError(reader.problems)
    return spec


_TOP_REQUIRED = ("format", "name", "version", "title", "scoring", "areas", "criteria")
_SCORING_REQUIRED = (
    "coverage_floor", "area_coverage_floor", "bootstrap_size", "boundary_confidence", "borderline_threshold",
    "hysteresis_threshold", "feedback_prior_strength", "tier_floors",
)
_CRITERION_REQUIRED = ("key", "area", "title", "weight", "evidence", "direction", "scale", "anchors")
_CRITERION_OPTIONAL = ("description", "probe", "unit", "gate")


def _check(data: Any, reader: Reader) -> RubricSpec | None:
    c = Checker(reader)
    top = c.mapping(data, (), _TOP_REQUIRED, ("description",))
    if not top:
        return None
    ident = check_identity(top, c, FORMAT_ID)
    scoring = _check_scoring(top.get("scoring"), c) if "scoring" in top else None
    areas, area_keys = _check_areas(top.get("areas"), c) if "areas" in top else ((), set())
    criteria = _check_criteria(top.get("criteria"), c, area_keys) if "criteria" in top else ()
    _check_criterion_weights(areas, criteria, top.get("criteria"), reader)
    if reader.problems or None in (ident.name, ident.version, ident.title, scoring):
        return None
    return RubricSpec(
        name=ident.name or "", version=ident.version or "", title=ident.title or "",
        description=ident.description or "",
        scoring=scoring, areas=areas, criteria=criteria,  # type: ignore[arg-type]
    )


def _check_scoring(data: Any, c: Checker) -> ScoringSpec | None:
    path: Path = ("scoring",)
    m = c.mapping(data, path, _SCORING_REQUIRED, tuple(SCORING_OPTIONAL_DEFAULTS))
    if not m:
        return None
    values: dict[str, Any] = {}
    for key in ("coverage_floor", "area_coverage_floor", "boundary_confidence", "borderline_threshold",
                "hysteresis_threshold"):
        values[key] = c.number(m, key, path, lo=0.0, hi=1.0)
    values["feedback_prior_strength"] = c.number(m, "feedback_prior_strength", path, lo=0.0)
    optional = {
        "feedback_prior_mean": c.number(m, "feedback_prior_mean", path, lo=1.0, hi=5.0)
        if "feedback_prior_mean" in m else SCORING_OPTIONAL_DEFAULTS["feedback_prior_mean"],
        "boundary_min_gap": c.number(m, "boundary_min_gap", path, lo=0.0, hi=1.0)
        if "boundary_min_gap" in m else SCORING_OPTIONAL_DEFAULTS["boundary_min_gap"],
    }
    size = m.get("bootstrap_size")
    if "bootstrap_size" in m and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        c.r.problem((*path, "bootstrap_size"), f"must be a positive whole number, got {size!r}")
        size = None
    values["bootstrap_size"] = size
    floors_path: Path = (*path, "tier_floors")
    floors = c.mapping(m.get("tier_floors"), floors_path, TIERS[:-1]) if "tier_floors" in m else {}
    previous: tuple[str, float] | None = None
    for tier in TIERS[:-1]:
        value = c.number(floors, tier, floors_path, lo=0.0, hi=1.0)
        values[f"tier_floor_{tier}"] = value
        if value is not None and previous is not None and value > previous[1]:
            c.r.problem((*floors_path, tier), f"must not be above the {previous[0]} floor ({show_number(previous[1])})")
        if value is not None:
            previous = (tier, value)
    if any(v is None for v in (*values.values(), *optional.values())):
        return None
    return ScoringSpec(**values, **optional)  # type: ignore[arg-type]


def _check_areas(data: Any, c: Checker) -> tuple[tuple[AreaSpec, ...], set[str]]:
    """Valid areas, and every key named (so one bad area does not make its criteria "unknown")."""
    if not isinstance(data, list) or not data:
        c.r.problem(("areas",), "expected a non-empty list of areas")
        return (), set()
    areas: list[AreaSpec] = []
    seen: set[str] = set()
    total = 0.0
    for i, item in enumerate(data):
        path: Path = ("areas", i)
        m = c.mapping(item, path, ("key", "title", "weight"), ("description",))
        key = c.string(m, "key", path, pattern=KEY_RE, max_length=64)
        if key is not None and key in seen:
            c.r.problem((*path, "key"), f"duplicate area key '{key}'")
            key = None
        title = c.string(m, "title", path)
        weight = c.number(m, "weight", path, positive=True)
        description = c.string(m, "description", path, required=False, max_length=10_000)
        if key is not None:
            seen.add(key)
        if weight is not None:
            total += weight
        if None not in (key, title, weight, description):
            areas.append(AreaSpec(key=key, title=title, weight=weight, description=description))  # type: ignore[arg-type]
    if len(areas) == len(data) and abs(total - 1.0) > WEIGHT_TOLERANCE:
        c.r.problem(("areas",), f"area weights must sum to 1.0 (within {WEIGHT_TOLERANCE}), they sum to {total!r}")
    return tuple(areas), seen


def _check_criteria(data: Any, c: Checker, area_keys: set[str]) -> tuple[CriterionSpec, ...]:
    if not isinstance(data, list) or not data:
        c.r.problem(("criteria",), "expected a non-empty list of criteria")
        return ()
    out: list[CriterionSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(data):
        spec = _check_criterion(item, ("criteria", i), c, area_keys, seen)
        if spec is not None:
            out.append(spec)
    return tuple(out)


def _check_criterion(item: Any, path: Path, c: Checker, area_keys: set[str], seen: set[str]) -> CriterionSpec | None:
    m = c.mapping(item, path, _CRITERION_REQUIRED, _CRITERION_OPTIONAL)
    if not m:
        return None
    n_before = len(c.r.problems)
    key = c.string(m, "key", path, pattern=KEY_RE, max_length=96)
    if key is not None:
        if key in seen:
            c.r.problem((*path, "key"), f"duplicate criterion key '{key}'")
        seen.add(key)
    area = c.string(m, "area", path)
    if area is not None and area not in area_keys:
        c.r.problem((*path, "area"), f"unknown area '{area}' (areas: {', '.join(sorted(area_keys)) or 'none'})")
    title = c.string(m, "title", path)
    description = c.string(m, "description", path, required=False, max_length=10_000)
    weight = c.number(m, "weight", path, positive=True)
    evidence = _check_evidence(m, path, c)
    probe_id, probe_metric = _check_probe(m, path, c, evidence)
    unit = c.string(m, "unit", path, required=False, max_length=32)
    direction = c.choice(m, "direction", path, DIRECTIONS)
    scale = c.choice(m, "scale", path, SCALES)
    best, worst = _check_anchors(m, path, c, direction, scale)
    is_gate, cap_tier, threshold = _check_gate(m, path, c)
    if len(c.r.problems) != n_before:
        return None
    return CriterionSpec(
        key=key, area=area, title=title, description=description, weight=weight,  # type: ignore[arg-type]
        evidence=evidence, probe_id=probe_id, probe_metric=probe_metric, unit=unit,  # type: ignore[arg-type]
        direction=direction, scale=scale, anchor_best=best, anchor_worst=worst,  # type: ignore[arg-type]
        is_gate=is_gate, gate_cap_tier=cap_tier, gate_threshold=threshold,
    )


def _check_evidence(m: dict, path: Path, c: Checker) -> tuple[str, ...]:
    if "evidence" not in m:
        return ()
    value = m["evidence"]
    epath = (*path, "evidence")
    if not isinstance(value, list) or not value:
        c.r.problem(epath, f"expected a non-empty list of: {', '.join(EVIDENCE_KINDS)}")
        return ()
    for kind in value:
        if kind not in EVIDENCE_KINDS:
            c.r.problem(epath, f"unknown evidence kind {kind!r} (known: {', '.join(EVIDENCE_KINDS)})")
    if len(set(value)) != len(value):
        c.r.problem(epath, "lists an evidence kind twice")
    return tuple(value)


def _check_probe(m: dict, path: Path, c: Checker, evidence: tuple[str, ...]) -> tuple[str, str]:
    ppath = (*path, "probe")
    if "probe" not in m or m["probe"] is None:
        if "probe" in evidence:
            c.r.problem(path, "evidence includes 'probe', so a probe binding {id, metric} is required")
        return "", ""
    if "probe" not in evidence:
        c.r.problem(ppath, "a probe binding needs 'probe' in evidence")
    pm = c.mapping(m["probe"], ppath, ("id", "metric"))
    probe_id = c.string(pm, "id", ppath, pattern=KEY_RE, max_length=96) or ""
    metric = pm.get("metric", "")
    if metric is None:
        metric = ""
    if not isinstance(metric, str) or len(metric) > 96:
        c.r.problem((*ppath, "metric"), "expected a metric name, or '' for the pass/fail outcome")
        metric = ""
    return probe_id, metric


def _check_anchors(m: dict, path: Path, c: Checker, direction: str | None, scale: str | None
                   ) -> tuple[float | None, float | None]:
    if "anchors" not in m:
        return None, None
    apath = (*path, "anchors")
    am = c.mapping(m["anchors"], apath, ("best", "worst"))
    best = c.number(am, "best", apath)
    worst = c.number(am, "worst", apath)
    if best is None or worst is None:
        return best, worst
    if best == worst:
        c.r.problem(apath, f"best and worst must differ (both are {show_number(best)})")
    elif direction == "higher" and best < worst:
        c.r.problem(apath, "direction is 'higher', so best must be above worst")
    elif direction == "lower" and best > worst:
        c.r.problem(apath, "direction is 'lower', so best must be below worst")
    if scale == "log" and (best <= 0 or worst <= 0):
        c.r.problem(apath, "a log scale needs both anchors above zero")
    return best, worst


def _check_gate(m: dict, path: Path, c: Checker) -> tuple[bool, str, float]:
    if "gate" not in m or m["gate"] is None:
        return False, "", 0.5
    gpath = (*path, "gate")
    gm = c.mapping(m["gate"], gpath, ("cap_tier", "threshold"))
    cap = c.choice(gm, "cap_tier", gpath, GATE_CAP_TIERS) or ""
    threshold = c.number(gm, "threshold", gpath, lo=0.0, hi=1.0)
    if threshold is not None and threshold == 0.0:
        c.r.problem((*gpath, "threshold"), "a threshold of 0 can never fail; use a value in (0, 1]")
    return True, cap, threshold if threshold is not None else 0.5


def _check_criterion_weights(areas: tuple[AreaSpec, ...], criteria: tuple[CriterionSpec, ...], raw: Any,
                             reader: Reader) -> None:
    """Criterion weights sum to 1.0 within each area (checked only once every criterion parsed)."""
    if reader.problems or not isinstance(raw, list) or len(criteria) != len(raw):
        return
    for area in areas:
        members = [cr for cr in criteria if cr.area == area.key]
        index = next((i for i, cr in enumerate(criteria) if cr.area == area.key), None)
        if not members:
            reader.problem(("areas",), f"area '{area.key}' has no criteria")
            continue
        total = math.fsum(cr.weight for cr in members)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            reader.problem(
                ("criteria", index, "weight") if index is not None else ("criteria",),
                f"criterion weights in area '{area.key}' must sum to 1.0 (within {WEIGHT_TOLERANCE}), "
                f"they sum to {total!r}",
            )


# --------------------------------------------------------------------------- emitting


def _float(value: float) -> float:
    return float(value)


def spec_to_document(spec: RubricSpec) -> dict[str, Any]:
    """The canonical document as ordered plain data (the order is the format's key order)."""
    s = spec.scoring
    doc: dict[str, Any] = {
        "format": FORMAT_ID,
        "name": spec.name,
        "version": spec.version,
        "title": spec.title,
    }
    if spec.description:
        doc["description"] = spec.description
    doc["scoring"] = {
        "coverage_floor": _float(s.coverage_floor),
        "area_coverage_floor": _float(s.area_coverage_floor),
        "bootstrap_size": int(s.bootstrap_size),
        "boundary_confidence": _float(s.boundary_confidence),
        "borderline_threshold": _float(s.borderline_threshold),
        "hysteresis_threshold": _float(s.hysteresis_threshold),
        "feedback_prior_strength": _float(s.feedback_prior_strength),
        # written (all of them) once any differs from its default, so older versions keep their bytes
        **(
            {key: _float(getattr(s, key)) for key in SCORING_OPTIONAL_DEFAULTS}
            if any(getattr(s, key) != default for key, default in SCORING_OPTIONAL_DEFAULTS.items())
            else {}
        ),
        "tier_floors": Flow(
            platinum=_float(s.tier_floor_platinum), gold=_float(s.tier_floor_gold),
            silver=_float(s.tier_floor_silver), bronze=_float(s.tier_floor_bronze),
        ),
    }
    doc["areas"] = [_area_doc(a) for a in spec.areas]
    doc["criteria"] = [_criterion_doc(cr) for cr in spec.criteria]
    return doc


def _area_doc(a: AreaSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"key": a.key, "title": a.title, "weight": _float(a.weight)}
    if a.description:
        out["description"] = a.description
    return out


def _criterion_doc(cr: CriterionSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"key": cr.key, "area": cr.area, "title": cr.title}
    if cr.description:
        out["description"] = cr.description
    out["weight"] = _float(cr.weight)
    out["evidence"] = FlowList(cr.evidence)
    if cr.probe_id:
        out["probe"] = Flow(id=cr.probe_id, metric=cr.probe_metric)
    if cr.unit:
        out["unit"] = cr.unit
    out["direction"] = cr.direction
    out["scale"] = cr.scale
    out["anchors"] = Flow(best=_float(cr.anchor_best), worst=_float(cr.anchor_worst))
    if cr.is_gate:
        out["gate"] = Flow(cap_tier=cr.gate_cap_tier, threshold=_float(cr.gate_threshold))
    return out


def emit_rubric(spec: RubricSpec) -> str:
    """The canonical YAML text of a spec (deterministic: same spec, same bytes)."""
    return dump_canonical(spec_to_document(spec), header=HEADER)


# --------------------------------------------------------------------------- diffing


@dataclass(frozen=True)
class RubricDiff:
    label_a: str
    label_b: str
    metadata: tuple[FieldChange, ...]
    scoring: tuple[FieldChange, ...]
    areas_added: tuple[str, ...]
    areas_removed: tuple[str, ...]
    areas_changed: tuple[ItemChange, ...]
    criteria_added: tuple[str, ...]
    criteria_removed: tuple[str, ...]
    criteria_changed: tuple[ItemChange, ...]
    # Order matters: reports list areas and criteria by position. One entry for the areas
    # ("areas") and one per area whose criteria moved ("criteria of <area>"), each holding
    # the common keys' order before and after.
    order_changed: tuple[FieldChange, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not any((self.metadata, self.scoring, self.areas_added, self.areas_removed, self.areas_changed,
                        self.criteria_added, self.criteria_removed, self.criteria_changed, self.order_changed))

    def as_text(self) -> str:
        lines = [f"--- {self.label_a}", f"+++ {self.label_b}"]
        if self.is_empty:
            lines.append("no differences")
        for title, items in (("metadata", self.metadata), ("scoring", self.scoring)):
            lines += [f"~ {title}.{c.field}: {c.old!r} -> {c.new!r}" for c in items]
        for kind, added, removed, changed in (
            ("area", self.areas_added, self.areas_removed, self.areas_changed),
            ("criterion", self.criteria_added, self.criteria_removed, self.criteria_changed),
        ):
            lines += [f"+ {kind} {k}" for k in added]
            lines += [f"- {kind} {k}" for k in removed]
            for item in changed:
                lines += [f"~ {kind} {item.key}.{c.field}: {c.old!r} -> {c.new!r}" for c in item.changes]
        lines += [f"~ order of {c.field}: {', '.join(c.old)} -> {', '.join(c.new)}" for c in self.order_changed]
        return "\n".join(lines) + "\n"


def _order_changes(a: RubricSpec, b: RubricSpec) -> tuple[FieldChange, ...]:
    """Where the keys both versions share come in another order (areas; criteria within an area)."""

    def common(old: list[str], new: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        shared = set(old) & set(new)
        return tuple(k for k in old if k in shared), tuple(k for k in new if k in shared)

    out = []
    before, after = common([x.key for x in a.areas], [x.key for x in b.areas])
    if before != after:
        out.append(FieldChange("areas", before, after))
    for area in after:
        before, after_c = common([c.key for c in a.criteria if c.area == area],
                                 [c.key for c in b.criteria if c.area == area])
        if before != after_c:
            out.append(FieldChange(f"criteria of {area}", before, after_c))
    return tuple(out)


def diff_specs(a: RubricSpec, b: RubricSpec) -> RubricDiff:
    """What changed from version ``a`` to version ``b`` (areas and criteria matched by key)."""
    meta = tuple(
        FieldChange(name, getattr(a, name), getattr(b, name))
        for name in ("title", "description")
        if getattr(a, name) != getattr(b, name)
    )
    areas = diff_keyed(a.areas, b.areas)
    criteria = diff_keyed(a.criteria, b.criteria)
    return RubricDiff(
        label_a=f"{a.name}@{a.version}", label_b=f"{b.name}@{b.version}", metadata=meta,
        scoring=field_changes(a.scoring, b.scoring),
        areas_added=areas[0], areas_removed=areas[1], areas_changed=areas[2],
        criteria_added=criteria[0], criteria_removed=criteria[1], criteria_changed=criteria[2],
        order_changed=_order_changes(a, b),
    )
