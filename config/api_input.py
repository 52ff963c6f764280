"""Bounded input for the API: the default JSON parser and the default pagination.

Python's parsers trust their input: ``json`` recurses once per nesting level (a body of
100,000 ``[`` is a RecursionError), turns a 400-digit number into an int that later
overflows the database, and reads a body of any size. ``BoundedJSONParser`` refuses such
bodies with a 400 naming the limit, before any view sees them:

* size: ``OPGRADE_API_MAX_BODY_BYTES`` (default 2 MiB);
* depth: at most ``MAX_JSON_DEPTH`` nested arrays/objects (no API input needs more than 5);
* numbers: at most ``MAX_NUMBER_CHARS`` characters, and finite;
* text: no NUL and no bidi override (``config.text``), in any string, keys included.

The form and multipart parsers apply the text rule as well.

``BoundedLimitOffsetPagination`` clamps ``?limit=`` to ``MAX_PAGE_SIZE`` and refuses an
``offset`` beyond what the database can represent (``2**63`` used to be a 500 on every list).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request

from config.text import find_unsafe_text

MAX_JSON_DEPTH = 32
MAX_NUMBER_CHARS = 40
# The largest offset PostgreSQL and SQLite accept (a signed 64-bit integer).
MAX_OFFSET = 2**63 - 1

_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def json_depth(text: str, limit: int) -> int:
    """The nesting depth of a JSON text, stopping as soon as it exceeds ``limit`` (no recursion)."""
    depth = deepest = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        piece = match.group()
        if piece in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
            if depth > limit:
                return depth
        elif piece in ("]", "}"):
            depth -= 1
    return deepest


def _bounded_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number longer than {MAX_NUMBER_CHARS} characters")
    return int(text)


def _bounded_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number longer than {MAX_NUMBER_CHARS} characters")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"a number out of range ({text[:20]})")
    return value


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not valid JSON")


def bounded_json_loads(text: str, *, what: str = "JSON") -> Any:
    """``json.loads`` with the depth and number limits; ValueError says which limit."""
    if json_depth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise ValueError(f"{what} nested deeper than {MAX_JSON_DEPTH} levels")
    return json.loads(text, parse_int=_bounded_int, parse_float=_bounded_float, parse_constant=_no_constant)


def max_body_bytes() -> int:
    return int(getattr(settings, "OPGRADE_API_MAX_BODY_BYTES", 2 * 1024 * 1024))


class BoundedJSONParser(JSONParser):
    """JSONParser with size, depth and number-length limits (the project's default parser)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        limit = max_body_bytes()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ParseError(f"JSON parse error - the body is larger than {limit} bytes")
        if not raw:
            raise ParseError("JSON parse error - the body is empty")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = bounded_json_loads(raw.decode(encoding))
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        _refuse_unsafe(data)
        return data


def _refuse_unsafe(data: Any) -> None:
    problem = find_unsafe_text(data)
    if problem:
        raise ParseError(problem)


class CleanFormParser(FormParser):
    """FormParser that refuses NUL and bidi controls in any field."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        _refuse_unsafe({key: data.getlist(key) for key in data})
        return data


class CleanMultiPartParser(MultiPartParser):
    """MultiPartParser that refuses NUL and bidi controls in any non-file field (files are
    checked by their importers, which know their lines)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        result = super().parse(stream, media_type, parser_context)
        _refuse_unsafe({key: result.data.getlist(key) for key in result.data})
        return result


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """LimitOffsetPagination whose limit is clamped and whose offset must fit the database."""

    max_limit = 500

    def get_offset(self, request: Request) -> int:
        offset = super().get_offset(request)
        if offset > MAX_OFFSET:
            # Past any real table: an empty page, not an overflow in the SQL driver.
            return MAX_OFFSET
        return offset
