"""The pure engine keeps a critical finding's gate cap under any override but one (issue 24 item 10).

An outside test overrode a gate criterion failed by a critical isolation finding with a plain,
approved score override and saw Underperforming become Platinum. Only an override that says
the measurement was wrong, approved by two people and naming every critical finding, lifts it.
"""

from __future__ import annotations

import dataclasses

import pytest

from ratings.engine import score_cycle
from ratings.engine_types import (
    MEASUREMENT_WRONG,
    CriterionOverride,
    Outcome,
    ProbeObservation,
    ScoringInputError,
)
from tests.ratings.engine_builders import cycle, measured, obs, pass_rate, rubric

T = measured("t")
GATE = pass_rate("iso", "security", is_gate=True, gate_cap_tier="underperforming")


def _critical(provider: str, ref: str) -> ProbeObservation:
    return ProbeObservation("rv-1", provider, "iso", Outcome.FAIL, None, True, ref)


def _input(*overrides: CriterionOverride, extra: tuple[ProbeObservation, ...] = ()):
    rows = [obs("a", "t", 10.0), obs("a", "iso", None, Outcome.PASS), _critical("a", "finding 7"), *extra]
    return dataclasses.replace(cycle(rubric([T, GATE], bootstrap_size=50), ["a"], rows), overrides=overrides)


def _wrong(**kw) -> CriterionOverride:
    args = {"reason": MEASUREMENT_WRONG, "approvals": 2, "disputes": ("finding 7",)}
    args.update(kw)
    return CriterionOverride("rv-1", "a", "iso", 1.0, **args)


def test_a_critical_finding_caps_the_tier_at_underperforming():
    a = score_cycle(_input()).provider("a")
    assert a.tier == "underperforming"
    assert [(g.criterion, g.reason, g.finding) for g in a.gate_caps] == [("iso", "critical", "finding 7")]


def test_a_plain_approved_override_to_a_perfect_score_keeps_the_critical_cap():
    a = score_cycle(_input(CriterionOverride("rv-1", "a", "iso", 1.0))).provider("a")
    iso = next(c for c in a.criteria if c.key == "iso")
    assert iso.score == 1.0 and iso.gate_failed  # the value is replaced, the breach is not
    assert a.tier == "underperforming"
    assert [(g.criterion, g.reason) for g in a.gate_caps] == [("iso", "critical")]
    assert "override_kept_critical_cap:iso" in a.flags and "critical_overridden:iso" not in a.flags


@pytest.mark.parametrize("override", [
    _wrong(approvals=1),  # one approver only
    _wrong(reason="judgement"),  # any other reason, even with two approvers
    _wrong(disputes=()),  # names no critical finding
    _wrong(disputes=("finding 8",)),  # names another one
])
def test_an_override_short_of_the_rule_keeps_the_cap(override):
    a = score_cycle(_input(override)).provider("a")
    assert a.tier == "underperforming" and [g.reason for g in a.gate_caps] == ["critical"]


def test_measurement_was_wrong_with_two_approvers_lifts_the_cap_and_says_so():
    a = score_cycle(_input(_wrong())).provider("a")
    assert a.tier == "platinum" and a.gate_caps == ()
    assert "critical_overridden:iso" in a.flags and "override:iso" in a.flags


def test_a_critical_finding_the_override_does_not_name_caps_again():
    a = score_cycle(_input(_wrong(), extra=(_critical("a", "finding 9"),))).provider("a")
    assert a.tier == "underperforming" and [g.finding for g in a.gate_caps] == ["finding 7"]


def test_an_override_of_a_gate_without_a_critical_finding_still_replaces_failed_replicates():
    rows = [obs("a", "t", 10.0), obs("a", "iso", None, Outcome.FAIL)]
    inp = dataclasses.replace(cycle(rubric([T, GATE], bootstrap_size=50), ["a"], rows),
                              overrides=(CriterionOverride("rv-1", "a", "iso", 1.0),))
    a = score_cycle(inp).provider("a")
    assert a.tier == "platinum" and not any(f.startswith("critical") for f in a.flags)


def test_the_override_reason_and_approvals_are_part_of_the_inputs_hash():
    one, two = score_cycle(_input(_wrong(approvals=1))), score_cycle(_input(_wrong()))
    assert one.inputs_hash != two.inputs_hash
    reordered = score_cycle(_input(_wrong(disputes=("finding 7", "finding 1"))))
    assert reordered.inputs_hash == score_cycle(_input(_wrong(disputes=("finding 1", "finding 7")))).inputs_hash


def test_a_malformed_override_is_refused():
    with pytest.raises(ScoringInputError, match="disputes"):
        score_cycle(_input(_wrong(disputes=["finding 7"])))
