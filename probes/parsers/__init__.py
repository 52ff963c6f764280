"""Pure parsers for the probe catalog: tool output in, frozen dataclasses out.

Every probe in ``probes/catalog/`` runs commands through the transport and hands the raw text
(or JSON) to a function here. Nothing in this package imports Django, opens a socket, reads
a file or reads the clock, so each function is unit-tested on outputs captured from the real
tools (``tests/probes/captured/``) and can be re-run on stored evidence to re-score a finding.

Parsers raise :class:`ParseError` on output they do not understand: a probe turns that into
``error`` (our harness could not read the answer), never into ``pass`` or ``fail``.
"""

from __future__ import annotations


class ParseError(ValueError):
    """The text is not the output this parser expects (wrong tool, wrong format, truncated)."""


__all__ = ["ParseError"]
