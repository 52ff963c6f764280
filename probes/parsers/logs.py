"""Log query responses: find a canary line, and when it was ingested.

Accepts what log endpoints return: Loki's ``query_range`` JSON (``data.result[].values[[ts_ns, line]]``),
a plain JSON list of lines or of ``{"ts", "line"}`` objects, ``{"lines": [...]}``, or plain text
(one line each, as ``grep`` over a log directory prints). The probe only needs: is the nonce in
there, and which lines carry it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from probes.parsers import ParseError


@dataclass(frozen=True)
class LogLine:
    text: str
    labels: tuple[tuple[str, str], ...] = ()
    timestamp_s: float | None = None


def _from_json(doc: Any) -> list[LogLine]:
    if isinstance(doc, dict) and "data" in doc and isinstance(doc["data"], dict):
        if doc.get("status") not in (None, "success"):
            raise ParseError(f"log API error: {str(doc.get('error', ''))[:120]}")  # its message, never the document
        out = []
        for stream in doc["data"].get("result", []):
            labels = tuple(sorted((str(k), str(v)) for k, v in (stream.get("stream") or {}).items()))
            for ts, line in stream.get("values", []):
                out.append(LogLine(text=str(line), labels=labels, timestamp_s=int(ts) / 1e9))
        return out
    if isinstance(doc, dict) and isinstance(doc.get("lines"), list):
        return _from_json(doc["lines"])
    if isinstance(doc, list):
        out = []
        for item in doc:
            if isinstance(item, dict):
                text = item.get("line", item.get("message", item.get("msg", "")))
                ts = item.get("ts", item.get("timestamp"))
                out.append(
                    LogLine(text=str(text), timestamp_s=float(ts) if isinstance(ts, int | float) else None)
                )
            else:
                out.append(LogLine(text=str(item)))
        return out
    raise ParseError("unrecognised log JSON shape")


def parse_log_response(body: str) -> tuple[LogLine, ...]:
    """Lines from any of the shapes in the module docstring."""
    stripped = body.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(body)
        except ValueError as exc:
            raise ParseError(f"malformed log JSON: {exc}") from exc
        return tuple(_from_json(doc))
    return tuple(LogLine(text=line) for line in body.splitlines() if line.strip())


def lines_with(lines: tuple[LogLine, ...], nonce: str) -> tuple[LogLine, ...]:
    if not nonce:
        raise ValueError("empty nonce")
    return tuple(line for line in lines if nonce in line.text)
