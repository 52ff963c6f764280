"""Filters for the grades section's templates (reports/templates/reports/_grades*.html)."""

from __future__ import annotations

from typing import Any

from django import template

from reports.grades_section import series_slug

register = template.Library()


@register.filter
def grade_series_slug(series: Any) -> str:
    return series_slug(series)
