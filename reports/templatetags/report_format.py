"""Formatting filters for report templates: percentages, scores, movement arrows, tiers."""

from __future__ import annotations

from typing import Any

from django import template

from reports.context import TIER_LABELS, TIERS
from reports.rendering import ARROWS, MOVEMENT_WORDS
from reports.rendering import override_note as _override_note

register = template.Library()


@register.filter
def pct(value: Any) -> str:
    return "n/a" if value is None else f"{float(value) * 100:.0f}%"


@register.filter
def score(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.2f}"


@register.filter
def measured(value: Any) -> str:
    """A raw measurement to four significant figures (12.75, 217.6, 0.8571)."""
    return "n/a" if value is None else f"{float(value):.4g}"


@register.filter
def share(value: Any) -> str:
    return "n/a" if value is None else f"{float(value) * 100:.1f}%"


@register.filter
def arrow(direction: str) -> str:
    return ARROWS.get(direction, "?")


@register.filter
def movement_words(direction: str) -> str:
    return MOVEMENT_WORDS.get(direction, direction)


@register.filter
def tier_label(key: Any) -> str:
    return TIER_LABELS.get(str(key), str(key)) if key else "n/a"


@register.filter
def get(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def binding_caps(provider: Any) -> list[dict[str, Any]]:
    """The failed gates whose cap can hold this provider: a cap at or below its tier. A provider
    already below a gate's cap (or not rated) is not held by it, so it gets no "gate cap" label;
    the failed gate still shows in its criteria."""
    order = [key for key, _label in TIERS]
    tier = provider.get("tier")
    if tier not in order:
        return []
    return [cap for cap in provider.get("gate_caps") or ()
            if cap.get("cap_tier") in order and order.index(tier) <= order.index(cap["cap_tier"])]


@register.filter
def override_note(provider: Any) -> str:
    """The tier rests on an override that lifted a critical gate cap: what, why, by whom ("" if not)."""
    return _override_note(provider)
