"""The exception handler's domain error classes all exist (a moved class must fail here, not as a 500)."""

from __future__ import annotations

from config.api_errors import _domain_classes


def test_every_domain_error_class_the_handler_names_resolves():
    forbidden, conflict, bad_input = _domain_classes()
    assert (len(forbidden), len(conflict), len(bad_input)) == (2, 4, 6)
    assert all(issubclass(cls, BaseException) for cls in (*forbidden, *conflict, *bad_input))
