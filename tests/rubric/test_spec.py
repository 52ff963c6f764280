"""One vocabulary: every app's tiers, outcomes and evidence kinds are rubric.spec's.

The engine, the probe catalog, the YAML format, the models' choices and the report builder
import the words from rubric/spec.py; these tests fail when one of them grows its own list.
"""

from __future__ import annotations

import hashlib

from probes.catalog import base as catalog
from probes.models import Finding
from probes.models import Outcome as OutcomeChoices
from ratings import engine_types
from ratings.models import TierAssignment
from reports import context
from rubric import spec, yaml_format
from rubric.models import Criterion, EvidenceKind, Tier


def test_tiers_are_listed_once_best_first():
    assert spec.TIERS == ("platinum", "gold", "silver", "bronze", "underperforming")
    assert engine_types.TIERS is spec.TIERS and engine_types.NOT_RATED == spec.NOT_RATED
    assert yaml_format.TIERS is spec.TIERS and yaml_format.GATE_CAP_TIERS is spec.GATE_CAP_TIERS
    assert [key for key, _label in context.TIERS] == list(spec.TIERS)
    assert context.TIER_LABELS is spec.TIER_LABELS
    assert [value for value, _ in Tier.choices] == list(spec.TIERS)
    assert Criterion._meta.get_field("gate_cap_tier").choices == Tier.choices
    assert TierAssignment._meta.get_field("tier").choices == [
        *((t, spec.TIER_LABELS[t]) for t in spec.TIERS), (spec.NOT_RATED, "Not rated"),
    ]


def test_outcomes_are_one_enum_with_declined_among_them():
    assert catalog.Outcome is spec.Outcome and engine_types.Outcome is spec.Outcome
    assert spec.Outcome.DECLINED == "declined"
    assert [value for value, _ in OutcomeChoices.choices] == [o.value for o in spec.Outcome]
    assert Finding._meta.get_field("outcome").choices == OutcomeChoices.choices
    assert dict(OutcomeChoices.choices)["declined"] == "Declined by the provider"
    assert sorted(spec.OUTCOME_SEVERITY) == sorted(o.value for o in spec.Outcome)  # every outcome ranked


def test_evidence_kinds_areas_and_directions_are_shared():
    assert yaml_format.EVIDENCE_KINDS == context.EVIDENCE_KINDS == spec.EVIDENCE_KINDS
    assert [value for value, _ in EvidenceKind.choices] == list(spec.EVIDENCE_KINDS)
    assert catalog.Area is spec.Area and catalog.Direction is spec.Direction
    assert engine_types.RubricSpec is spec.RubricSpec


def test_the_fingerprint_is_the_sha256_of_the_canonical_text():
    text = "# canonical\nname: x\n"
    assert spec.rubric_fingerprint(text) == hashlib.sha256(text.encode()).hexdigest()
    assert spec.is_fingerprint(spec.rubric_fingerprint(text))
    assert not spec.is_fingerprint("") and not spec.is_fingerprint("F" * 64) and not spec.is_fingerprint(None)
