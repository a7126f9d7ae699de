"""The learning demo's report (`make demo-learn`) on made-up runs: the learning run's and the control's reward per
step reach rewards.json, the table, the gain line and the plot (one series each, a point per step), text from the
command line stays text; and the demo's Python steps (prepare's files, the overrides) without a run."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from demo_helpers import write_log

from agentic_verl.cli import build_parser
from agentic_verl.cli import main as cli
from agentic_verl.demo.learning import grpo_overrides, task_files

REPO = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"
LEARNED = [0.55, 0.6, 0.7, 0.72, 0.8, 0.85, 0.9, 0.95]
CONTROL = [0.56, 0.5, 0.6, 0.58]


def main(argv: list[str]) -> int:
    """`agentic-verl demo learn ARGV`, as learn.sh runs it."""
    return cli(["demo", "learn", *argv])


def _learn_report(argv: list[str]) -> int:
    """`demo learn report ARGV`'s handler itself, so that its error reaches the test as raised."""
    args = build_parser().parse_args(["demo", "learn", "report", *argv])
    return args.handler(args)


def _log(path, rewards, calls=1.0):
    return write_log(path, [{"step": i + 1, "data": {"critic/score/mean": r, "response_length/mean": 5.0,
                                                     "agent/num_tool_calls/mean": calls}}
                            for i, r in enumerate(rewards)])


def test_the_report_carries_both_runs_per_step(tmp_path, capsys):
    grpo, control = _log(tmp_path / "grpo.jsonl", LEARNED), _log(tmp_path / "control.jsonl", CONTROL, calls=0.97)
    label = "GRPO <lr 5e-3>"
    assert main(["report", "--out", str(tmp_path / "out"), "--run", f"{label}={grpo}@400",
                 "--run", f"control, lr 0={control}@200", "--seconds-total", "650", "--note", "a <b>note</b>"]) == 0
    printed = capsys.readouterr().out
    saved = json.loads((tmp_path / "out" / "rewards.json").read_text())
    assert [run["rewards"] for run in saved["runs"]] == [LEARNED, CONTROL]
    assert [run["label"] for run in saved["runs"]] == [label, "control, lr 0"]
    assert saved["seconds_total"] == 650
    # the learning run's last 4 steps (0.875) against the control's mean (0.56)
    assert "0.875, against 0.560" in printed and "+0.315" in printed
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<b>" not in page and "&lt;lr 5e-3&gt;" in page
    assert page.count('data-plot="reward"') == 1
    reward_svg = ET.fromstring(page[page.index("<svg", page.index('data-plot="reward"')):
                                    page.index("</svg>", page.index('data-plot="reward"')) + 6])
    series = {g.get("data-series"): len(g.findall(f"{SVG}circle")) for g in reward_svg.iter(f"{SVG}g")}
    assert series == {label: len(LEARNED), "control, lr 0": len(CONTROL)}
    assert 'data-plot="tool_calls"' in page
    # the per-step table: a row per step of the longer run, "-" where the control has none
    table = page[page.index('<table id="rewards">'):]
    assert table.count("<tr>") == len(LEARNED) + 1 and "<td>0.950</td><td>-</td>" in table


def test_a_report_needs_the_control(tmp_path):
    with pytest.raises(ValueError, match="two runs"):
        _learn_report(["--out", str(tmp_path), "--run", f"GRPO={_log(tmp_path / 'g.jsonl', LEARNED)}@1"])


def test_the_overrides_set_the_run_and_its_learning_rate(capsys):
    overrides = grpo_overrides(task_files(Path("/t")), lr=0.0, steps=6, questions=16, samples=4)
    keys = dict(o.lstrip("+").split("=", 1) for o in overrides)
    assert keys["actor_rollout_ref.actor.optim.lr"] == "0.0" and keys["trainer.total_training_steps"] == "6"
    assert keys["data.train_batch_size"] == "16" and keys["actor_rollout_ref.rollout.n"] == "4"
    assert len(keys) == len(overrides)  # no key twice
    assert main(["overrides", "--task", "/t", "--lr", "0", "--steps", "6", "--questions", "16"]) == 0
    assert capsys.readouterr().out.splitlines() == overrides
    assert "++reward.custom_reward_function.reward_kwargs.config=/t/ast_only.yaml" in overrides
    assert main(["env", "--task", "/t"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "MODEL_PATH=/t/sft", "TRAIN_FILE=/t/train.parquet", "VAL_FILE=/t/train.parquet"]


@pytest.mark.parametrize("knob, value", [("STEPS", "0"), ("CONTROL_STEPS", "x"), ("SEED", "-1")])
def test_learn_sh_refuses_a_bad_knob_before_anything_runs(tmp_path, knob, value):
    out = tmp_path / "out"
    run = subprocess.run(["bash", str(REPO / "recipes" / "demo" / "learn.sh")], capture_output=True, text=True,
                         env={**os.environ, "OUT": str(out), knob: value}, timeout=60)
    assert run.returncode == 2 and f"{knob} must be an integer" in run.stderr, run.stderr
    assert not out.exists()
