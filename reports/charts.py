"""Server-side SVG charts for reports: tier history across cycles and an area breakdown.

Pure functions from document fragments to SVG text: no models, no clock, no JavaScript,
no external fonts. Every chart carries a <title> and <desc> (role="img") so screen readers
get the same facts as the picture, and every label is XML-escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

from reports.context import NOT_RATED, TIER_LABELS, TIERS
from reports.svg import BAR, GRID, INK, svg_open

TIER_COLOURS = {
    "platinum": "#4b5563", "gold": "#b7791f", "silver": "#6b7280", "bronze": "#9c4221",
    "underperforming": "#b91c1c", NOT_RATED: "#9ca3af",
}


def area_breakdown_svg(provider_name: str, areas: Sequence[Mapping[str, Any]], *, ident: str = "areas") -> str:
    """Horizontal bars, one per area, score 0..1. An unmeasured area gets no bar, only the word
    "unmeasured" in grey italics where its bar would start, so it never reads as a score of 0."""
    label_w, bar_w, row_h, top = 190, 320, 28, 34
    width, height = label_w + bar_w + 70, top + row_h * max(len(areas), 1) + 28
    desc = "; ".join(
        f"{a['title']}: {'unmeasured' if a.get('score') is None else f'{a['score']:.2f}'}" for a in areas
    )
    out = svg_open(width, height, f"Area scores for {provider_name}", desc or "No areas.", ident)
    out.append(f'<text x="8" y="20" fill="{INK}" font-weight="bold">Area scores (0 to 1)</text>')
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + tick * bar_w
        out.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{height - 22}" stroke="{GRID}"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle" fill="{INK}">{tick:g}</text>')
    for index, area in enumerate(areas):
        y = top + index * row_h
        out.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end" fill="{INK}">{escape(str(area["title"]))}</text>')
        score = area.get("score")
        if score is None:
            out.append(f'<text x="{label_w + 6}" y="{y + 15}" fill="#6b7280" font-style="italic">unmeasured</text>')
            continue
        w = max(0.0, min(1.0, float(score))) * bar_w
        out.append(f'<rect x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row_h - 10}" fill="{BAR}" rx="2"/>')
        out.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 15}" fill="{INK}">{float(score):.2f}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def tier_history_svg(provider_name: str, history: Sequence[Mapping[str, Any]], *, ident: str = "history") -> str:
    """One point per published cycle on a tier ladder (best at the top), joined by a line."""
    levels = [key for key, _label in TIERS] + [NOT_RATED]
    label_w, col_w, row_h, top = 130, 110, 26, 34
    width = label_w + col_w * max(len(history), 1) + 30
    height = top + row_h * len(levels) + 34
    desc = "; ".join(f"{h.get('cycle_name') or h['cycle']}: {TIER_LABELS.get(h['tier'], h['tier'])}" for h in history)
    out = svg_open(width, height, f"Tier history for {provider_name}", desc or "No published cycles.", ident)
    out.append(f'<text x="8" y="20" fill="{INK}" font-weight="bold">Tier by published cycle</text>')
    for row, level in enumerate(levels):
        y = top + row * row_h + row_h / 2
        out.append(f'<line x1="{label_w}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" stroke="{GRID}"/>')
        out.append(f'<text x="{label_w - 8}" y="{y + 4:.1f}" text-anchor="end" fill="{INK}">{escape(TIER_LABELS[level])}</text>')
    points = []
    for col, point in enumerate(history):
        x = label_w + col_w * col + col_w / 2
        level = point["tier"] if point["tier"] in levels else NOT_RATED
        y = top + levels.index(level) * row_h + row_h / 2
        points.append((x, y, level))
        label = escape(str(point.get("cycle_name") or point["cycle"]))
        out.append(f'<text x="{x:.1f}" y="{height - 10}" text-anchor="middle" fill="{INK}">{label}</text>')
    if len(points) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{INK}" stroke-width="2"/>')
    for x, y, level in points:
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="7" fill="{TIER_COLOURS[level]}" stroke="{INK}"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def reliability_svg(bins: Sequence[Mapping[str, Any]], *, ident: str = "reliability") -> str:
    """Reliability diagram: per bin of stated P(tier), the observed share right against the truth.

    The diagonal is perfect calibration; each bin is a dot at (mean stated, observed) with its
    provider count beside it, and a bin with fewer than 100 providers is drawn hollow.
    """
    size, left, top, bottom = 300, 56, 34, 46
    width, height = left + size + 30, top + size + bottom
    desc = "; ".join(
        f"stated {b['stated']:.3f}, observed {b['observed_truth']:.3f} ({b['providers']} providers)" for b in bins
    )
    out = svg_open(width, height, "Reliability of the stated P(tier)", desc or "No calibration figures.", ident)
    out.append(f'<text x="8" y="20" fill="{INK}" font-weight="bold">Stated P(tier) against how often it was right</text>')

    def x_of(v: float) -> float:
        return left + v * size

    def y_of(v: float) -> float:
        return top + (1 - v) * size

    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line x1="{x_of(tick):.1f}" y1="{top}" x2="{x_of(tick):.1f}" y2="{top + size}" stroke="{GRID}"/>')
        out.append(f'<line x1="{left}" y1="{y_of(tick):.1f}" x2="{left + size}" y2="{y_of(tick):.1f}" stroke="{GRID}"/>')
        out.append(f'<text x="{x_of(tick):.1f}" y="{top + size + 16}" text-anchor="middle" fill="{INK}">{tick:.2f}</text>')
        out.append(f'<text x="{left - 6}" y="{y_of(tick) + 4:.1f}" text-anchor="end" fill="{INK}">{tick:.2f}</text>')
    out.append(f'<line x1="{x_of(0):.1f}" y1="{y_of(0):.1f}" x2="{x_of(1):.1f}" y2="{y_of(1):.1f}" '
               f'stroke="{INK}" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{left + size / 2:.1f}" y="{height - 8}" text-anchor="middle" fill="{INK}">stated P(tier)</text>')
    out.append(f'<text x="14" y="{top + size / 2:.1f}" text-anchor="middle" fill="{INK}" '
               f'transform="rotate(-90 14 {top + size / 2:.1f})">observed share right</text>')
    points = [(x_of(float(b["stated"])), y_of(float(b["observed_truth"])), int(b["providers"])) for b in bins]
    if len(points) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{BAR}" stroke-width="2"/>')
    for x, y, count in points:
        fill = BAR if count >= 100 else "#ffffff"
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{fill}" stroke="{BAR}" stroke-width="2"/>')
        out.append(f'<text x="{x + 8:.1f}" y="{y + 14:.1f}" fill="{INK}" font-size="10">{count}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
