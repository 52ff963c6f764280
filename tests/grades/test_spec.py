"""The grade YAML format: the shipped grades round-trip byte for byte; bad files name file, line, field."""

from __future__ import annotations

from pathlib import Path

import pytest

from grades.spec import GradeFormatError, Vocabulary, diff_grades, emit_grade, parse_grade

DATA = Path(__file__).resolve().parents[2] / "grades" / "data"
SHIPPED = sorted(p for p in DATA.glob("*.yaml") if p.name != "price_bands.yaml")
VOCAB = Vocabulary(
    rubric="opgrade@2026.2", criteria=frozenset({"tenant_log_isolation", "ssh_reachable"}),
    gates=frozenset({"tenant_log_isolation"}), metrics={"node_ready_time:p95_seconds": "s"},
)


def test_three_example_grades_ship_in_canonical_form() -> None:
    assert len(SHIPPED) == 3
    for path in SHIPPED:
        text = path.read_text(encoding="utf-8")
        assert emit_grade(parse_grade(text, filename=path.name)) == text, path.name


def _doc(requirement: str) -> str:
    return (
        "format: opgrade-grade/1\nname: g\nversion: '1'\ntitle: G\nrubric: opgrade@2026.2\n"
        "hardware: {gpu_model: none}\nscope: {orchestrator: slurm}\nrequirements:\n" + requirement +
        "contract: {term: on-demand, support: best-effort}\n"
    )


def test_an_unknown_criterion_is_named_with_its_line() -> None:
    with pytest.raises(GradeFormatError) as info:
        parse_grade(_doc("- {key: a, title: A, kind: availability, criterion: no_such_thing, min: 0.9}\n"),
                    filename="g.yaml", vocabulary=VOCAB)
    assert "g.yaml:9: requirements[0].criterion: unknown criterion 'no_such_thing' in opgrade@2026.2" in str(info.value)


def test_an_unknown_probe_metric_and_a_non_gate_are_refused() -> None:
    with pytest.raises(GradeFormatError, match=r"unknown probe metric node_ready_time\.p99"):
        parse_grade(_doc("- {key: p, title: P, kind: provisioning_time, probe: {id: node_ready_time, metric: p99},"
                         " max: 10}\n"), vocabulary=VOCAB)
    with pytest.raises(GradeFormatError, match="'ssh_reachable' is not a gate"):
        parse_grade(_doc("- {key: g, title: G, kind: gate, gate: ssh_reachable}\n"), vocabulary=VOCAB)


def test_a_requirement_must_read_what_its_kind_compares() -> None:
    with pytest.raises(GradeFormatError, match="needs 'max'"):
        parse_grade(_doc("- {key: p, title: P, kind: provisioning_time, probe: {id: node_ready_time,"
                         " metric: p95_seconds}, min: 10}\n"), vocabulary=VOCAB)
    with pytest.raises(GradeFormatError, match="exactly one source"):
        parse_grade(_doc("- {key: p, title: P, kind: availability, min: 0.9}\n"))


def test_the_diff_lists_changed_requirements() -> None:
    a = parse_grade(_doc("- {key: t, title: T, kind: tier, min_tier: silver}\n"))
    b = parse_grade(_doc("- {key: t, title: T, kind: tier, min_tier: gold}\n"
                         "- {key: g, title: G, kind: gate, gate: tenant_log_isolation}\n"))
    text = diff_grades(a, b).as_text()
    assert "+ requirement g" in text and "~ requirement t.threshold: 'silver' -> 'gold'" in text
