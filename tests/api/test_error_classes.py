"""The exception handler's domain error classes all exist (a moved class must fail here, not as a 500)."""

from __future__ import annotations

from config.api_errors import _domain_classes


def test_every_domain_error_class_the_handler_names_resolves():
    forbidden, conflict, bad_input = _domain_classes()
    assert (len(forbidden), len(conflict), len(bad_input)) == (2, 5, 6)
    assert all(issubclass(cls, BaseException) for cls in (*forbidden, *conflict, *bad_input))


def test_a_report_in_the_wrong_lifecycle_state_is_a_conflict_not_bad_input():
    from config.api_errors import Conflict, api_exception
    from reports.errors import ReportInputError, ReportStateError

    assert isinstance(api_exception(ReportStateError("report #1 is draft; only a report in fact-check can be published")), Conflict)
    assert not isinstance(api_exception(ReportInputError("invalid report document")), Conflict)
