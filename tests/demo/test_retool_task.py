"""The ReTool-style miniature's task (agentic_verl/demo/retool_task.py): problems are a seed's function and never
shared between train and test; the SFT traces come out of the real `tool_agent_traced` loop and the real PythonTool
sandbox, in the loop's token layout, with only the policy's turns learned; the loop reads the recipe's settings."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from agentic_verl.demo import retool_task
from agentic_verl.rewards.numeric import numeric_em

REPO = Path(__file__).resolve().parents[2]


def test_problems_are_a_function_of_the_seed_and_disjoint():
    train, test = retool_task.problems(0, 64, 32)
    assert (train, test) == retool_task.problems(0, 64, 32)
    assert retool_task.problems(1, 64, 32)[0] != train
    pairs = [(p.a, p.b) for p in train + test]
    assert len(set(pairs)) == 96  # none twice, none in both splits
    for p in train + test:
        assert 100 <= p.a <= 9999 and 12 <= p.b <= 999 and p.answer == p.a * p.b
        assert str(p.a) in p.question and str(p.b) in p.question and str(p.answer) not in p.question


def test_gold_turns_are_a_hermes_call_and_an_answer_that_scores_one():
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.tool_parser import ToolParser

    from agentic_verl.cpu.models import smollm2_hf_dir
    from agentic_verl.tools.code import PythonTool

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_hf_dir()))
    problem = retool_task.problems(3, 1, 0)[0][0]
    call, answer = problem.gold_turns()
    tool = PythonTool({"type": "native", "allow_code_execution": True})
    parser = ToolParser.get_tool_parser("hermes", tokenizer)
    _, calls = asyncio.run(parser.extract_tool_calls(tokenizer.encode(call), [tool.tool_schema]))
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("python", {"code": f"print({problem.a} * {problem.b})"})]
    assert numeric_em(answer, str(problem.answer)) == {"score": 1.0, "error_type": None}


def test_sft_traces_run_through_the_real_loop_and_tool(tmp_path):
    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import smollm2_hf_dir

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_hf_dir()))
    items = retool_task.problems(5, 3, 0)[0]
    rows = retool_task.sft_rows(items, tokenizer, str(REPO / retool_task.TOOL_CONFIG))
    assert len(rows) == 3
    for problem, row in zip(items, rows, strict=True):
        ids, mask = row["input_ids"], row["loss_mask"]
        learned = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
        masked_out = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
        call, answer = problem.gold_turns()
        assert learned == f"{call}<|im_end|>{answer}<|im_end|>"  # the policy's two turns, each ended
        # the tool's output (what the sandbox printed) is in the input, never a target
        assert f"<|im_start|>tool\n{problem.answer}<|im_end|>" in masked_out
        assert masked_out.startswith("<|im_start|>system\nYou solve arithmetic with Python.")
        assert retool_task.SYSTEM_PROMPT in masked_out  # SmolLM2's template ignores tools=: the prompt says it


def test_a_trace_whose_tool_did_not_print_the_answer_is_refused(monkeypatch):
    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import smollm2_hf_dir

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2_hf_dir()))
    wrong = retool_task.Problem("A farm has 120 rows of 13 trees. How many trees are there?", 120, 13)
    monkeypatch.setattr(retool_task.Problem, "gold_turns", lambda self: [
        '<tool_call>\n{"name": "python", "arguments": {"code": "print(1 / 0)"}}\n</tool_call>',
        "<answer>1560</answer>"])
    with pytest.raises(RuntimeError, match="1 of 1 gold traces did not get the answer"):
        retool_task.sft_rows([wrong], tokenizer, str(REPO / retool_task.TOOL_CONFIG))


def test_the_loop_reads_the_recipes_multi_turn_settings():
    recipe = OmegaConf.load(REPO / "recipes/retool/grpo.yaml")
    config = retool_task.loop_config("some/tools.yaml", 100, 50)
    rollout = config.actor_rollout_ref.rollout
    for key, value in recipe.actor_rollout_ref.rollout.multi_turn.items():
        expected = "some/tools.yaml" if key == "tool_config_path" else value
        assert rollout.multi_turn[key] == expected, key
    assert (rollout.prompt_length, rollout.response_length) == (100, 50)
    assert recipe.actor_rollout_ref.rollout.agent.default_agent_loop == retool_task.AGENT_NAME
    tools = OmegaConf.load(REPO / recipe.actor_rollout_ref.rollout.multi_turn.tool_config_path)
    assert tools.tools[0].class_name == "agentic_verl.tools.code.PythonTool"
    assert tools.tools[0].config.allow_code_execution is True  # the opt-in the recipe's header names


def test_rl_rows_round_trip(tmp_path):
    train, _ = retool_task.problems(2, 5, 0)
    path = retool_task._write(retool_task.rl_rows(train, "train"), tmp_path / "train.parquet")
    assert retool_task.load_problems(path) == train


def test_report_rows_read_the_evaluations(tmp_path, capsys):
    from agentic_verl.cli import main

    for name, accuracy in (("before", 0.0), ("after", 0.75)):
        (tmp_path / f"{name}.json").write_text(json.dumps(
            {"accuracy": accuracy, "tool_calls_per_question": accuracy * 2, "questions": 4, "failures": {},
             "seconds": 5.0}))
    assert main(["demo", "retool", "report", "--seed", "3", "--out", str(tmp_path / "report.json"),
                 "--run", f"before SFT={tmp_path / 'before.json'}",
                 "--run", f"after SFT={tmp_path / 'after.json'}@112"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:] == ["| 3 | before SFT | 0.00 | 0.000 | 4 | 5.0 | - |", "| 3 | after SFT | 1.50 | 0.750 | 4 | 5.0 | 112 |"]
    rows = json.loads((tmp_path / "report.json").read_text())["rows"]
    assert [r["training_seconds"] for r in rows] == [None, 112.0]
