"""The demo plots in a real browser: headless Chromium lays out report.html (`agentic-verl view --summary`) and
seeds.html (`agentic-verl demo seeds`); every chart has a size, the right series and points, and file text stays
text.

Skipped where Chromium is not installed (`make chromium`), as tests/viewer/test_chromium.py is. The pages allow no
script of their own (seeds.html) or only their filter code (report.html); to measure, a test copy of each page gets a
script placed before its Content-Security-Policy <meta> (a policy given by <meta> applies only to what follows it),
which waits for DOMContentLoaded and writes what the browser laid out into a <pre id="measured">.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from demo_helpers import grpo_lines, qa_question, synthetic_summary, write_log, write_qa

from agentic_verl.cli import main

CHROMIUM = next((path for path in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser"))
                 if path and Path(path).exists()), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless browser check needs Chromium at /usr/bin/chromium "
                                "(make chromium); not installed here")

# a stage label from a file or the command line (no "=": LABEL=PATH@SECONDS splits at the first one)
XSS = "<b>after SFT</b></script><script>document.body.setAttribute('data-pwned','1')</script>"
MEASURE = """<script>
document.addEventListener("DOMContentLoaded", function () {
  var box = function (el) { var r = el.getBoundingClientRect(); return [r.width, r.height]; };
  var plots = Array.prototype.map.call(document.querySelectorAll("figure.plot"), function (figure) {
    var svg = figure.querySelector("svg");
    return {plot: figure.getAttribute("data-plot"), title: svg.querySelector("title").textContent, size: box(svg),
            series: Array.prototype.map.call(svg.querySelectorAll("g.series"), function (g) {
              return {name: g.getAttribute("data-series"), line: box(g.querySelector("polyline")),
                      points: Array.prototype.filter.call(g.querySelectorAll("circle.point"), function (c) {
                        var b = box(c); return b[0] > 0 && b[1] > 0; }).length};
            })};
  });
  var pre = document.createElement("pre");
  pre.id = "measured";
  pre.textContent = JSON.stringify(plots);
  document.body.appendChild(pre);
});
</script>
"""


def _measure(page: Path, tmp_path: Path) -> tuple[list[dict], str]:
    """(the laid-out plots, the DOM after load) of `page`, in headless Chromium."""
    text = page.read_text(encoding="utf-8")
    assert text.count('<meta http-equiv="Content-Security-Policy"') == 1
    probe = tmp_path / f"measure_{page.name}"
    probe.write_text(text.replace("<head>", "<head>\n" + MEASURE, 1), encoding="utf-8")
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1600",
               f"--user-data-dir={tmp_path / ('profile-' + page.stem)}", "--dump-dom", probe.as_uri()]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'<pre id="measured">(.*?)</pre>', proc.stdout, flags=re.S)
    assert found, "the measuring script did not run"
    return json.loads(html.unescape(found.group(1))), proc.stdout


def _check_drawn(plot: dict, series: list[str], points: int) -> None:
    assert plot["size"][0] > 100 and plot["size"][1] > 100, plot
    assert [s["name"] for s in plot["series"]] == series, plot["title"]
    for s in plot["series"]:
        assert s["points"] == points, (plot["title"], s)
        assert s["line"][0] > 0, (plot["title"], s)  # the polyline spans the x axis


def test_run_report_shows_score_per_stage_and_grpo_curves(tmp_path):
    evals = [write_qa(tmp_path / f"eval/{i}/result.json", [qa_question(0, 1, em1, 2), qa_question(1, 2, em2, 1)])
             for i, (em1, em2) in enumerate([(0, 0), (1, 0), (1, 1)])]
    log = write_log(tmp_path / "grpo.jsonl", grpo_lines([0.1, 0.3, 0.2, 0.6], [150, 120, 110, 90], [2, 1.5, 1, 1.5]))
    out = tmp_path / "run"
    labels = ["before SFT", XSS, "after GRPO"]
    assert main(["demo", "summary", "--method", "rag_r1", "--seed", "0", "--out", str(out),
                 *(arg for label, path in zip(labels, evals, strict=True) for arg in ("--stage", f"{label}={path}@5")),
                 "--training", f"GRPO={log}@60"]) == 0
    dump = write_log(tmp_path / "dumps" / "trajectories_1.jsonl", [])
    dump.write_text(json.dumps({"kind": "trajectory", "request_id": "r0", "agent_name": "rag_r1", "reward": 1.0,
                                "response_ids": [1, 2], "response_mask": [1, 1]}) + "\n")
    report = tmp_path / "report.html"
    assert main(["view", str(dump.parent), "--summary", str(out / "summary.json"), "-o", str(report)]) == 0

    plots, dom = _measure(report, tmp_path)
    by_kind = {p["plot"]: p for p in plots}
    assert list(by_kind) == ["score", "reward", "response_length", "tool_calls"]
    _check_drawn(by_kind["score"], ["EM", "1-hop", "2-hop"], points=3)  # a point per stage
    for name in ("reward", "response_length", "tool_calls"):
        _check_drawn(by_kind[name], ["GRPO"], points=4)  # a point per GRPO step
    assert 'id="r0"' not in dom and '<section class="traj" id="t0">' in dom  # the trajectories are still there
    assert 'data-pwned="1"' not in dom and "<b>" not in dom  # the stage label stayed text
    assert "&lt;b&gt;after SFT&lt;/b&gt;&lt;/script&gt;&lt;script&gt;" in dom


def test_seeds_page_shows_each_seed_as_a_series(tmp_path):
    folder = tmp_path / "seeds"
    labels = ("before SFT", XSS, "after GRPO")
    for seed in (0, 1, 2):
        summary = synthetic_summary(seed, [0.0, 0.3 + seed / 10, 0.5], {"1-hop": [0, 0.5, 0.6], "2-hop": [0, 0.2, 0.4]},
                                    [2, 1, 1], [0, 0, 0], [1, 2, 3], rewards=(0.1, 0.2 + seed / 10, 0.3, 0.5, 0.4),
                                    labels=labels)
        (folder / f"seed{seed}").mkdir(parents=True)
        (folder / f"seed{seed}" / "summary.json").write_text(json.dumps(summary))
    assert main(["demo", "seeds", str(folder)]) == 0

    plots, dom = _measure(folder / "seeds.html", tmp_path)
    assert [p["plot"] for p in plots] == ["score", "reward", "response_length", "tool_calls"]
    seeds = ["seed 0", "seed 1", "seed 2"]
    _check_drawn(plots[0], seeds, points=3)  # score per stage, per seed
    for plot in plots[1:]:
        _check_drawn(plot, seeds, points=5)  # GRPO step curves, per seed
    assert 'data-pwned="1"' not in dom and "<b>" not in dom
    assert dom.count('<tr class="mean">') == 1
