"""GRPO curves from verl's file-logger JSONL: merged per step, the tool-call metric each method's loop logs."""

from __future__ import annotations

import pytest
from demo_helpers import write_log

from agentic_verl.demo.training import read_steps, training_record

LINES = [
    {"step": 0, "data": {"val-core/toy/em/mean@1": 0.1}},  # validation before training: no reward, left out
    {"step": 1, "data": {"critic/score/mean": 0.25, "response_length/mean": 120.0, "agent/num_searches/mean": 1.5,
                         "agent/num_tool_calls/mean": 1.5, "agent/failure/no_call/mean": 0.25,
                         "agent/failure/parse_error/mean": 0.125, "agent/failure/truncated_by_length/mean": 0.0}},
    {"step": 1, "data": {"val-core/toy/em/mean@1": 0.2}},  # another line of step 1: merged
    {"step": 2, "data": {"critic/score/mean": 0.5, "response_length/mean": 96.0}},  # no agent metrics this step
]


@pytest.mark.parametrize("method, tool_calls", [
    ("rag_r1", [1.5, None]),  # agent/num_searches/mean
    ("funreason", [1.5, None]),  # agent/num_tool_calls/mean
    ("v2p", [1 - 0.25 - 0.125 - 0.0, None]),  # the share of samples that clicked
])
def test_steps_with_reward_length_and_the_methods_tool_calls(tmp_path, method, tool_calls):
    path = write_log(tmp_path / "grpo_metrics.jsonl", LINES)
    record = training_record("GRPO", path, 480.0, method)
    assert record["label"] == "GRPO" and record["seconds"] == 480.0 and record["source"] == str(path)
    assert [s["step"] for s in record["steps"]] == [1, 2]
    assert [s["reward"] for s in record["steps"]] == [0.25, 0.5]
    assert [s["response_length"] for s in record["steps"]] == [120.0, 96.0]
    assert [s["tool_calls"] for s in record["steps"]] == pytest.approx(tool_calls)


def test_lines_of_one_step_are_merged(tmp_path):
    steps = read_steps(write_log(tmp_path / "log.jsonl", LINES))
    assert steps[1]["val-core/toy/em/mean@1"] == 0.2 and steps[1]["critic/score/mean"] == 0.25


@pytest.mark.parametrize("text, error, message", [
    (None, FileNotFoundError, "training log not found"),  # no file
    ('{"step": 1, "data": {}\n', ValueError, r"log.jsonl:1: not valid JSON"),  # cut-off line
    ('{"step": "1", "data": {}}\n', ValueError, r"log.jsonl:1: not a verl file-logger line"),  # wrong shape
    ('{"step": 1, "data": {"train/loss": 2.0}}\n', ValueError, r"no step logged critic/score/mean"),  # an SFT log
])
def test_bad_logs_fail_naming_the_file(tmp_path, text, error, message):
    path = tmp_path / "log.jsonl"
    if text is not None:
        path.write_text(text)
    with pytest.raises(error, match=message):
        training_record("GRPO", path, 1.0, "rag_r1")


def test_unknown_method_lists_the_known_ones(tmp_path):
    path = write_log(tmp_path / "log.jsonl", LINES)
    with pytest.raises(ValueError, match="unknown method 'ppo'; known: rag_r1, funreason, v2p"):
        training_record("GRPO", path, 1.0, "ppo")
