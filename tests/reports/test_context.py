"""The pure document builder: deterministic, hashed canonically, movement and headroom right."""

from __future__ import annotations

import dataclasses
import json

import pytest

from reports import context as ctx
from tests.reports.conftest import RUBRIC, provider_result


def _input(**changes):
    base = ctx.ReportInput(
        cycle_slug="c", cycle_name="C", period_start="2026-10-01", period_end="2026-12-31", rubric=RUBRIC,
        engine_version="e1", seed=1, inputs_hash="a" * 64, snapshot_hash="b" * 64,
        providers=(provider_result("alpha", "platinum", score=0.85), provider_result("beta", "gold")),
    )
    return dataclasses.replace(base, **changes)


def test_the_same_inputs_give_the_same_document_and_hash():
    one, two = ctx.build_report_document(_input()), ctx.build_report_document(_input())
    assert one == two and ctx.content_hash(one) == ctx.content_hash(two)
    assert ctx.content_hash(ctx.build_report_document(_input(seed=2))) != ctx.content_hash(one)


def test_the_hash_is_sha256_of_sorted_compact_utf8_json():
    import hashlib

    doc = {"b": "Zürich", "a": [1, 2.5]}
    assert ctx.canonical_json(doc) == '{"a":[1,2.5],"b":"Zürich"}'
    assert ctx.content_hash(doc) == hashlib.sha256('{"a":[1,2.5],"b":"Zürich"}'.encode()).hexdigest()
    with pytest.raises(ValueError):
        ctx.canonical_json({"x": float("nan")})


@pytest.mark.parametrize(
    ("current", "previous", "seen", "expected"),
    [
        ("gold", "silver", True, "up"), ("silver", "gold", True, "down"), ("gold", "gold", True, "same"),
        ("gold", None, False, "new"), ("gold", "not_rated", True, "new"), ("not_rated", "gold", True, "withheld"),
        ("not_rated", "not_rated", True, "same"), ("not_rated", None, False, "new"),
    ],
)
def test_movement_against_the_last_published_cycle(current, previous, seen, expected):
    assert ctx.movement(current, previous, seen_before=seen) == expected


def test_headroom_is_weight_share_times_the_missing_score_largest_first():
    doc = ctx.build_report_document(_input())
    beta = next(p for p in doc["providers"] if p["slug"] == "beta")
    # Shares: reliability 2/3 split 3:1 -> nccl 0.5, node-health 1/6; security 1/3 -> isolation 1/3.
    assert [h["criterion"] for h in beta["headroom"]] == ["isolation", "nccl-bw", "node-health"]
    assert beta["headroom"][0]["headroom"] == pytest.approx(1 / 3, abs=1e-6)
    assert beta["headroom"][1]["headroom"] == pytest.approx(0.5 * (1 - 0.833333), abs=1e-6)


def test_providers_are_ordered_by_tier_then_composite():
    doc = ctx.build_report_document(_input(providers=(
        provider_result("zeta", None), provider_result("beta", "gold", score=0.6),
        provider_result("alpha", "gold", score=0.7), provider_result("omega", "platinum", score=0.9),
    )))
    assert [p["slug"] for p in doc["providers"]] == ["omega", "alpha", "beta", "zeta"]
    assert doc["providers"][-1]["tier"] == "not_rated"


def test_the_document_holds_no_reviewer_or_customer_identities_only_publisher_names():
    override = ctx.OverrideEntry(provider_slug="beta", criterion_key="isolation", from_value=0.0, to_value=0.5,
                                 justification="Vendor fix verified.", proposer="pat", approver="sam")
    doc = ctx.build_report_document(_input(overrides=(override,)))
    assert doc["overrides"] == [{"provider": "beta", "criterion": "isolation", "from": 0.0, "to": 0.5,
                                 "justification": "Vendor fix verified.", "proposer": "pat", "approver": "sam",
                                 "reason": "judgement", "second_approver": "", "evidence_finding": None}]
    assert [p["resting_on_override"] for p in doc["providers"]] == [[], []]  # no critical cap lifted
    text = json.dumps(doc)
    assert "reviewer" not in text and "respondent" not in text


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"providers": ()}, "at least one provider"),
        ({"providers": (provider_result("a", "gold"), provider_result("a", "gold"))}, "duplicate"),
        ({"providers": (dataclasses.replace(provider_result("a", "gold"), tier="diamond"),)}, "unknown tier"),
        ({"providers": (dataclasses.replace(provider_result("a", "gold"), composite=float("inf")),)}, "non-finite"),
        ({"overrides": (ctx.OverrideEntry("nobody", "isolation", 0, 1, "j", "p", "a"),)}, "unknown provider"),
    ],
)
def test_inconsistent_inputs_are_refused_with_a_reason(changes, message):
    with pytest.raises(ctx.DocumentError, match=message):
        ctx.build_report_document(_input(**changes))
