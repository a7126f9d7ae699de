"""The SVG line chart: a group per series, a circle per present point, labels escaped, ticks that cover the data."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from agentic_verl.demo.svg import line_chart, nice_ticks

SVG = "{http://www.w3.org/2000/svg}"


def test_series_points_and_escaped_labels():
    chart = line_chart('a <b>"title"</b>', [("seed <0>", [(1, 0.1), (2, None), (3, 0.3)]), ("seed 1", [(1, 0.5)])],
                       x_label="step & more", y_label="reward")
    root = ET.fromstring(chart)  # well-formed XML: every label escaped
    groups = root.findall(f"{SVG}g")
    assert [g.get("data-series") for g in groups] == ["seed <0>", "seed 1"]
    assert [len(g.findall(f"{SVG}circle")) for g in groups] == [2, 1]  # the None point is left out
    assert [g.get("data-points") for g in groups] == ["2", "1"]
    xs = [float(x) for x, _ in re.findall(r"([\d.]+),([\d.]+)", groups[0].find(f"{SVG}polyline").get("points"))]
    assert xs == sorted(xs) and xs[0] < xs[1]
    assert root.find(f"{SVG}title").text == 'a <b>"title"</b>'
    assert "<b>" not in chart


def test_higher_values_are_drawn_higher_and_a_fixed_range_is_kept():
    chart = line_chart("score", [("EM", [(0, 0.0), (1, 0.5), (2, 1.0)])], x_ticks=[(0, "a"), (1, "b"), (2, "c")],
                       y_range=(0, 1))
    ys = [float(c.get("cy")) for c in ET.fromstring(chart).iter(f"{SVG}circle")]
    assert ys[0] > ys[1] > ys[2]  # SVG y grows downwards
    assert ys[0] - ys[1] == ys[1] - ys[2]
    labels = [t.text for t in ET.fromstring(chart).iter(f"{SVG}text")]
    assert {"a", "b", "c", "0.0", "1.0"} <= set(labels)


def test_no_points_says_so():
    assert "no data" in line_chart("empty", [("GRPO", [(1, None)])])


def test_ticks_cover_the_range():
    for lo, hi in [(0.0, 1.0), (96.0, 151.0), (0.0417, 0.5), (-0.2, 0.3)]:
        ticks = nice_ticks(lo, hi)
        assert 3 <= len(ticks) <= 11 and ticks[0] >= lo - 1e-9 and ticks[-1] <= hi + 1e-9
        assert ticks[0] - lo < (ticks[1] - ticks[0]) and hi - ticks[-1] < (ticks[1] - ticks[0])
