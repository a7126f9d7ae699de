"""The report in a real browser: headless Chromium runs the filter code and does not run model text.

Skipped where Chromium is not installed (CI machines are fresh); install it with
`apt-get install -y chromium` (Debian) to run these. The manual check is in docs/viewer.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from headless_chromium import dump_dom, needs_chromium, screenshot

from agentic_verl.viewer import load_dumps, render_report

pytestmark = needs_chromium


@pytest.fixture
def report(dump_dir, tmp_path) -> Path:
    path = tmp_path / "report.html"
    path.write_text(render_report(load_dumps([str(dump_dir)])), encoding="utf-8")
    return path


def _hidden_sections(dom: str) -> dict[str, bool]:
    return {m.group(1): m.group(2) is not None
            for m in re.finditer(r'<section class="traj" id="(t\d+)"( hidden(?:="")?)?>', dom)}


@pytest.mark.parametrize("query, visible, count", [
    ("", {"t0", "t1", "t2", "t3"}, "4 of 4"),  # no filter: all shown
    ("?failure=timeout", {"t1"}, "1 of 4"),  # failure type
    ("?failure=__none__", {"t0", "t3"}, "2 of 4"),  # trajectories without failures
    ("?min=0.5&max=1", {"t0", "t2"}, "2 of 4"),  # reward range; the unscored t3 drops out
    ("?agent=function_call&max=0.2", {"t1"}, "1 of 4"),  # filters combine
])
def test_filter_code_runs_in_headless_chromium(report, tmp_path, query, visible, count):
    dom = dump_dom(tmp_path, report, query)
    assert 'data-filter-applied="true"' in dom  # the inline script ran
    assert f"{count} trajectories shown" in dom
    hidden = _hidden_sections(dom)
    assert set(hidden) == {"t0", "t1", "t2", "t3"}
    assert {tid for tid, is_hidden in hidden.items() if not is_hidden} == visible
    # The payload in tool results and observations stayed text: its script did not run, its tag did not parse.
    assert 'data-pwned="1"' not in dom and "<img" not in dom
    assert "&lt;/script&gt;&lt;script&gt;document.body.setAttribute" in dom


def test_screenshot_renders(report, tmp_path):
    data = screenshot(tmp_path, report, 1280, 1600).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 1600)
    assert len(data) > 50_000  # a page full of tables and colored runs, not a blank canvas (~5 kB)
