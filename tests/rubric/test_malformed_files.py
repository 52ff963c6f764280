"""Every kind of malformed rubric file is refused with file, line and field, and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from rubric.models import Area, Criterion, RubricVersion
from rubric.services import rubric_version_import
from rubric.yaml_format import RubricFormatError, parse_rubric

pytestmark = pytest.mark.django_db


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line containing needle."""
    hits = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    return hits[nth - 1]


def refuse(text: str, tmp_path: Path) -> str:
    """Import through the CLI; assert it failed and wrote nothing; return the error text."""
    path = tmp_path / "bad-rubric.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CommandError) as info:
        call_command("rubric", "import", str(path), "--freeze")
    assert RubricVersion.objects.count() == 0
    assert Area.objects.count() == 0
    assert Criterion.objects.count() == 0
    message = str(info.value)
    assert str(path) in message
    return message


def assert_names(message: str, path: Path, line: int, field: str) -> None:
    assert f"{path / 'bad-rubric.yaml'}:{line}: {field}:" in message, message


def test_the_small_fixture_is_valid(small_yaml):
    spec = parse_rubric(small_yaml, filename="small.yaml")
    assert [c.key for c in spec.criteria] == ["node_ready", "log_isolation", "attestation"]


def test_bad_yaml_names_the_line(small_yaml, tmp_path):
    text = small_yaml.replace("  title: Provisioning", "  title: [Provisioning")
    message = refuse(text, tmp_path)
    opened = line_of(text, "[Provisioning")
    # The parser notices on the next line and says where the unclosed list started.
    assert f"bad-rubric.yaml:{opened + 1}: bad YAML: expected ',' or ']'" in message
    assert f"which started on line {opened}" in message


def test_a_tab_in_the_indentation_is_bad_yaml(small_yaml, tmp_path):
    text = small_yaml.replace("  weight: 0.4\n", "  weight: 0.4\n \tbad: tab\n")
    message = refuse(text, tmp_path)
    assert f"bad-rubric.yaml:{line_of(text, 'bad: tab')}: bad YAML:" in message


def test_an_empty_file_is_refused(tmp_path):
    message = refuse("", tmp_path)
    assert "empty" in message


def test_unknown_area(small_yaml, tmp_path):
    text = small_yaml.replace("  area: provisioning", "  area: provisoning")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "area: provisoning"), "criteria[0].area")
    assert "unknown area 'provisoning'" in message


def test_duplicate_criterion_key(small_yaml, tmp_path):
    text = small_yaml.replace("- key: attestation", "- key: node_ready")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "- key: node_ready", nth=2), "criteria[2].key")
    assert "duplicate criterion key 'node_ready'" in message


def test_duplicate_key_inside_one_mapping(small_yaml, tmp_path):
    text = small_yaml.replace("  title: Node ready time\n", "  title: Node ready time\n  title: Again\n")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "title: Again"), "criteria[0].title")
    assert "duplicate key" in message


def test_negative_weight(small_yaml, tmp_path):
    text = small_yaml.replace("  weight: 0.3\n", "  weight: -0.3\n")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "weight: -0.3"), "criteria[2].weight")
    assert "must be positive" in message


def test_zero_weight(small_yaml, tmp_path):
    text = small_yaml.replace("  weight: 0.4\n", "  weight: 0\n")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "weight: 0\n".strip()), "areas[0].weight")


def test_area_weights_that_do_not_sum(small_yaml, tmp_path):
    text = small_yaml.replace("  weight: 0.6\n", "  weight: 0.5\n")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "areas:"), "areas")
    assert "must sum to 1.0" in message and "0.9" in message


def test_criterion_weights_that_do_not_sum_within_an_area(small_yaml, tmp_path):
    text = small_yaml.replace("  weight: 0.7\n", "  weight: 0.8\n")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "weight: 0.8"), "criteria[1].weight")
    assert "in area 'security' must sum to 1.0" in message


def test_bad_direction(small_yaml, tmp_path):
    text = small_yaml.replace("  direction: lower", "  direction: down")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "direction: down"), "criteria[0].direction")
    assert "'down' is not one of: higher, lower" in message


def test_invalid_gate_tier(small_yaml, tmp_path):
    text = small_yaml.replace("cap_tier: bronze", "cap_tier: copper")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "cap_tier: copper"), "criteria[1].gate.cap_tier")
    assert "'copper' is not one of" in message


def test_a_gate_cannot_cap_at_the_top_tier(small_yaml, tmp_path):
    text = small_yaml.replace("cap_tier: bronze", "cap_tier: platinum")
    message = refuse(text, tmp_path)
    assert "criteria[1].gate.cap_tier" in message


def test_missing_anchors(small_yaml, tmp_path):
    text = small_yaml.replace("  anchors: {best: 60.0, worst: 3600.0}\n", "")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "- key: node_ready"), "criteria[0]")
    assert "missing required field 'anchors'" in message


def test_a_missing_anchor_value(small_yaml, tmp_path):
    text = small_yaml.replace("{best: 60.0, worst: 3600.0}", "{best: 60.0}")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "{best: 60.0}"), "criteria[0].anchors")
    assert "missing required field 'worst'" in message


def test_equal_anchors(small_yaml, tmp_path):
    text = small_yaml.replace("{best: 60.0, worst: 3600.0}", "{best: 60.0, worst: 60.0}")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "worst: 60.0}"), "criteria[0].anchors")
    assert "must differ" in message


def test_anchors_that_contradict_the_direction(small_yaml, tmp_path):
    text = small_yaml.replace("{best: 60.0, worst: 3600.0}", "{best: 3600.0, worst: 60.0}")
    message = refuse(text, tmp_path)
    assert "direction is 'lower', so best must be below worst" in message


def test_bad_scale(small_yaml, tmp_path):
    text = small_yaml.replace("  scale: log", "  scale: logarithmic")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "scale: logarithmic"), "criteria[0].scale")


def test_log_scale_with_a_non_positive_anchor(small_yaml, tmp_path):
    text = small_yaml.replace("{best: 60.0, worst: 3600.0}", "{best: 0.0, worst: 3600.0}")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "{best: 0.0, worst: 3600.0}"), "criteria[0].anchors")
    assert "log scale needs both anchors above zero" in message


def test_unknown_evidence_kind(small_yaml, tmp_path):
    text = small_yaml.replace("evidence: [doc_review]", "evidence: [hearsay]")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "[hearsay]"), "criteria[2].evidence")
    assert "unknown evidence kind 'hearsay'" in message


def test_probe_evidence_without_a_probe_binding(small_yaml, tmp_path):
    text = small_yaml.replace("  probe: {id: node_ready_time, metric: p50_seconds}\n", "")
    message = refuse(text, tmp_path)
    assert "criteria[0]" in message and "probe binding" in message


def test_a_misspelt_field_is_refused_not_ignored(small_yaml, tmp_path):
    text = small_yaml.replace("  unit: s\n", "  units: s\n")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, line_of(text, "units: s"), "criteria[0].units")


def test_an_unquoted_numeric_version_must_be_quoted(small_yaml, tmp_path):
    text = small_yaml.replace('version: "1.0"', "version: 1.0")
    message = refuse(text, tmp_path)
    assert_names(message, tmp_path, 3, "version")
    assert "quote it" in message


def test_every_problem_is_reported_at_once(small_yaml):
    text = small_yaml.replace("  direction: lower", "  direction: down").replace("cap_tier: bronze", "cap_tier: tin")
    with pytest.raises(RubricFormatError) as info:
        parse_rubric(text, filename="two.yaml")
    fields = [p.field for p in info.value.problems]
    assert fields == ["criteria[0].direction", "criteria[1].gate.cap_tier"]


def test_the_service_writes_nothing_on_error(small_yaml):
    with pytest.raises(RubricFormatError):
        rubric_version_import(text=small_yaml.replace("weight: 0.6", "weight: 0.7"), filename="x.yaml", freeze=True)
    assert not RubricVersion.objects.exists()


def test_yaml_aliases_are_refused(small_yaml, tmp_path):
    text = small_yaml.replace("  tier_floors: {", "  tier_floors: &floors {").replace(
        "areas:\n", "extra: [*floors, *floors]\nareas:\n"
    )
    message = refuse(text, tmp_path)
    assert "aliases" in message
