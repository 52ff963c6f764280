"""The YAML kit of a frozen, versioned document: read, check, write canonically, fingerprint, diff.

A rubric version (``rubric.yaml_format``) and a grade definition (``grades.spec``) are both one
YAML document with a ``format`` id, a ``name``, a ``version`` label, a ``title`` and an optional
``description``, frozen once and then identified by the sha256 of its canonical text. This
module is what they share, public and pure (no models, no clock):

* :func:`read_document` composes the YAML node tree with a bounded loader and hands back plain
  values and the :class:`Reader` that remembers the line of every path; :class:`Checker`
  checks fields and records each problem as a :class:`Problem` (``FILE:LINE: FIELD: message``);
  a :class:`FormatError` subclass lists them all at once.
* :func:`check_identity` checks the fields every document starts with.
* :func:`dump_canonical` writes ordered plain data in the canonical form (fixed key order, no
  wrapping, no aliases, :class:`Flow` and :class:`FlowList` on one line): the same data gives
  the same bytes, so importing a canonical file and exporting it again is the identity, and
  :func:`fingerprint` (sha256 hex of that text) is stable.
* :func:`field_changes` and :func:`diff_keyed` give the :class:`FieldChange` and
  :class:`ItemChange` records both documents' diffs are made of.

The Django side (the abstract model, the lookup, the freeze, the clone and the command's verbs)
is ``rubric.versioned``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from config.text import unsafe_text_problem
from rubric.spec import rubric_fingerprint

KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*\Z")  # \Z: "$" would let a trailing newline through
# A version label goes into file names and headers: no spaces, quotes, backslashes or controls.
VERSION_RE = re.compile(r"^[^\s\"'\\\x00-\x1f\x7f]+\Z")
VERSION_RULE = "no spaces, quotes, backslashes or control characters"
NAME_RULE = "must be lower-case letters, digits, '_' or '-'"
# Bounds on what the reader reads: a rubric is ~30 KiB and 4 levels deep, a grade smaller.
MAX_DOCUMENT_BYTES = 2 * 1024 * 1024
MAX_YAML_DEPTH = 32
MAX_NUMBER_DIGITS = 30

Path = tuple[str | int, ...]


# --------------------------------------------------------------------------- problems


@dataclass(frozen=True)
class Problem:
    """One problem in a document: where it is and what is wrong."""

    filename: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.filename}:{self.line}" if self.line else self.filename
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class FormatError(ValueError):
    """A document is malformed; ``problems`` lists every problem found, in file order."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems, key=lambda p: (p.line or 0, p.field))
        super().__init__("\n".join(str(p) for p in self.problems))


# --------------------------------------------------------------------------- reading


def _path_str(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


class Reader:
    """Turns a composed node tree into plain values, remembering the line of every path."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.lines: dict[Path, int] = {}
        self.problems: list[Problem] = []
        self._constructor = SafeConstructor()
        self._seen: set[int] = set()

    def problem(self, path: Path, message: str) -> None:
        line = None
        probe = path
        while line is None and probe:
            line = self.lines.get(probe)
            probe = probe[:-1]
        self.problems.append(Problem(self.filename, line or self.lines.get(()), _path_str(path), message))

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


class BoundedLoader(yaml.SafeLoader):
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


def read_document(text: str, *, filename: str, error: type[FormatError]) -> tuple[Any, Reader]:
    """Compose ``text`` (bounded in size and depth) into plain values and the Reader that read them.

    A document that is too large, not YAML or empty raises ``error`` with one problem saying so;
    problems inside the values (a duplicate key, an alias, a number too long) are on the
    returned reader, for the caller's checks to add to.
    """
    if len(text) > MAX_DOCUMENT_BYTES:
        raise error([Problem(filename, None, "", f"larger than {MAX_DOCUMENT_BYTES} bytes")])
    try:
        root = yaml.compose(text, Loader=BoundedLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        message = f"bad YAML: {exc.problem or exc}"
        if exc.context and exc.context_mark and exc.context_mark.line + 1 != line:
            message += f" ({exc.context}, which started on line {exc.context_mark.line + 1})"
        raise error([Problem(filename, line, "", message)]) from exc
    except yaml.YAMLError as exc:
        raise error([Problem(filename, None, "", f"bad YAML: {exc}")]) from exc
    if root is None:
        raise error([Problem(filename, 1, "", "the file is empty")])
    reader = Reader(filename)
    return reader.value(root, ()), reader


# --------------------------------------------------------------------------- checking


def kind_of(value: Any) -> str:
    """How a problem names the type of a value it did not expect."""
    return "nothing" if value is None else type(value).__name__


def show_number(value: float | None) -> str:
    """How a problem writes a bound or a value (``-`` for no bound)."""
    return "-" if value is None else repr(value)


class Checker:
    """Field-level checks that record problems on the reader and return a usable value (or None)."""

    def __init__(self, reader: Reader) -> None:
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
            self.r.problem((*path, key), f"expected a string, got {kind_of(value)} (quote it)")
            return None
        if required and not value.strip():
            self.r.problem((*path, key), "must not be empty")
            return None
        unsafe = unsafe_text_problem(value)
        if unsafe:
            self.r.problem((*path, key), unsafe)
            return None
        if pattern is not None and not pattern.match(value):
            self.r.problem((*path, key), f"'{value}' {NAME_RULE}")
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
            self.r.problem((*path, key), f"expected a number, got {kind_of(value)}")
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
            self.r.problem((*path, key), f"must be positive, got {show_number(value)}")
            return None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            self.r.problem((*path, key), f"must be between {show_number(lo)} and {show_number(hi)}, got {show_number(value)}")
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


@dataclass(frozen=True)
class Identity:
    """The fields every versioned document starts with (None where a field had a problem)."""

    name: str | None
    version: str | None
    title: str | None
    description: str | None


def check_identity(top: dict, c: Checker, format_id: str) -> Identity:
    """Check ``format``, ``name``, ``version``, ``title`` and the optional ``description``."""
    if "format" in top and top["format"] != format_id:
        c.r.problem(("format",), f"expected '{format_id}', got {top['format']!r}")
    name = c.string(top, "name", (), pattern=KEY_RE, max_length=64)
    version = c.string(top, "version", (), max_length=32)
    if version is not None and not VERSION_RE.match(version):
        c.r.problem(("version",), f"{version!r}: {VERSION_RULE}")
        version = None
    title = c.string(top, "title", ())
    description = c.string(top, "description", (), required=False, max_length=10_000)
    return Identity(name, version, title, description)


def label_problems(*, name: str, version: str, context: str) -> list[Problem]:
    """What is wrong with a new ``name@version`` label (a clone's), as problems filed under ``context``."""
    if not version or len(version) > 32 or not VERSION_RE.match(version):
        return [Problem(context, None, "version", f"must be 1 to 32 characters, {VERSION_RULE}")]
    if not KEY_RE.match(name) or len(name) > 64:
        return [Problem(context, None, "name", NAME_RULE)]
    return []


# --------------------------------------------------------------------------- writing


class CanonicalDumper(yaml.SafeDumper):
    """SafeDumper that never sorts, never wraps and never uses aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.endswith(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


class Flow(dict):
    """A small mapping written on one line: {best: 1.0, worst: 0.0}."""


class FlowList(list):
    """A small list written on one line: [probe, doc_review]."""


CanonicalDumper.add_representer(str, _represent_str)
CanonicalDumper.add_representer(
    Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(), flow_style=True)
)
CanonicalDumper.add_representer(
    FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True)
)
CanonicalDumper.add_representer(
    dict, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(), flow_style=False)
)


def dump_canonical(document: dict[str, Any], *, header: str) -> str:
    """The canonical YAML text of ordered plain data, after a comment ``header`` (same data, same bytes)."""
    body = yaml.dump(
        document, Dumper=CanonicalDumper, sort_keys=False, allow_unicode=True,
        width=1_000_000, indent=2, default_flow_style=False, explicit_start=False,
    )
    return header + body


# The one fingerprint of a frozen document: sha256 hex of its canonical text. Defined in the
# pure vocabulary (rubric.spec, which the scoring engine reads); the same function for grades.
fingerprint = rubric_fingerprint


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


def field_changes(a: Any, b: Any, *, skip: Iterable[str] = (), prefix: str = "") -> tuple[FieldChange, ...]:
    """The fields of two dataclass instances of one type that differ, in field order."""
    skipped = set(skip)
    return tuple(
        FieldChange(prefix + f.name, getattr(a, f.name), getattr(b, f.name))
        for f in fields(a)
        if f.name not in skipped and getattr(a, f.name) != getattr(b, f.name)
    )


def diff_keyed(a: Iterable[Any], b: Iterable[Any]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[ItemChange, ...]]:
    """(added, removed, changed) between two sequences of items matched by their ``key`` field."""
    old = {x.key: x for x in a}
    new = {x.key: x for x in b}
    added = tuple(k for k in new if k not in old)
    removed = tuple(k for k in old if k not in new)
    changed = tuple(
        ItemChange(k, ch) for k in old if k in new and (ch := field_changes(old[k], new[k], skip=("key",)))
    )
    return added, removed, changed
