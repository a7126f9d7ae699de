"""The `eval screenspot` report in a real browser: headless Chromium runs the filter code, draws the screenshots
with their overlays, and does not run data or model text.

Skipped where Chromium is not installed (apt-get install -y chromium), as tests/viewer/test_chromium.py is.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from gui_helpers import XSS, ScriptedPredictor, centre, write_seeclick
from headless_chromium import dump_dom, needs_chromium, screenshot

from agentic_verl.data.gui_grounding import load_grounding
from agentic_verl.eval.screenspot import ScreenSpotSettings, evaluate
from agentic_verl.eval.screenspot_report import ScreenSpotReport

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def report(tmp_path_factory, screens) -> Path:
    """12 samples: text buttons clicked at their centre (hits), icons at the corner (misses); one instruction carries
    a script payload; every prediction has a heatmap."""
    tmp = tmp_path_factory.mktemp("report")
    data = write_seeclick(tmp / "ss", screens)
    annotation = tmp / "ss" / "screenspot_mobile_v2.json"
    annotation.write_text(annotation.read_text().replace('"instruction": "', f'"instruction": "{XSS} ', 1))
    clicks = {s.instruction: centre(s.bbox) if s.element_type == "text" else (1.0, 1.0) for s in load_grounding(data)}
    assert sum(XSS in instruction for instruction in clicks) == 1
    heat = np.zeros((4, 6))
    heat[1, 2] = 1.0
    report = ScreenSpotReport()
    result = evaluate(ScreenSpotSettings(data=[data], model="scripted", label="scripted"),
                      predictor=ScriptedPredictor(clicks, heatmap=heat), report=report)
    assert result["summary"]["accuracy"] == 0.5
    path = tmp / "report.html"
    path.write_text(report.render(result), encoding="utf-8")
    return path


def _hidden(dom: str) -> dict[str, bool]:
    return {m.group(2): m.group(3) is not None
            for m in re.finditer(r'<figure class="sample (hit|miss)" id="(s\d+)"( hidden(?:="")?)?>', dom)}


@pytest.mark.parametrize("query, shown", [
    ("", 12),  # no filter
    ("?outcome=miss", 6),  # the icons
    ("?outcome=hit&type=text", 6),  # filters combine
    ("?outcome=hit&type=icon", 0),
    ("?group=web", 4),  # screen 2
])
def test_filters_run_in_headless_chromium(report, tmp_path, query, shown):
    dom = dump_dom(tmp_path, report, query)
    assert 'data-filter-applied="true"' in dom  # the inline script ran
    assert f"{shown} of 12 samples shown" in dom
    hidden = _hidden(dom)
    assert len(hidden) == 12 and sum(not h for h in hidden.values()) == shown
    # the payload in the instruction stayed text: its script did not run, its tag did not parse
    assert 'data-pwned="1"' not in dom and "<img src=\"x\"" not in dom
    assert "&lt;/script&gt;&lt;script&gt;document.body.setAttribute" in dom
    # every figure has the screenshot, the ground-truth box, the click and the heatmap layer
    assert dom.count('<rect class="gt"') == 12 and dom.count('<g class="click">') == 12
    assert dom.count('<image class="heat"') == 12


def test_screenshot_renders_the_overlays(report, tmp_path):
    from PIL import Image

    with Image.open(screenshot(tmp_path, report, 1280, 1400)) as image:
        assert image.size == (1280, 1400)
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3).astype(int)
    red = ((pixels[:, 0] > 200) & (pixels[:, 1] < 80) & (pixels[:, 2] < 80)).sum()  # click markers (#e0241b)
    green = ((pixels[:, 1] > 140) & (pixels[:, 0] < 60) & (pixels[:, 2] < 110)).sum()  # box outlines (#12a150)
    assert red > 50 and green > 50, (red, green)
