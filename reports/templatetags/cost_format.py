"""Filters for the cost section (issue 16): the cost curve inline (PDF) and money figures."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from reports.costs_section import cost_curve_svg

register = template.Library()


@register.filter
def cost_curve_inline(costs: Any) -> SafeString:
    """The cost curve as inline SVG (built by reports.costs_section, every label escaped there)."""
    return mark_safe(cost_curve_svg((costs or {}).get("clusters", []), ident="cost-curve-print"))  # noqa: S308


@register.filter
def money(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.4g}"


@register.filter
def get_standing(standings: Any, slug: str) -> list[Any]:
    """A provider's standings across cycles (oldest first); empty when it has none."""
    return list((standings or {}).get(slug, []))
