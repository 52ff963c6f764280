"""The rubric YAML format: parse, validate, emit and diff, with no models and no clock.

A rubric version travels as one YAML document (documented in ``rubric/README.md``). This
module is the pure core behind ``manage.py rubric import/export/diff``, the admin import
form and the API:

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
import re
from dataclasses import dataclass, field, fields
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from config.text import unsafe_text_problem
from rubric.spec import EVIDENCE_KINDS, GATE_CAP_TIERS, TIERS, Direction, Scale

FORMAT_ID = "opgrade-rubric/1"
WEIGHT_TOLERANCE = 1e-6
DIRECTIONS: tuple[str, ...] = tuple(d.value for d in Direction)
SCALES: tuple[str, ...] = tuple(s.value for s in Scale)
KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*\Z")  # \Z: "$" would let a trailing newline through
# A version label goes into file names and headers: no spaces, quotes, backslashes or controls.
VERSION_RE = re.compile(r"^[^\s\"'\\\x00-\x1f\x7f]+\Z")
VERSION_RULE = "no spaces, quotes, backslashes or control characters"
# Bounds on what the parser reads: a rubric is ~30 KiB and 4 levels deep.
MAX_RUBRIC_BYTES = 2 * 1024 * 1024
MAX_YAML_DEPTH = 32
MAX_NUMBER_DIGITS = 30
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


@dataclass(frozen=True)
class RubricProblem:
    """One problem in a rubric file: where it is and what is wrong."""

    filename: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.filename}:{self.line}" if self.line else self.filename
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class RubricFormatError(ValueError):
    """A rubric file is malformed; ``problems`` lists every problem found, in file order."""

    def __init__(self, problems: list[RubricProblem]) -> None:
        self.problems = sorted(problems, key=lambda p: (p.line or 0, p.field))
        super().__init__("\n".join(str(p) for p in self.problems))


# --------------------------------------------------------------------------- parsing

Path = tuple[str | int, ...]


def _path_str(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


class _Reader:
    """Turns a composed node tree into plain values, remembering the line of every path."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.lines: dict[Path, int] = {}
        self.problems: list[RubricProblem] = []
        self._constructor = SafeConstructor()
        self._seen: set[int] = set()

    def problem(self, path: Path, message: str) -> None:
        line = None
        probe = path
        while line is None and probe:
            line = self.lines.get(probe)
            probe = probe[:-1]
        self.problems.append(RubricProblem(self.filename, line or self.lines.get(()), _path_str(path), message))

    def value(self, node: Node, path: Path) -> Any:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, MappingNode | SequenceNode):
            # An alias makes the composer hand us the same node twice; refusing reuse keeps a
            # small file from expanding into a huge one ("billion laughs").
            if id(node) in self._seen:
                self.problem(path, "anchors and aliases (&name / *name) are not allowed")
                return None
            self._seen.add(id(node))
        if isinstance(node, MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self._scalar(key_node, path)
                if not isinstance(key, str):
                    self.lines[(*path, str(key))] = key_node.start_mark.line + 1
                    self.problem((*path, str(key)), "keys must be strings")
                    continue
                if key in out:
                    self.lines[(*path, key)] = key_node.start_mark.line + 1
                    self.problem((*path, key), "duplicate key in this mapping")
                    continue
                out[key] = self.value(value_node, (*path, key))
                self.lines[(*path, key)] = key_node.start_mark.line + 1
            return out
        if isinstance(node, SequenceNode):
            return [self.value(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node, path)

    def _scalar(self, node: Node, path: Path) -> Any:
        if not isinstance(node, ScalarNode):
            self.problem(path, "expected a plain value here")
            return None
        if node.tag.endswith((":int", ":float")) and len(node.value) > MAX_NUMBER_DIGITS:
            self.problem(path, f"a number longer than {MAX_NUMBER_DIGITS} characters")
            return None
        try:
            return self._constructor.construct_object(node, deep=True)
        except ConstructorError as exc:
            self.problem(path, f"cannot read value: {exc.problem}")
            return None
        except (ValueError, OverflowError) as exc:  # e.g. an int beyond Python's digit limit
            self.problem(path, f"cannot read value: {exc}")
            return None


class _Checker:
    """Field-level checks that record problems and return a usable value (or None)."""

    def __init__(self, reader: _Reader) -> None:
        self.r = reader

    def mapping(self, data: Any, path: Path, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
        if not isinstance(data, dict):
            self.r.problem(path, "expected a mapping")
            return {}
        for key in required:
            if key not in data:
                self.r.problem(path, f"missing required field '{key}'")
        for key in data:
            if key not in required and key not in optional:
                allowed = ", ".join((*required, *optional))
                self.r.problem((*path, key), f"unknown field (allowed: {allowed})")
        return data

    def string(self, data: dict, key: str, path: Path, *, required: bool = True, pattern: re.Pattern | None = None,
               max_length: int = 200) -> str | None:
        if key not in data:
            return None if required else ""
        value = data[key]
        if value is None and not required:
            return ""
        if not isinstance(value, str):
            self.r.problem((*path, key), f"expected a string, got {_kind(value)} (quote it)")
            return None
        if required and not value.strip():
            self.r.problem((*path, key), "must not be empty")
            return None
        unsafe = unsafe_text_problem(value)
        if unsafe:
            self.r.problem((*path, key), unsafe)
            return None
        if pattern is not None and not pattern.match(value):
            self.r.problem((*path, key), f"'{value}' must be lower-case letters, digits, '_' or '-'")
            return None
        if len(value) > max_length:
            self.r.problem((*path, key), f"longer than {max_length} characters")
            return None
        return value

    def number(self, data: dict, key: str, path: Path, *, lo: float | None = None, hi: float | None = None,
               positive: bool = False) -> float | None:
        if key not in data:
            return None
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.r.problem((*path, key), f"expected a number, got {_kind(value)}")
            return None
        try:
            value = float(value)
        except OverflowError:
            self.r.problem((*path, key), "must be a finite number (this one is too large)")
            return None
        if not math.isfinite(value):
            self.r.problem((*path, key), "must be a finite number")
            return None
        if positive and value <= 0:
            self.r.problem((*path, key), f"must be positive, got {_fmt(value)}")
            return None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            self.r.problem((*path, key), f"must be between {_fmt(lo)} and {_fmt(hi)}, got {_fmt(value)}")
            return None
        return value

    def choice(self, data: dict, key: str, path: Path, choices: tuple[str, ...]) -> str | None:
        if key not in data:
            return None
        value = data[key]
        if value not in choices:
            self.r.problem((*path, key), f"{value!r} is not one of: {', '.join(choices)}")
            return None
        return value


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def _fmt(value: float | None) -> str:
    return "-" if value is None else repr(value)


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer refuses nesting deeper than MAX_YAML_DEPTH (PyYAML recurses
    once per level: 100,000 '[' used to be a RecursionError)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def parse_rubric(text: str, *, filename: str = "<rubric>") -> RubricSpec:
    """Parse and validate a rubric document; raise RubricFormatError naming file, line and field."""
    reader = _Reader(filename)
    if len(text) > MAX_RUBRIC_BYTES:
        raise RubricFormatError([RubricProblem(filename, None, "", f"larger than {MAX_RUBRIC_BYTES} bytes")])
    try:
        root = yaml.compose(text, Loader=_BoundedLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        message = f"bad YAML: {exc.problem or exc}"
        if exc.context and exc.context_mark and exc.context_mark.line + 1 != line:
            message += f" ({exc.context}, which started on line {exc.context_mark.line + 1})"
        raise RubricFormatError([RubricProblem(filename, line, "", message)]) from exc
    except yaml.YAMLError as exc:
        raise RubricFormatError([RubricProblem(filename, None, "", f"bad YAML: {exc}")]) from exc
    if root is None:
        raise RubricFormatError([RubricProblem(filename, 1, "", "the file is empty")])
    data = reader.value(root, ())
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


def _check(data: Any, reader: _Reader) -> RubricSpec | None:
    c = _Checker(reader)
    top = c.mapping(data, (), _TOP_REQUIRED, ("description",))
    if not top:
        return None
    if "format" in top and top["format"] != FORMAT_ID:
        reader.problem(("format",), f"expected '{FORMAT_ID}', got {top['format']!r}")
    name = c.string(top, "name", (), pattern=KEY_RE, max_length=64)
    version = c.string(top, "version", (), max_length=32)
    if version is not None and not VERSION_RE.match(version):
        reader.problem(("version",), f"{version!r}: {VERSION_RULE}")
        version = None
    title = c.string(top, "title", ())
    description = c.string(top, "description", (), required=False, max_length=10_000)
    scoring = _check_scoring(top.get("scoring"), c) if "scoring" in top else None
    areas, area_keys = _check_areas(top.get("areas"), c) if "areas" in top else ((), set())
    criteria = _check_criteria(top.get("criteria"), c, area_keys) if "criteria" in top else ()
    _check_criterion_weights(areas, criteria, top.get("criteria"), reader)
    if reader.problems or None in (name, version, title, scoring):
        return None
    return RubricSpec(
        name=name or "", version=version or "", title=title or "", description=description or "",
        scoring=scoring, areas=areas, criteria=criteria,  # type: ignore[arg-type]
    )


def _check_scoring(data: Any, c: _Checker) -> ScoringSpec | None:
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
            c.r.problem((*floors_path, tier), f"must not be above the {previous[0]} floor ({_fmt(previous[1])})")
        if value is not None:
            previous = (tier, value)
    if any(v is None for v in (*values.values(), *optional.values())):
        return None
    return ScoringSpec(**values, **optional)  # type: ignore[arg-type]


def _check_areas(data: Any, c: _Checker) -> tuple[tuple[AreaSpec, ...], set[str]]:
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


def _check_criteria(data: Any, c: _Checker, area_keys: set[str]) -> tuple[CriterionSpec, ...]:
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


def _check_criterion(item: Any, path: Path, c: _Checker, area_keys: set[str], seen: set[str]) -> CriterionSpec | None:
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


def _check_evidence(m: dict, path: Path, c: _Checker) -> tuple[str, ...]:
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


def _check_probe(m: dict, path: Path, c: _Checker, evidence: tuple[str, ...]) -> tuple[str, str]:
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


def _check_anchors(m: dict, path: Path, c: _Checker, direction: str | None, scale: str | None
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
        c.r.problem(apath, f"best and worst must differ (both are {_fmt(best)})")
    elif direction == "higher" and best < worst:
        c.r.problem(apath, "direction is 'higher', so best must be above worst")
    elif direction == "lower" and best > worst:
        c.r.problem(apath, "direction is 'lower', so best must be below worst")
    if scale == "log" and (best <= 0 or worst <= 0):
        c.r.problem(apath, "a log scale needs both anchors above zero")
    return best, worst


def _check_gate(m: dict, path: Path, c: _Checker) -> tuple[bool, str, float]:
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
                             reader: _Reader) -> None:
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


class _CanonicalDumper(yaml.SafeDumper):
    """SafeDumper that never sorts, never wraps and never uses aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.endswith(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_CanonicalDumper.add_representer(str, _represent_str)


class _Flow(dict):
    """A small mapping written on one line: {best: 1.0, worst: 0.0}."""


class _FlowList(list):
    """A small list written on one line: [probe, doc_review]."""


_CanonicalDumper.add_representer(
    _Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(), flow_style=True)
)
_CanonicalDumper.add_representer(
    _FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True)
)
_CanonicalDumper.add_representer(
    dict, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(), flow_style=False)
)


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
        "tier_floors": _Flow(
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
    out["evidence"] = _FlowList(cr.evidence)
    if cr.probe_id:
        out["probe"] = _Flow(id=cr.probe_id, metric=cr.probe_metric)
    if cr.unit:
        out["unit"] = cr.unit
    out["direction"] = cr.direction
    out["scale"] = cr.scale
    out["anchors"] = _Flow(best=_float(cr.anchor_best), worst=_float(cr.anchor_worst))
    if cr.is_gate:
        out["gate"] = _Flow(cap_tier=cr.gate_cap_tier, threshold=_float(cr.gate_threshold))
    return out


def emit_rubric(spec: RubricSpec) -> str:
    """The canonical YAML text of a spec (deterministic: same spec, same bytes)."""
    body = yaml.dump(
        spec_to_document(spec), Dumper=_CanonicalDumper, sort_keys=False, allow_unicode=True,
        width=1_000_000, indent=2, default_flow_style=False, explicit_start=False,
    )
    return HEADER + body


# --------------------------------------------------------------------------- diffing


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: Any
    new: Any


@dataclass(frozen=True)
class ItemChange:
    key: str
    changes: tuple[FieldChange, ...]


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


def _field_changes(a: Any, b: Any, skip: tuple[str, ...] = ()) -> tuple[FieldChange, ...]:
    return tuple(
        FieldChange(f.name, getattr(a, f.name), getattr(b, f.name))
        for f in fields(a)
        if f.name not in skip and getattr(a, f.name) != getattr(b, f.name)
    )


def _diff_items(a: tuple, b: tuple) -> tuple[tuple[str, ...], tuple[str, ...], tuple[ItemChange, ...]]:
    old = {x.key: x for x in a}
    new = {x.key: x for x in b}
    added = tuple(k for k in new if k not in old)
    removed = tuple(k for k in old if k not in new)
    changed = tuple(
        ItemChange(k, ch) for k in old if k in new and (ch := _field_changes(old[k], new[k], skip=("key",)))
    )
    return added, removed, changed


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
    areas = _diff_items(a.areas, b.areas)
    criteria = _diff_items(a.criteria, b.criteria)
    return RubricDiff(
        label_a=f"{a.name}@{a.version}", label_b=f"{b.name}@{b.version}", metadata=meta,
        scoring=_field_changes(a.scoring, b.scoring),
        areas_added=areas[0], areas_removed=areas[1], areas_changed=areas[2],
        criteria_added=criteria[0], criteria_removed=criteria[1], criteria_changed=criteria[2],
        order_changed=_order_changes(a, b),
    )
