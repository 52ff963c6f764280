"""Renderings of a report document that are not HTML templates: CSV, plain text, diffs,
and the cache of rendered bytes keyed by the report's content hash (Django's cache framework).

A published document never changes, so anything rendered from it can be cached for the
life of the process; the key also holds the status and correction links, which are the
only things that can still change (a withdrawal or a correction adds a banner).
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.cache import caches

from reports.context import EVIDENCE_KINDS, TIER_LABELS, TIERS

ARROWS = {"up": "▲", "down": "▼", "same": "=", "new": "new", "withheld": "\u2013"}
MOVEMENT_WORDS = {
    "up": "up", "down": "down", "same": "unchanged", "new": "new this cycle", "withheld": "tier withheld",
}


# --- cache ----------------------------------------------------------------------------------
# Both live in Django's cache framework (settings.CACHES): "reports" holds rendered bytes,
# "report_meta" the short-lived memo of each report's cache key. Per process by default;
# either alias can point at a shared backend.
_MISSING = object()


def _key(parts: Hashable) -> str:
    return ":".join(map(str, parts)) if isinstance(parts, tuple) else str(parts)


class RenderCache:
    """Rendered bytes of a report, keyed by content hash, status and correction links."""

    alias = "reports"

    def get_or_render(self, key: Hashable, render: Callable[[], Any]) -> Any:
        store = caches[self.alias]
        value = store.get(_key(key), _MISSING)
        if value is _MISSING:
            value = render()  # a rare double render by two threads is harmless
            store.set(_key(key), value, timeout=None)  # the document behind the key never changes
        return value

    def clear(self) -> None:
        caches[self.alias].clear()


cache = RenderCache()


class MetaCache:
    """A memo of a report's cache key (hash, status, links) for ``ttl`` seconds.

    It spares the database on the hot path of public pages. Staleness is bounded: this
    process forgets every report the moment it saves one (``reports.signals``), and other
    worker processes within ``ttl`` seconds, far inside the Cache-Control max-age the
    same responses already allow shared caches. Negative answers (404) are cached too,
    so a flood of requests for a draft's number costs no queries either.
    """

    alias = "report_meta"

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl

    def get(self, pk: int, load: Callable[[], Any]) -> Any:
        store = caches[self.alias]
        value = store.get(str(pk), _MISSING)
        if value is _MISSING:
            value = load()
            store.set(str(pk), value, timeout=self.ttl)
        return value

    def clear(self) -> None:
        caches[self.alias].clear()


meta_cache = MetaCache(ttl=float(getattr(settings, "OPGRADE_REPORT_META_TTL", 2.0)))


# --- CSV ----------------------------------------------------------------------------------
def _cell(value: Any) -> Any:
    """Neutralise spreadsheet formulas in text cells (CSV injection)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value


def csv_bytes(rows: Iterable[Sequence[Any]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buffer.getvalue().encode("utf-8")


def override_note(provider: Mapping[str, Any]) -> str:
    """One line saying the tier rests on an override that lifted a critical gate cap ("" if none).

    Documents published before the key existed have none: they read as resting on nothing.
    """
    return " | ".join(
        f"{o['criterion']}: critical finding overridden as measurement was wrong"
        + (f" (shown by finding {o['evidence_finding']})" if o.get("evidence_finding") else "")
        + f"; approved by {' and '.join(o['approvers'])}. {o['justification']}"
        for o in provider.get("resting_on_override") or ()
    )


def providers_csv(document: Mapping[str, Any], *, content_hash: str) -> bytes:
    """One row per provider: tier, movement, composite, CI, coverage, P(tier) and area scores."""
    areas = [a["key"] for a in document["methodology"]["areas"]]
    header = [
        "cycle", "provider", "name", "tier", "movement", "previous_tier", "composite", "ci_low", "ci_high",
        "coverage", "borderline", "gate_caps", *[f"p_{key}" for key, _ in TIERS], *[f"area_{a}" for a in areas],
        "report_content_hash", "tier_rests_on_override",
    ]
    rows: list[list[Any]] = [header]
    for p in document["providers"]:
        scores = {a["key"]: a["score"] for a in p["areas"]}
        rows.append([
            document["cycle"]["slug"], p["slug"], p["name"], p["tier"], p["movement"]["direction"],
            p["movement"]["previous_tier"], p["composite"], p["ci"]["low"], p["ci"]["high"], p["coverage"],
            "yes" if p["borderline"] else "no", " ".join(g["criterion"] for g in p["gate_caps"]),
            *[p["tier_probabilities"].get(key) for key, _ in TIERS], *[scores.get(a) for a in areas],
            content_hash, override_note(p),
        ])
    return csv_bytes(rows)


def criteria_csv(document: Mapping[str, Any], *, content_hash: str) -> bytes:
    """One row per provider and criterion: value, normalised score, weight share, evidence counts."""
    header = ["cycle", "provider", "area", "criterion", "value", "unit", "normalised", "weight_share",
              *[f"evidence_{kind}" for kind in EVIDENCE_KINDS], "is_gate", "gate_passed", "report_content_hash"]
    rows: list[list[Any]] = [header]
    for p in document["providers"]:
        for c in p["criteria"]:
            rows.append([
                document["cycle"]["slug"], p["slug"], c["area"], c["key"], c["value"], c["unit"], c["normalised"],
                c["weight_share"], *[c["evidence"].get(kind, 0) for kind in EVIDENCE_KINDS],
                "yes" if c["is_gate"] else "no",
                "" if c["gate_passed"] is None else ("yes" if c["gate_passed"] else "no"), content_hash,
            ])
    return csv_bytes(rows)


# --- plain text for language models (llms.txt style) -----------------------------------------
def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def provider_text(document: Mapping[str, Any], provider: Mapping[str, Any], *, meta: Mapping[str, Any]) -> str:
    """A provider's page as Markdown-flavoured plain text, facts first, for language-model readers."""
    cycle, rubric = document["cycle"], document["rubric"]
    move = provider["movement"]
    lines = [
        f"# {provider['name']}: {provider['tier_label']} ({cycle['name']})",
        "",
        f"> Opgrade tier report for cycle {cycle['slug']} ({cycle['period_start']} to {cycle['period_end']}), "
        f"rubric {rubric['name']} {rubric['version']}. Report status: {meta['status']}. "
        f"Content hash (sha256): {meta['content_hash']}.",
        "",
    ]
    if meta.get("status") == "withdrawn":
        lines += [f"WITHDRAWN: {meta.get('withdrawal_notice', '')}", ""]
    if meta.get("status") == "superseded":
        lines += [f"SUPERSEDED: a correction replaced this report ({meta.get('superseded_by_url', '')}).", ""]
    lines += [
        "## Tier",
        f"- Tier: {provider['tier_label']}",
        f"- Movement since {move['previous_cycle'] or 'the last published cycle'}: "
        f"{MOVEMENT_WORDS[move['direction']]}"
        + (f" (was {TIER_LABELS.get(move['previous_tier'], move['previous_tier'])})" if move["previous_tier"] else ""),
        f"- Composite score: {_num(provider['composite'])}"
        + (f" (90% interval {_num(provider['ci']['low'])} to {_num(provider['ci']['high'])})"
           if provider["ci"]["low"] is not None else ""),
        f"- Coverage of the rubric's weight: {_pct(provider['coverage'])}",
        f"- Borderline: {'yes' if provider['borderline'] else 'no'}"
        + (f", outlook {provider['outlook']}" if provider.get("outlook") else ""),
        "- Tier probabilities: " + ", ".join(
            f"{label} {_pct(provider['tier_probabilities'].get(key))}" for key, label in TIERS
        ),
    ]
    if provider.get("resting_on_override"):
        lines.append(f"- Tier rests on an override: {override_note(provider)}")
    if provider["gate_caps"]:
        lines.append("- Capped by failed gates: " + ", ".join(
            f"{g['criterion']} (cap {TIER_LABELS.get(g['cap_tier'] or '', g['cap_tier'])})" for g in provider["gate_caps"]
        ))
    lines += ["", "## Area scores (0 to 1)"]
    lines += [f"- {a['title']}: {_num(a['score']) if a['score'] is not None else 'unmeasured'}" for a in provider["areas"]]
    lines += ["", "## What would move this provider up (largest weighted headroom)"]
    lines += [
        f"- {h['title']} ({h['criterion']}): headroom {h['headroom']:.3f} = weight share {h['weight_share']:.3f}"
        f" x (1 - score {_num(h['normalised']) if h['measured'] else 'unmeasured'})"
        for h in provider["headroom"]
    ] or ["- Nothing: every criterion is at its best anchor."]
    ev = provider["evidence_summary"]
    lines += [
        "", "## Evidence",
        f"- Criteria measured: {ev['criteria_measured']} of {ev['criteria_total']}",
        f"- Probe findings: {ev['probe']}; documentation reviews: {ev['doc_review']}; "
        f"customer feedback responses: {ev['customer_feedback']}",
        "", "## Criteria",
    ]
    for c in provider["criteria"]:
        value = "unmeasured" if c["value"] is None else f"{c['value']:.4g}{(' ' + c['unit']) if c['unit'] else ''}"
        lines.append(f"- {c['title']} ({c['key']}, area {c['area']}): {value}; score {_num(c['normalised'])}; "
                     f"weight share {c['weight_share']:.3f}" + ("; gate" if c["is_gate"] else ""))
    overrides = [o for o in document["overrides"] if o["provider"] == provider["slug"]]
    if overrides:
        lines += ["", "## Overrides"]
        lines += [f"- {o['criterion']}: {o['from']} -> {o['to']}. {o['justification']}" for o in overrides]
    return "\n".join(lines) + "\n"


def llms_index(entries: Sequence[Mapping[str, Any]], *, site: str) -> str:
    """/llms.txt: what Opgrade is and where the plain-text pages of the public reports are."""
    lines = [
        "# Opgrade",
        "",
        "> Hands-on, peer-relative tier ratings of GPU cloud operators (Platinum, Gold, Silver, Bronze, "
        "Underperforming), from probes run on real clusters, documentation review and customer feedback. "
        "Every published report is an immutable snapshot identified by its sha256 content hash.",
        "",
    ]
    if not entries:
        lines.append("No report has been published yet.")
    for entry in entries:
        lines += [
            f"## {entry['cycle_name']} ({entry['status']}, content hash {entry['content_hash']})",
            "",
            f"- [Report as JSON]({site}{entry['json_url']}): the full frozen document",
            f"- [Methodology]({site}{entry['methodology_url']}): rubric {entry['rubric']}",
        ]
        lines += [f"- [{p['name']}]({site}{p['url']}): {p['tier_label']}" for p in entry["providers"]]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# --- methodology diff -------------------------------------------------------------------------
def methodology_diff(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, list[str]]:
    """What changed between two published methodology sections: areas, criteria, weights, parameters."""
    result: dict[str, list[str]] = {"added": [], "removed": [], "changed": []}
    if old is None:
        return result

    def index(section: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        areas = {a["key"]: a for a in section["areas"]}
        criteria = {c["key"]: {**c, "area": a["key"]} for a in section["areas"] for c in a["criteria"]}
        return areas, criteria

    old_areas, old_criteria = index(old)
    new_areas, new_criteria = index(new)
    for kind, before, after in (("area", old_areas, new_areas), ("criterion", old_criteria, new_criteria)):
        result["added"] += [f"{kind} {key}: {after[key]['title']}" for key in sorted(after.keys() - before.keys())]
        result["removed"] += [f"{kind} {key}: {before[key]['title']}" for key in sorted(before.keys() - after.keys())]
        for key in sorted(before.keys() & after.keys()):
            for field in sorted(set(before[key]) | set(after[key])):
                if field in ("criteria", "weight_share"):
                    continue
                if before[key].get(field) != after[key].get(field):
                    result["changed"].append(
                        f"{kind} {key}.{field}: {before[key].get(field)!r} -> {after[key].get(field)!r}"
                    )
    old_params, new_params = old.get("parameters", {}), new.get("parameters", {})
    for name in sorted(set(old_params) | set(new_params)):
        if old_params.get(name) != new_params.get(name):
            result["changed"].append(f"parameter {name}: {old_params.get(name)!r} -> {new_params.get(name)!r}")
    if old.get("text") != new.get("text"):
        result["changed"].append("methodology text revised")
    return result


# --- PDF --------------------------------------------------------------------------------------
def _refuse_fetch(url: str, *args: Any, **kwargs: Any) -> Any:
    raise ValueError(f"report PDFs fetch nothing ({url}); styles and charts are inlined")


def html_to_pdf(html: str) -> bytes:
    """WeasyPrint over self-contained HTML (inline CSS and SVG); every URL fetch is refused."""
    # WeasyPrint logs every layout step at INFO and screen-only CSS (media queries) as
    # warnings; neither helps an operator reading the server log.
    for name in ("weasyprint", "weasyprint.progress"):
        logging.getLogger(name).setLevel(logging.ERROR)
    from weasyprint import HTML  # imported late: it loads Pango and friends

    return HTML(string=html, base_url="about:blank", url_fetcher=_refuse_fetch).write_pdf()
