"""The SVG charts draw what their docstrings say (reports.charts is pure: no database)."""

from __future__ import annotations

from xml.etree import ElementTree

from reports.charts import BAR, area_breakdown_svg

NS = "{http://www.w3.org/2000/svg}"


def test_an_unmeasured_area_gets_no_bar_only_the_word_in_italics() -> None:
    areas = [{"title": "Security", "score": 0.0}, {"title": "Provisioning", "score": None}]
    root = ElementTree.fromstring(area_breakdown_svg("Alpha", areas))  # noqa: S314 (our own SVG)
    bars = [r for r in root.iter(f"{NS}rect") if r.get("fill") == BAR]
    assert len(bars) == 1  # the measured 0.0 has its (empty) bar; the unmeasured area has none
    assert float(bars[0].get("width")) == 0.0
    italic = [t for t in root.iter(f"{NS}text") if t.get("font-style") == "italic"]
    assert [t.text for t in italic] == ["unmeasured"]
    assert not list(root.iter(f"{NS}pattern"))  # no hatching: the word is the whole mark
    assert root.find(f"{NS}desc").text == "Security: 0.00; Provisioning: unmeasured"
