"""Prometheus HTTP API responses: query vectors, series, label names and values, targets.

Used by the monitoring probes (coverage, freshness, retention) and by ``tenant_metric_isolation``,
which looks for another tenant's nonce in anything the API returns: a sample's labels, a series,
a label value. The envelope is ``{"status": "success"|"error", "data": ..., "errorType", "error"}``
(https://prometheus.io/docs/prometheus/latest/querying/api/).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from probes.parsers import ParseError


@dataclass(frozen=True)
class PromResponse:
    status: str
    data: Any
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "success"


def parse_response(body: str | bytes) -> PromResponse:
    """Parse the JSON envelope; a non-JSON body (an nginx 401 page) raises :class:`ParseError`."""
    try:
        doc = json.loads(body)
    except (TypeError, ValueError) as exc:
        # never quote the body: it may be another service's answer (issue 24)
        raise ParseError(f"not a Prometheus JSON response ({len(body or '')} bytes)") from exc
    if not isinstance(doc, dict) or doc.get("status") not in ("success", "error"):
        raise ParseError("JSON without a Prometheus 'status' field")
    error = f"{doc.get('errorType', '')}: {doc.get('error', '')}" if doc["status"] == "error" else ""
    return PromResponse(status=doc["status"], data=doc.get("data"), error=error)


@dataclass(frozen=True)
class Sample:
    labels: Mapping[str, str]
    timestamp: float
    value: float

    @property
    def name(self) -> str:
        return self.labels.get("__name__", "")


def vector_samples(resp: PromResponse) -> tuple[Sample, ...]:
    """The samples of an instant-vector (or the last point of each range-matrix series)."""
    if not resp.ok:
        raise ParseError(f"Prometheus error: {resp.error}")
    data = resp.data or {}
    kind = data.get("resultType")
    out = []
    for item in data.get("result", []):
        if kind == "vector":
            ts, val = item["value"]
        elif kind == "matrix":
            if not item.get("values"):
                continue
            ts, val = item["values"][-1]
        else:
            raise ParseError(f"unsupported resultType {kind!r}")
        out.append(Sample(labels=dict(item.get("metric", {})), timestamp=float(ts), value=float(val)))
    return tuple(out)


def series(resp: PromResponse) -> tuple[Mapping[str, str], ...]:
    """``/api/v1/series`` -> the label sets."""
    if not resp.ok:
        raise ParseError(f"Prometheus error: {resp.error}")
    return tuple(dict(s) for s in (resp.data or []))


def string_list(resp: PromResponse) -> tuple[str, ...]:
    """``/api/v1/labels`` and ``/api/v1/label/<name>/values`` -> the strings."""
    if not resp.ok:
        raise ParseError(f"Prometheus error: {resp.error}")
    return tuple(str(v) for v in (resp.data or []))


@dataclass(frozen=True)
class NonceHit:
    """Where a nonce showed up: ``where`` is ``label:<name>``, ``value`` or ``name``."""

    where: str
    text: str


def find_nonce(resp: PromResponse, nonce: str) -> tuple[NonceHit, ...]:
    """Every place ``nonce`` occurs in a successful response (labels, values, names)."""
    if not nonce:
        raise ValueError("empty nonce")
    hits: list[NonceHit] = []

    def visit_labels(labels: Mapping[str, Any]) -> None:
        for key, val in labels.items():
            if nonce in str(key) or nonce in str(val):
                hits.append(NonceHit(where=f"label:{key}", text=f"{key}={val}"))

    if not resp.ok:
        return ()
    data = resp.data
    if isinstance(data, dict) and "result" in data:
        for item in data.get("result", []):
            visit_labels(item.get("metric", {}))
    elif isinstance(data, list):
        for entry in data:
            if isinstance(entry, dict):
                visit_labels(entry)
            elif nonce in str(entry):
                hits.append(NonceHit(where="value", text=str(entry)))
    return tuple(hits)


def foreign_values(values: Iterable[str], allowed: Iterable[str]) -> tuple[str, ...]:
    """Label values outside the tenant's own set (e.g. other tenants' names or hosts)."""
    own = set(allowed)
    return tuple(sorted({v for v in values if v not in own}))


@dataclass(frozen=True)
class Target:
    job: str
    instance: str
    labels: Mapping[str, str]
    health: str  # "up" | "down" | "unknown"
    last_error: str


def parse_targets(resp: PromResponse) -> tuple[Target, ...]:
    """``/api/v1/targets`` -> active targets with their health."""
    if not resp.ok:
        raise ParseError(f"Prometheus error: {resp.error}")
    out = []
    for t in (resp.data or {}).get("activeTargets", []):
        labels = dict(t.get("labels", {}))
        out.append(
            Target(
                job=labels.get("job", t.get("scrapePool", "")),
                instance=labels.get("instance", ""),
                labels=labels,
                health=t.get("health", "unknown"),
                last_error=t.get("lastError", ""),
            )
        )
    return tuple(out)


def coverage_ratio(expected: Iterable[str], up: Iterable[str]) -> float:
    """Share of ``expected`` entities (nodes or GPUs) found among the ``up`` ones; 0 when none expected."""
    want = set(expected)
    if not want:
        return 0.0
    return len(want & set(up)) / len(want)


_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def parse_duration_s(text: str) -> float:
    """A Prometheus duration (``15d``, ``6h``, ``1w2d``, ``90m``) in seconds; ``0s`` means unset."""
    import re

    parts = re.findall(r"(\d+)(ms|[smhdwy])", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ParseError(f"not a Prometheus duration: {text!r}")
    return float(sum(int(n) * _DURATION_UNITS[u] for n, u in parts))


def retention_days(flags: Mapping[str, str]) -> float | None:
    """Configured TSDB retention in days from ``/api/v1/status/flags``; None when only a size limit is set.

    Prometheus' default (``0s`` / empty with no size limit) is 15 days.
    """
    raw = flags.get("storage.tsdb.retention.time") or flags.get("storage.tsdb.retention") or "0s"
    seconds = parse_duration_s(raw)
    if seconds == 0:
        size = flags.get("storage.tsdb.retention.size", "0B")
        return None if size not in ("0B", "0", "") else 15.0
    return seconds / 86400
