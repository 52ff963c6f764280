"""Grade eligibility from evidence: every requirement met, missed or unknown; unknown never met."""

from __future__ import annotations

import math

from grades.eligibility import (
    ClusterEvidence,
    Contract,
    CostEvidence,
    CriterionEvidence,
    Grade,
    Hardware,
    MetricEvidence,
    Requirement,
    Scope,
    Verdict,
    evaluate,
)

GRADE = Grade(
    name="g", version="1", title="G", rubric="opgrade@2026.2",
    hardware=Hardware(gpu_model="H100-SXM-80GB", gpus_per_node=8), scope=Scope(orchestrator="slurm"),
    contract=Contract(term="12-month", support="24x7"),
    requirements=(
        Requirement("tier", "Silver or better", "tier", "tier", "", "silver"),
        Requirement("iso", "Log isolation", "gate", "gate", "tenant_log_isolation", True),
        Requirement("prov", "Ready p95", "provisioning_time", "probe", "node_ready_time:p95_seconds", 1200.0, "s"),
        Requirement("cost", "Cost", "cost_per_useful_mtok", "cost", "cost_per_useful_mtok", 2.0, "$/Mtok"),
    ),
)


def _evidence(**kw: object) -> ClusterEvidence:
    base: dict = {
        "cluster": "p/c", "provider": "p", "rubric": "opgrade@2026.2", "tier": "gold",
        "facts": {"gpu_model": "H100-SXM-80GB", "gpus_per_node": 8, "orchestrator": "slurm"},
        "criteria": {"tenant_log_isolation": CriterionEvidence(gate_passed=True, status="measured")},
        "metrics": {"node_ready_time:p95_seconds": MetricEvidence(value=900.0, n=3, unit="s")},
        "costs": {"cost_per_useful_mtok": CostEvidence(point=1.5, low=1.2, high=1.8)},
    }
    base.update(kw)
    return ClusterEvidence(**base)  # type: ignore[arg-type]


def _verdicts(result) -> dict[str, Verdict]:  # type: ignore[no-untyped-def]
    return {c.requirement.key: c.verdict for c in result.checks}


def test_a_cluster_meeting_every_requirement_qualifies() -> None:
    result = evaluate(GRADE, _evidence())
    assert result.qualifies and not result.near_miss
    assert set(_verdicts(result).values()) == {Verdict.MET}
    assert [c.requirement.key for c in result.checks][:3] == ["gpu_model", "gpus_per_node", "orchestrator"]


def test_a_miss_says_by_how_much() -> None:
    ev = _evidence(tier="bronze", metrics={"node_ready_time:p95_seconds": MetricEvidence(value=1500.0, n=3, unit="s")})
    result = evaluate(GRADE, ev)
    assert not result.qualifies and result.near_miss
    by_key = {c.requirement.key: c for c in result.shortfalls}
    assert set(by_key) == {"tier", "prov"}
    assert by_key["tier"].gap_text == "1 tier below Silver"
    assert by_key["prov"].gap == 300.0
    assert by_key["prov"].gap_text == "300 s over the 1200 s limit (+25%)"


def test_unknown_never_counts_as_met() -> None:
    ev = _evidence(tier=None, metrics={}, costs={}, criteria={})
    result = evaluate(GRADE, ev)
    verdicts = _verdicts(result)
    assert {verdicts[k] for k in ("tier", "iso", "prov", "cost")} == {Verdict.UNKNOWN}
    assert not result.qualifies
    assert not result.near_miss  # four shortfalls: more than NEAR_MISS_MAX


def test_a_failed_gate_is_missed_and_an_unmeasured_one_unknown() -> None:
    failed = evaluate(GRADE, _evidence(criteria={"tenant_log_isolation": CriterionEvidence(gate_passed=False,
                                                                                          status="measured")}))
    assert _verdicts(failed)["iso"] is Verdict.MISSED
    unmeasured = evaluate(GRADE, _evidence(criteria={"tenant_log_isolation": CriterionEvidence(status="missing")}))
    assert _verdicts(unmeasured)["iso"] is Verdict.UNKNOWN


def test_a_cost_interval_that_reaches_past_the_limit_is_not_met() -> None:
    straddles = evaluate(GRADE, _evidence(costs={"cost_per_useful_mtok": CostEvidence(point=1.9, low=1.5, high=2.4)}))
    assert _verdicts(straddles)["cost"] is Verdict.UNKNOWN
    unbounded = evaluate(GRADE, _evidence(costs={"cost_per_useful_mtok": CostEvidence(point=1.0, low=0.8,
                                                                                      high=math.inf)}))
    assert _verdicts(unbounded)["cost"] is Verdict.UNKNOWN
    over = evaluate(GRADE, _evidence(costs={"cost_per_useful_mtok": CostEvidence(point=2.5, low=2.2, high=2.9)}))
    assert _verdicts(over)["cost"] is Verdict.MISSED


def test_other_hardware_is_not_a_near_miss() -> None:
    ev = _evidence(facts={"gpu_model": "none", "orchestrator": "slurm"})
    result = evaluate(GRADE, ev)
    verdicts = _verdicts(result)
    assert verdicts["gpu_model"] is Verdict.MISSED and verdicts["gpus_per_node"] is Verdict.UNKNOWN
    assert not result.qualifies and not result.near_miss


def test_criteria_are_read_by_key_within_the_rubric_family_and_never_from_another() -> None:
    later = evaluate(GRADE, _evidence(rubric="opgrade@2026.3"))
    assert _verdicts(later)["iso"] is Verdict.MET
    assert "read from opgrade@2026.3" in next(c.evidence for c in later.checks if c.requirement.key == "iso")
    other = evaluate(GRADE, _evidence(rubric="otherrubric@1"))
    assert _verdicts(other)["iso"] is Verdict.UNKNOWN
    assert "otherrubric@1" in next(c.evidence for c in other.checks if c.requirement.key == "iso")


def test_a_timed_out_or_declined_probe_is_the_worst_value_not_a_gap() -> None:
    for outcome, words in (("timeout", "did not finish within the probe's deadline"),
                           ("declined", "declined by the provider")):
        ev = _evidence(metrics={"node_ready_time:p95_seconds": MetricEvidence(
            value=None, n=0, unit="s", note=f"no value ({outcome})", censored=outcome)})
        check = next(c for c in evaluate(GRADE, ev).checks if c.requirement.key == "prov")
        assert check.verdict is Verdict.MISSED and check.gap_text == words
