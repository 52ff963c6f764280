"""What every report chart shares: the SVG header with its accessible title and description, the
font and the colours of bars, grid lines and ink.

``reports.charts`` (tier history, area breakdown), ``reports.costs_section`` (the cost curve) and
``reports.grades_section`` (the grade index) draw with these, so every chart opens the same way:
role="img", a <title> and <desc> a screen reader reads, every label XML-escaped, no external font.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

SVG_NS = "http://www.w3.org/2000/svg"
FONT = "DejaVu Sans, Verdana, sans-serif"
BAR = "#2563eb"
GRID = "#d1d5db"
INK = "#111827"


def svg_open(width: int, height: int, title: str, desc: str, ident: str) -> list[str]:
    """The opening lines of a chart: the <svg> element labelled by its title and description
    (``ident`` keeps their ids apart when a page holds several charts) and a white background."""
    ident = escape(ident, {'"': "&quot;"})
    return [
        f'<svg xmlns="{SVG_NS}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-labelledby="{ident}-title {ident}-desc" font-family="{FONT}" font-size="12">',
        f'<title id="{ident}-title">{escape(title)}</title>',
        f'<desc id="{ident}-desc">{escape(desc)}</desc>',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
