"""A Not rated provider carries no composite anywhere it could be read as a score (issue 14)."""

from __future__ import annotations

from providers.models import Provider
from ratings.models import TierAssignment
from reports.snapshot import _provider


def assignment(tier: str) -> TierAssignment:
    return TierAssignment(
        provider=Provider(slug="x", name="X"), tier=tier, tier_point="" if tier == "not_rated" else tier,
        probabilities={}, ci_low=None, ci_high=None, composite=0.41, composite_pessimistic=0.3, coverage=0.35,
        borderline=False, outlook="stable", floor_capped=False, gate_caps=[], areas=[], criteria=[], flags=[],
    )


def test_a_not_rated_provider_shows_no_composite_and_no_pessimistic_score_in_a_report():
    result = _provider(assignment("not_rated"))
    assert (result.tier, result.composite, result.pessimistic, result.coverage) == (None, None, None, 0.35)


def test_a_rated_provider_keeps_both():
    result = _provider(assignment("gold"))
    assert (result.tier, result.composite, result.pessimistic) == ("gold", 0.41, 0.3)
