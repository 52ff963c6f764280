"""Stored text carries no NUL and no bidirectional-override characters.

A NUL cannot be stored by PostgreSQL at all (it used to surface as a 500), and the Unicode
bidi controls (embeddings and overrides U+202A..U+202E, isolates U+2066..U+2069) let a note
or a reply display differently from what it says ("Trojan source").
The API refuses them in its parsers (``config.api_input``: every string of a JSON or form
body, keys included), the CSV and YAML importers per cell, and the portal forms with the
``refuse_unsafe_text`` validator. The left-to-right/right-to-left marks (U+200E, U+200F,
U+061C) are allowed: right-to-left text needs them and they override nothing.
"""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError

UNSAFE_TEXT = re.compile("[\x00\u202a-\u202e\u2066-\u2069]")


def unsafe_text_problem(value: str) -> str | None:
    """Why ``value`` may not be stored, or None when it may."""
    match = UNSAFE_TEXT.search(value)
    if match is None:
        return None
    char = match.group()
    what = "a NUL character" if char == "\x00" else f"a bidirectional control character (U+{ord(char):04X})"
    return f"contains {what} at position {match.start()}; remove it"


def refuse_unsafe_text(value: Any) -> None:
    """A Django/DRF validator: refuse NUL and bidi controls in a string."""
    if isinstance(value, str):
        problem = unsafe_text_problem(value)
        if problem:
            raise ValidationError(problem, code="unsafe_text")


def find_unsafe_text(value: Any, path: str = "") -> str | None:
    """The first problem in a parsed body (strings inside lists and dicts, keys included)."""
    if isinstance(value, str):
        problem = unsafe_text_problem(value)
        return f"{path or 'value'} {problem}" if problem else None
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list | tuple):
        items = list(enumerate(value))
    else:
        return None
    for key, item in items:
        where = f"{path}.{key}" if path else str(key)
        found = find_unsafe_text(key, where) if isinstance(key, str) else None
        found = found or find_unsafe_text(item, where)
        if found:
            return found
    return None
