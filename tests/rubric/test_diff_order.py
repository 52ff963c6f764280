"""`rubric diff` reports a change of order (issue 15): reports list areas and criteria by position."""

from __future__ import annotations

from dataclasses import replace

from rubric.yaml_format import FieldChange, diff_specs, parse_rubric
from tests.rubric.conftest import SMALL


def test_swapping_two_areas_is_a_difference_named_with_both_orders():
    spec = parse_rubric(SMALL)
    diff = diff_specs(spec, replace(spec, areas=spec.areas[::-1]))
    assert not diff.is_empty
    assert diff.order_changed == (FieldChange("areas", ("provisioning", "security"), ("security", "provisioning")),)
    assert "~ order of areas: provisioning, security -> security, provisioning" in diff.as_text()


def test_reordering_criteria_within_an_area_is_reported_for_that_area_only():
    spec = parse_rubric(SMALL)
    node, log, attest = spec.criteria
    diff = diff_specs(spec, replace(spec, criteria=(node, attest, log)))
    assert diff.order_changed == (
        FieldChange("criteria of security", ("log_isolation", "attestation"), ("attestation", "log_isolation")),
    )
    assert "no differences" not in diff.as_text()


def test_the_same_order_with_an_added_criterion_is_not_an_order_change():
    spec = parse_rubric(SMALL)
    extra = replace(spec.criteria[2], key="pentest")
    diff = diff_specs(spec, replace(spec, criteria=(*spec.criteria, extra)))
    assert diff.order_changed == () and diff.criteria_added == ("pentest",)


def test_identical_specs_still_have_no_differences():
    spec = parse_rubric(SMALL)
    assert diff_specs(spec, spec).is_empty
