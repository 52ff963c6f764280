"""Errors the report services raise; each message says what was refused and why."""

from __future__ import annotations

from config.errors import BadInput, Conflict, Forbidden
from config.immutability import ImmutableError


class ReportError(BadInput):
    """Base class: a report operation was refused and nothing was written."""


class ReportStateError(ReportError, Conflict):
    """The report is in the wrong lifecycle state for the operation."""


class ReportPermissionError(ReportError, Forbidden):
    """The user may not do this (only publishers publish, correct and withdraw)."""


class ReportInputError(ReportError):
    """The input (document, notice, replacement) is invalid."""


class ReportImmutableError(ReportError, ImmutableError):
    """Code tried to change or delete a published-family report."""
