"""No silent skips (issue 24): a test that cannot run here fails naming what is missing; only a
``not applicable:`` skip stays a skip, and xfail is untouched. The testbed's own guard fails too."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from testbed import pytest_helpers, runtime
from testbed.errors import TestbedError

ROOT = Path(__file__).resolve().parents[2]

SAMPLE = """
import pytest

def test_skips_in_its_body():
    pytest.skip("chromium is missing")

@pytest.mark.skipif(True, reason="sshd is missing")
def test_skipped_by_a_marker():
    pass

@pytest.fixture
def needs_curl():
    pytest.skip("curl is missing")

def test_skipped_by_its_fixture(needs_curl):
    pass

def test_skipped_by_importorskip():
    pytest.importorskip("a_module_nobody_installed")

def test_not_applicable_here():
    pytest.skip("not applicable: this host has no /boot")

@pytest.mark.xfail(reason="a known defect", strict=False)
def test_a_known_defect():
    assert False

def test_passes():
    pass
"""


def test_every_skip_but_a_not_applicable_one_fails_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.no_silent_skips", "-p", "no:django",
         "-p", "no:cacheprovider", "-rA", "-q", "test_sample.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
    )  # fmt: skip
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    summary = out.strip().splitlines()[-1]
    assert "2 failed" in summary and "1 passed" in summary and "1 skipped" in summary, summary
    assert "1 xfailed" in summary and "2 errors" in summary, summary  # the fixture and the marker: setup
    for reason in (
        "chromium is missing",
        "sshd is missing",
        "curl is missing",
        "import 'a_module_nobody_installed'",
    ):
        assert re.search(rf"would have been skipped: .*{reason}", out), reason
    assert re.search(
        r"^SKIPPED \[1\] test_sample\.py:\d+: not applicable: this host has no /boot$", out, re.M
    ), out


def test_the_testbed_guard_fails_naming_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def preflight() -> None:
        raise TestbedError("slurmctld not found")

    monkeypatch.setattr(runtime, "preflight", preflight)
    monkeypatch.delenv("OPGRADE_TESTBED_REQUIRED", raising=False)  # the old opt-in is the default now
    with pytest.raises((pytest.fail.Exception, pytest.skip.Exception)) as raised:
        pytest_helpers.require_testbed()
    assert raised.type is pytest.fail.Exception  # not a skip
    assert re.search(r"slurmctld not found.*install-testbed\.sh", str(raised.value))
