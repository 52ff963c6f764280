"""The red-team harness runs a probe once more when it measured nothing (outcome ``error``):
an error is neither a catch nor a miss (a positive control that timed out under load), but a
second error stays a miss. No testbed: the harness's pieces are replaced by recording fakes."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import pytest

from probes import red_team
from probes.matrix import ProbeResult


@dataclass(frozen=True)
class _Finding:
    outcome: str
    critical: bool = False
    evidence: dict | None = None
    summary: str = ""


@dataclass(frozen=True)
class _Mutation:
    name: str
    probe: str
    expect: str = "fail"
    critical: bool = True
    marker: object = None
    group: str = ""


def _run(monkeypatch, outcomes: list[str]) -> red_team.RedTeamReport:
    from testbed import redteam

    mutation = _Mutation("acl", "home_isolation")
    runs = iter(outcomes)
    calls: list[list[str]] = []

    def fake_catalog_run(ctx, probes):
        calls.append(list(probes))
        if probes == list(red_team.CLEAN_PROBES):
            return {p: ProbeResult(p, [_Finding("pass", evidence={})]) for p in probes}
        outcome = next(runs)
        return {probes[0]: ProbeResult(probes[0], [_Finding(outcome, critical=outcome == "fail", evidence={})])}

    monkeypatch.setattr(redteam, "MUTATIONS", (mutation,))
    monkeypatch.setattr(redteam, "applied", lambda name, members: contextlib.nullcontext(object()))
    monkeypatch.setattr(red_team, "catalog_run", fake_catalog_run)
    monkeypatch.setattr(red_team, "testbed_context", lambda name, settings=None: None)
    report = red_team.red_team_run("x")
    assert len(calls) == 1 + min(len(outcomes), red_team.ERROR_TRIES)
    return report


def test_an_error_is_run_again_and_a_catch_on_the_second_try_counts(monkeypatch):
    (catch,) = _run(monkeypatch, ["error", "fail"]).catches
    assert catch.caught and catch.tries == 2 and catch.outcome == "fail"


def test_two_errors_stay_a_miss(monkeypatch):
    report = _run(monkeypatch, ["error", "error"])
    (catch,) = report.catches
    assert not catch.caught and catch.tries == 2 and report.catch_rate == 0.0
    assert "(2 tries)" in "\n".join(report.lines())


@pytest.mark.parametrize("outcome", ["fail", "pass"])
def test_a_measured_outcome_is_never_run_again(monkeypatch, outcome):
    (catch,) = _run(monkeypatch, [outcome]).catches
    assert catch.tries == 1 and catch.caught == (outcome == "fail")
