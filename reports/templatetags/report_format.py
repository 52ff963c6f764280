"""Formatting filters for report templates: percentages, scores, movement arrows, tiers."""

from __future__ import annotations

from typing import Any

from django import template

from reports.context import TIER_LABELS
from reports.rendering import ARROWS, MOVEMENT_WORDS

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
