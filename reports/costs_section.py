"""The cost section of a report (issue 16), rendered: the cost curve SVG, its CSV and its own page.

The section itself is built by ``costs.document.cost_section`` when the draft is made (the one
hook in ``reports.services``) and frozen in the document beside the tiers; it never changes a
tier. Everything here is a pure function of the frozen document, except the two public views at
the bottom, which serve it like every other report page (cached by content hash, ETag, 404 for
drafts). A report made before costs existed has no such part: its cost table is header-only and
its page says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.views.decorators.http import require_safe

from reports.http import cached_response, report_meta
from reports.pages import page_context, report_for
from reports.rendering import csv_bytes
from reports.svg import BAR, GRID, INK, svg_open

WHISKER = "#111827"
UNKNOWN = "#9ca3af"


def section(document: Mapping[str, Any]) -> Mapping[str, Any]:
    return document.get("costs") or {}


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}g}"


# --- CSV --------------------------------------------------------------------------------------
def costs_csv(document: Mapping[str, Any], *, content_hash: str) -> bytes:
    """One row per cluster: the cost and its interval, and every input (P and parts, T, g, A)."""
    header = ["cycle", "provider", "cluster", "gpu_count", "cost_per_useful_mtok", "cost_low", "cost_high",
              "interval_level", "cost_owned_basis", "inferencex_cost_per_mtok", "price_per_gpu_hour",
              "price_components", "owned_price_per_gpu_hour", "throughput_tok_s_gpu", "throughput_replicates",
              "goodput", "availability", "availability_usable_samples", "availability_measured_samples",
              "downtime_s", "unknown_reason", "report_content_hash"]
    rows: list[list[Any]] = [header]
    for c in section(document).get("clusters", []):
        est, owned = c.get("cost_per_useful_mtok") or {}, c.get("cost_per_useful_mtok_owned") or {}
        price, a = c["price"], c["availability"]
        rows.append([
            document["cycle"]["slug"], c["provider"], c["cluster"], c["gpu_count"], est.get("point"), est.get("low"),
            est.get("high"), est.get("level"), owned.get("point"), c.get("inferencex_cost_per_mtok"),
            price["effective_per_gpu_hour"],
            "; ".join(f"{p['name']} {p['per_gpu_hour']} ({p['source']})" for p in price["components"]),
            price["owned_per_gpu_hour"], c["throughput"]["point"], len(c["throughput"]["replicates"]),
            c["goodput"]["point"], a["point"], a["usable_samples"], a["measured_samples"], a["downtime_s"],
            c["reason"], content_hash,
        ])
    return csv_bytes(rows)


CSV_TABLES = {"costs": costs_csv}


# --- the cost curve ---------------------------------------------------------------------------
def cost_curve_svg(clusters: Sequence[Mapping[str, Any]], *, ident: str = "cost-curve") -> str:
    """Clusters cheapest first; bar width = offered GPUs, height = cost per useful Mtok, whiskers = interval.

    Clusters whose cost is unknown are not drawn; they are named under the axis with the reason.
    A GPU count of 0 (not stated) is drawn one GPU wide and labelled so.
    """
    known = [c for c in clusters if c.get("cost_per_useful_mtok")]
    unknown = [c for c in clusters if not c.get("cost_per_useful_mtok")]
    left, plot_w, plot_h, top = 70, 560, 240, 40
    width = left + plot_w + 30
    height = top + plot_h + 60 + 16 * len(unknown)
    capacity = sum(max(int(c["gpu_count"] or 0), 1) for c in known) or 1
    ceiling = max([(c["cost_per_useful_mtok"]["high"] or c["cost_per_useful_mtok"]["point"]) for c in known] or [1.0])
    ceiling = ceiling * 1.1 or 1.0
    desc = "; ".join(
        f"{c['provider_name']} / {c['cluster']}: {_fmt(c['cost_per_useful_mtok']['point'])} $ per useful Mtok "
        f"(interval {_fmt(c['cost_per_useful_mtok']['low'])} to {_fmt(c['cost_per_useful_mtok']['high'])}), "
        f"{c['gpu_count']} GPUs" for c in known
    ) + "".join(f"; {c['provider_name']} / {c['cluster']}: unknown ({c['reason']})" for c in unknown)
    out = svg_open(width, height, "Cost per useful Mtok by provider (the cost curve)", desc or "No clusters.", ident)
    out.append(f'<text x="8" y="20" fill="{INK}" font-weight="bold">Cost per useful Mtok ($), bar width = GPUs offered</text>')
    base_y = top + plot_h
    for i in range(5):
        value = ceiling * i / 4
        y = base_y - plot_h * i / 4
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="{GRID}"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{INK}">{value:.3g}</text>')
    x = float(left)
    for c in known:
        est = c["cost_per_useful_mtok"]
        gpus = int(c["gpu_count"] or 0)
        w = plot_w * max(gpus, 1) / capacity
        h = plot_h * est["point"] / ceiling
        label = escape(f"{c['provider_name']}")
        out.append(f'<rect x="{x + 1:.1f}" y="{base_y - h:.1f}" width="{max(w - 2, 1):.1f}" height="{h:.1f}" '
                   f'fill="{BAR}" fill-opacity="0.75" data-provider="{escape(c["provider"])}"/>')
        mid = x + w / 2
        low_y = base_y - plot_h * est["low"] / ceiling
        high_y = top if est["high"] is None else base_y - plot_h * est["high"] / ceiling
        out.append(f'<line x1="{mid:.1f}" y1="{low_y:.1f}" x2="{mid:.1f}" y2="{high_y:.1f}" stroke="{WHISKER}" stroke-width="1.5"/>')
        for y in (low_y, high_y):
            out.append(f'<line x1="{mid - 5:.1f}" y1="{y:.1f}" x2="{mid + 5:.1f}" y2="{y:.1f}" stroke="{WHISKER}" stroke-width="1.5"/>')
        if est["high"] is None:
            out.append(f'<text x="{mid:.1f}" y="{top - 4}" text-anchor="middle" fill="{INK}">unbounded</text>')
        out.append(f'<text x="{mid:.1f}" y="{base_y + 16}" text-anchor="middle" fill="{INK}">{label}</text>')
        gpu_text = f"{gpus} GPUs" if gpus else "GPUs not stated"
        out.append(f'<text x="{mid:.1f}" y="{base_y + 30}" text-anchor="middle" fill="#6b7280">{gpu_text}</text>')
        x += w
    out.append(f'<line x1="{left}" y1="{base_y}" x2="{left + plot_w}" y2="{base_y}" stroke="{INK}"/>')
    y = base_y + 50
    for c in unknown:
        text = escape(f"{c['provider_name']} / {c['cluster']}: cost unknown ({c['reason']})")
        out.append(f'<text x="{left}" y="{y}" fill="{UNKNOWN}" font-style="italic">{text}</text>')
        y += 16
    out.append("</svg>")
    return "\n".join(out) + "\n"


def document_cost_curve(document: Mapping[str, Any]) -> str:
    return cost_curve_svg(section(document).get("clusters", []))


# --- public views -----------------------------------------------------------------------------
@require_safe
def costs_page(request: HttpRequest, pk: int) -> HttpResponse:
    """The cost curve on a page of its own, with every input and the standings across cycles."""
    meta = report_meta(pk)

    def render() -> bytes:
        report = report_for(meta)
        return render_to_string("reports/costs.html", {**page_context(report), "costs": section(report.content)}).encode()

    return cached_response(request, meta, "costs", render, "text/html; charset=utf-8")


@require_safe
def cost_curve(request: HttpRequest, pk: int) -> HttpResponse:
    meta = report_meta(pk)
    return cached_response(request, meta, "svg:cost-curve", lambda: document_cost_curve(report_for(meta).content).encode(),
                           "image/svg+xml")
