"""The methodology page shows the engine's calibration: the reliability diagram and the figures
from the committed ``reports/data/calibration.json`` that ``bench/calibration_bench.py`` writes."""

from __future__ import annotations

import json
from xml.etree import ElementTree

import pytest

from ratings.engine import ENGINE_VERSION
from reports import calibration
from reports.charts import BAR, reliability_svg

NS = "{http://www.w3.org/2000/svg}"
BINS = [
    {"low": 0.0, "high": 0.5, "providers": 1753, "stated": 0.268814, "observed_truth": 0.40445, "observed_remeasure": 0.6},
    {"low": 0.99, "high": 1.0, "providers": 40, "stated": 0.999, "observed_truth": 0.996, "observed_remeasure": 0.96},
]


def test_the_reliability_diagram_puts_each_bin_at_stated_against_observed() -> None:
    root = ElementTree.fromstring(reliability_svg(BINS))  # noqa: S314 (our own SVG)
    dots = list(root.iter(f"{NS}circle"))
    assert len(dots) == 2
    # 300 px square from (56, 34): stated 0.268814 -> x 136.6, observed 0.40445 -> y 212.7
    assert (dots[0].get("cx"), dots[0].get("cy")) == ("136.6", "212.7")
    assert dots[0].get("fill") == BAR and dots[1].get("fill") == "#ffffff"  # under 100 providers: hollow
    assert "stated 0.269, observed 0.404 (1753 providers)" in root.find(f"{NS}desc").text


def test_the_committed_figures_are_the_bench_output_of_this_engine() -> None:
    figures = calibration.calibration_figures()
    assert figures is not None, "reports/data/calibration.json is missing or not the bench's shape"
    assert figures["engine_version"] == ENGINE_VERSION
    assert figures["cycles"] >= 300 and "--write-figures" in figures["command"]
    assert sum(b["providers"] for b in figures["bins"]) == figures["providers"]


def test_a_missing_or_malformed_figures_file_reads_as_none(tmp_path) -> None:
    assert calibration.calibration_figures(tmp_path / "absent.json") is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"ece": 0.1}))
    assert calibration.calibration_figures(bad) is None


@pytest.mark.django_db
def test_the_methodology_page_shows_the_diagram_and_where_the_figures_come_from(client, make_published) -> None:
    make_published()
    figures = calibration.calibration_figures()
    body = client.get("/methodology/opgrade/test.1/").content.decode()
    assert "How well the stated probabilities hold" in body
    assert 'aria-labelledby="reliability-title reliability-desc"' in body
    assert f"{figures['ece']:.4f}" in body and f"{figures['brier']:.3f}" in body
    assert figures["engine_version"] in body and figures["date"] in body
    assert "reports/data/calibration.json" in body and figures["command"] in body
