"""The grades section of a report (issue 17), rendered: CSV tables and the index history chart.

Pure functions of the frozen document's ``grades`` part (built by ``grades.selectors`` when the
draft is made): no models, no clock, no JavaScript. A report made before grades existed has no
such part; its grade tables are empty (header only) and its charts are 404.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

from reports.rendering import csv_bytes
from reports.svg import BAR, GRID, INK, svg_open

BAND = "#bfdbfe"


def section(document: Mapping[str, Any]) -> Mapping[str, Any]:
    return document.get("grades") or {}


def sheet_csv(document: Mapping[str, Any], *, content_hash: str) -> bytes:
    """One row per grade, cluster and requirement: verdict, evidence, and how much it missed by."""
    rows: list[list[Any]] = [["cycle", "grade", "cluster", "provider", "status", "requirement", "kind", "reads",
                              "ref", "threshold", "unit", "verdict", "value", "gap", "evidence", "gap_text",
                              "report_content_hash"]]
    for sheet in section(document).get("sheets", []):
        for c in sheet["clusters"]:
            for check in c["checks"]:
                rows.append([document["cycle"]["slug"], sheet["grade"], c["cluster"], c["provider"], c["status"],
                             check["requirement"], check["kind"], check["reads"], check["ref"], check["threshold"],
                             check["unit"], check["verdict"], check["value"], check["gap"], check["evidence"],
                             check["gap_text"], content_hash])
    return csv_bytes(rows)


def index_csv(document: Mapping[str, Any], *, content_hash: str) -> bytes:
    """One row per grade, term and period of the reference index."""
    rows: list[list[Any]] = [["grade", "term", "period", "median", "count", "min", "max", "p25", "p75", "thin",
                              "report_content_hash"]]
    for series in section(document).get("index", []):
        for p in series["points"]:
            rows.append([series["grade"], series["term"], p["period"], p["median"], p["count"], p["min"], p["max"],
                         p["p25"], p["p75"], "yes" if p["thin"] else "no", content_hash])
    return csv_bytes(rows)


def tracking_csv(document: Mapping[str, Any], *, content_hash: str) -> bytes:
    """One row per grade, term and provider: correlation, beta and tracking error with their sample size."""
    rows: list[list[Any]] = [["grade", "term", "provider", "periods", "pairs", "correlation", "beta",
                              "tracking_error", "poor_hedge", "reason", "report_content_hash"]]
    for t in section(document).get("tracking", []):
        poor = {True: "yes", False: "no", None: "not judged"}[t["poor_hedge"]]
        rows.append([t["grade"], t["term"], t["provider"], t["periods"], t["correlation"]["n"],
                     t["correlation"]["value"], t["beta"]["value"], t["tracking_error"]["value"], poor, t["reason"],
                     content_hash])
    return csv_bytes(rows)


CSV_TABLES = {"grades": sheet_csv, "grade-index": index_csv, "grade-tracking": tracking_csv}


def series_slug(series: Mapping[str, Any]) -> str:
    """A URL slug for one index series: grade label and term, '@' and '.' made '-'."""
    return f"{series['grade']}-{series['term']}".replace("@", "-").replace(".", "-")


def index_series(document: Mapping[str, Any], slug: str) -> Mapping[str, Any] | None:
    return next((s for s in section(document).get("index", []) if series_slug(s) == slug), None)


def index_history_svg(series: Mapping[str, Any], *, ident: str = "index") -> str:
    """The reference index per period: the median as a line, min-max as a band; thin periods hollow."""
    points: Sequence[Mapping[str, Any]] = series["points"]
    left, col_w, top, plot_h = 70, 90, 40, 200
    width = left + col_w * max(len(points), 1) + 30
    height = top + plot_h + 50
    title = f"Reference index, {series['grade']} ({series['term']}), $/GPU-hour"
    desc = "; ".join(
        f"{p['period']}: median {p['median']:.2f} (n={p['count']}, {p['min']:.2f}-{p['max']:.2f})"
        f"{', thin' if p['thin'] else ''}" for p in points
    )
    out = svg_open(width, height, title, desc or "No observations.", ident)
    out.append(f'<text x="8" y="20" fill="{INK}" font-weight="bold">{escape(title)}</text>')
    if not points:
        out.append("</svg>")
        return "\n".join(out) + "\n"
    lo = min(float(p["min"]) for p in points)
    hi = max(float(p["max"]) for p in points)
    pad = (hi - lo) * 0.1 or max(hi * 0.1, 0.01)
    lo, hi = max(0.0, lo - pad), hi + pad

    def y(value: float) -> float:
        return top + plot_h - (value - lo) / (hi - lo) * plot_h

    for i in range(5):
        tick = lo + (hi - lo) * i / 4
        out.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{width - 20}" y2="{y(tick):.1f}" stroke="{GRID}"/>')
        out.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" fill="{INK}">{tick:.2f}</text>')
    xs = [left + col_w * i + col_w / 2 for i in range(len(points))]
    band = [f"{x:.1f},{y(float(p['max'])):.1f}" for x, p in zip(xs, points, strict=True)]
    band += [f"{x:.1f},{y(float(p['min'])):.1f}" for x, p in reversed(list(zip(xs, points, strict=True)))]
    out.append(f'<polygon points="{" ".join(band)}" fill="{BAND}" stroke="none"/>')
    if len(points) > 1:
        line = " ".join(f"{x:.1f},{y(float(p['median'])):.1f}" for x, p in zip(xs, points, strict=True))
        out.append(f'<polyline points="{line}" fill="none" stroke="{BAR}" stroke-width="2"/>')
    for x, p in zip(xs, points, strict=True):
        fill = "#ffffff" if p["thin"] else BAR
        out.append(f'<circle cx="{x:.1f}" cy="{y(float(p["median"])):.1f}" r="5" fill="{fill}" stroke="{BAR}" '
                   f'stroke-width="2"/>')
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 18}" text-anchor="middle" fill="{INK}">'
                   f'{escape(str(p["period"]))}</text>')
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 34}" text-anchor="middle" fill="#6b7280">n={p["count"]}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
