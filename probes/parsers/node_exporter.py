"""The Prometheus text exposition format, as node-exporter serves it on ``/metrics``.

Only what the probes need: sample name, labels and value, with ``# HELP``/``# TYPE`` skipped.
Label values may contain escaped quotes, backslashes and newlines (``\\"``, ``\\\\``, ``\\n``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from probes.parsers import ParseError

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


@dataclass(frozen=True)
class TextSample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)


def _unescape(value: str) -> str:
    return value.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")


def _value(text: str) -> float:
    word = text.split()[0]
    if word in ("+Inf", "Inf"):
        return math.inf
    if word == "-Inf":
        return -math.inf
    return float(word)


def parse_text_exposition(text: str) -> tuple[TextSample, ...]:
    samples = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name_match = _NAME.match(line)
        if not name_match:
            raise ParseError(f"line {lineno}: no metric name in {raw!r}")
        pos = name_match.end()
        labels: list[tuple[str, str]] = []
        if pos < len(line) and line[pos] == "{":
            end = pos + 1
            while True:
                if end < len(line) and line[end] == "}":
                    end += 1
                    break
                m = _LABEL.match(line, end)
                if not m:
                    raise ParseError(f"line {lineno}: bad label set in {raw!r}")
                labels.append((m.group(1), _unescape(m.group(2))))
                end = m.end()
            pos = end
        try:
            value = _value(line[pos:].strip())
        except (ValueError, IndexError) as exc:
            raise ParseError(f"line {lineno}: bad value in {raw!r}") from exc
        samples.append(TextSample(name=name_match.group(0), labels=tuple(labels), value=value))
    return tuple(samples)
