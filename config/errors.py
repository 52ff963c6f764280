"""The four kinds of refusal a domain error can be, and nothing else: every app's errors that
an API client may see subclass one of these, and ``config.api_errors`` answers by kind:

=============  ======  =====================================================================
``Forbidden``   403    the user's role may not do this (a refusal, not a missing row)
``Conflict``    409    well formed, but clashes with stored state (frozen, immutable, taken,
                       the wrong lifecycle state)
``BadInput``    400    the request's input or the state it asks for cannot be used as given
``NotFound``    404    the document the request names does not exist
=============  ======  =====================================================================

An error that is two kinds answers as the first of Forbidden, Conflict, BadInput, NotFound
(a role refusal that is also a reviews error is a 403; a report in the wrong state is a 409).

The bases are ABCs so that a pure core, which may import neither Django nor ``config``, can
declare its error a kind from its app's Django side: ``BadInput.register(ScoringInputError)``
in ``ratings.apps``. Everything else subclasses a base directly.
``tests/api/test_error_classes.py`` walks the apps' modules and checks that every exception
class they define is of a kind, or is listed there as one the API never sees.

This module imports nothing, so the lowest layer can name it and every layer can subclass it.
"""

from __future__ import annotations

from abc import ABCMeta
from collections.abc import Sequence
from typing import Any, ClassVar

__all__ = ["KINDS", "BadInput", "Conflict", "DomainError", "Forbidden", "MalformedFile", "NotFound"]


class DomainError(Exception, metaclass=ABCMeta):
    """A refusal the API answers with a 4xx; subclass one of the four kinds, not this."""


class Forbidden(DomainError):
    """403: the user may not do this."""


class Conflict(DomainError):
    """409: the request clashes with stored state."""


class BadInput(DomainError):
    """400: the input cannot be used as given."""


class NotFound(DomainError):
    """404: the named document does not exist."""


class MalformedFile(BadInput):
    """400 listing every problem of an uploaded file: ``problems`` holds objects with
    ``filename``, ``line``, ``field`` and ``message``; ``api_detail`` is the answer's sentence."""

    api_detail: ClassVar[str] = "the file is malformed; nothing was written"
    problems: Sequence[Any] = ()


KINDS: tuple[type[DomainError], ...] = (Forbidden, Conflict, BadInput, NotFound)  # in order of precedence
