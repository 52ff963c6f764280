"""No silent skips (issue 24): a test that cannot run on this machine fails, naming what is missing.

A skip hides a broken install: the testbed, the browser or sshd missing would leave the suite
green with whole areas untested. So every skip (``pytest.skip``, ``skipif``, ``importorskip``, a
fixture that skips) is reported as a failure with its reason, unless the reason starts with
``not applicable:``, for a test that has nothing to check on this machine at all (say, no /boot to
mount simulated kernels over). Those stay skips and ``-ra`` prints their reasons in the summary.
xfail is untouched. To leave a kind of test out on purpose, deselect it by marker
(``-m "not testbed"``, ``-m "not browser"``): deselected tests are not counted as skipped.

tests/conftest.py imports the hook; tests/foundation/test_no_silent_skips.py runs it as a plugin.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

NOT_APPLICABLE = "not applicable:"


def skip_reason(longrepr: Any) -> str:
    """The reason of a skip report (pytest keeps ``(path, line, "Skipped: reason")``)."""
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = skip_reason(report.longrepr)
    if reason.startswith(NOT_APPLICABLE):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"would have been skipped: {reason}\n"
        f"No silent skips (tests/no_silent_skips.py): install what is missing (`make test` installs "
        f"everything, as root), or deselect the test on purpose (e.g. -m 'not testbed')."
    )
