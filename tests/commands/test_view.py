"""`agentic-verl view`: dumps in, one HTML file out; bad input gives one clear line and loses nothing."""

from __future__ import annotations

import json
import subprocess
import sys

from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

from agentic_verl.agent_loops.trace import TrajectoryTrace, dump_path
from agentic_verl.cli import main


def _dump(directory, n=3) -> str:
    for i in range(n):
        trace = TrajectoryTrace(f"req-{i}", "rag_r1", dump_dir=str(directory))
        trace.add_turn(2, 1, generation_latency_s=0.5)
        trace.add_tool_call("search", {"query": "q"}, "result", latency_s=0.1, queries=1)
        trace.finalize(AgentLoopOutput(prompt_ids=[1], response_ids=[5, 6, 7], response_mask=[1, 1, 0],
                                       reward_score=float(i), metrics=AgentLoopMetrics()))
    return dump_path(str(directory))


def test_view_writes_a_report_for_files_and_directories(tmp_path, capsys):
    dump = _dump(tmp_path / "dumps")
    out = tmp_path / "out" / "report.html"
    assert main(["view", dump, "-o", str(out), "--title", "step 3 <rollouts>"]) == 0
    page = out.read_text()
    assert page.count('<section class="traj"') == 3
    assert "<title>step 3 &lt;rollouts&gt;</title>" in page
    assert f"wrote {out}: 3 trajectories from 1 file(s)" in capsys.readouterr().out

    assert main(["view", str(tmp_path / "dumps"), "-o", str(out)]) == 0  # a directory means its *.jsonl
    assert out.read_text().count('<section class="traj"') == 3


def test_malformed_lines_are_named_on_stderr_and_the_rest_is_kept(tmp_path, capsys):
    dump = _dump(tmp_path)
    with open(dump, "a") as handle:
        handle.write('{"request_id": "cut-off", "response_ids": [1, 2\n')  # line 4: a truncated write
        handle.write(json.dumps({"request_id": "req-9", "response_ids": [], "response_mask": []}) + "\n")
    out = tmp_path / "report.html"
    assert main(["view", dump, "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert f"skipped {dump}:4: not valid JSON" in captured.err
    assert "4 trajectories from 1 file(s)" in captured.out and "1 malformed line(s) skipped" in captured.out
    assert out.read_text().count('<section class="traj"') == 4


def test_missing_file_is_one_clear_error_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "agentic_verl.cli", "view", str(tmp_path / "missing.jsonl"),
                           "-o", str(tmp_path / "r.html")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"agentic-verl view: error: trajectory dump not found: {tmp_path / 'missing.jsonl'}"
    assert not (tmp_path / "r.html").exists()


def test_a_file_with_no_trajectory_is_an_error_not_an_empty_page(tmp_path, capsys):
    dump = tmp_path / "d.jsonl"
    dump.write_text("garbage\n" + json.dumps({"kind": "reward", "request_id": "r", "reward": 1.0}) + "\n")
    assert main(["view", str(dump), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert f"skipped {dump}:1: not valid JSON" in err
    assert "no trajectory records in" in err and "1 reward record(s) without a trajectory" in err
    assert not (tmp_path / "r.html").exists()
