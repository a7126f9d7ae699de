"""Our SearchTool inside verl's own ToolAgentLoop (hermes format), loaded from configs/tools/search_tool.yaml by verl's
AgentLoopWorker, against the real retrieval server; and `tool_agent_traced`, the thin subclass that records
tool-call failures verl's loop drops."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from agent_loop_helpers import ScriptedServer, run, verl_config
from agent_loop_invariants import check_token_invariants, runs

REPO = Path(__file__).resolve().parents[2]
SAMPLING = {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
QUESTION = [{"role": "user", "content": "What is the capital of France? Use the search tool."}]


def _call(name: str, arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call><|im_end|>"


def _tool_yaml(tmp_path, url, timeout_s=2.0, max_failures=32) -> str:
    """configs/tools/search_tool.yaml with a short timeout and no retries (the shipped one waits 10 s x 3)."""
    text = (REPO / "configs" / "tools" / "search_tool.yaml").read_text()
    text = text.replace("timeout_s: 10.0", f"timeout_s: {timeout_s}").replace("max_retries: 2", "max_retries: 0")
    assert "max_consecutive_search_failures: 32" in text
    text = text.replace("max_consecutive_search_failures: 32", f"max_consecutive_search_failures: {max_failures}")
    path = tmp_path / "search_tool.yaml"
    path.write_text(text)
    return str(path)


def _worker_run(model_dir, tool_config_path, server, agent_name, url, monkeypatch, response_length=512):
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto

    monkeypatch.setenv("RETRIEVAL_URL", url)
    config = verl_config(model_dir, f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tool_config_path}",
                         "actor_rollout_ref.rollout.multi_turn.format=hermes",
                         "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=4096",
                         response_length=response_length)
    worker = AgentLoopWorker(config, server)
    raw_prompt = np.empty(1, dtype=object)
    raw_prompt[0] = QUESTION
    batch = DataProto.from_dict(non_tensors={"raw_prompt": raw_prompt,
                                             "agent_name": np.array([agent_name], dtype=object),
                                             "index": np.array([0])})
    return run(worker.generate_sequences(batch))


def _unpad(result, row=0):
    prompt = result.batch["prompts"][row]
    attention = result.batch["attention_mask"][row]
    n = int(attention[prompt.shape[0]:].sum())
    return (prompt[attention[: prompt.shape[0]].bool()].tolist(), result.batch["responses"][row][:n].tolist(),
            result.batch["response_mask"][row][:n].tolist())


@pytest.mark.parametrize("agent_name", ["tool_agent", "tool_agent_traced"])
def test_verls_tool_agent_loop_drives_our_search_tool(agent_name, qwen_dir, qwen_tokenizer, retrieval_server,
                                                      monkeypatch):
    tok = qwen_tokenizer
    server = ScriptedServer(tok, [_call("search", {"query_list": ["capital of france", "who wrote hamlet"]}),
                                  "<answer> Paris </answer><|im_end|>"])
    before = len(retrieval_server.service.calls)
    result = _worker_run(qwen_dir, str(REPO / "configs" / "tools" / "search_tool.yaml"), server, agent_name,
                         retrieval_server.url, monkeypatch)
    assert retrieval_server.service.calls[before:] == [["capital of france", "who wrote hamlet"]]

    prompt_ids, response, mask = _unpad(result)
    assert '"name": "search"' in tok.decode(prompt_ids)  # the tool schema is in the prompt (chat template tools)
    assert server.calls[0]["prompt_ids"] == prompt_ids
    [(s1, e1, _), (s2, e2, _), (s3, e3, _)] = runs(mask)
    assert response[s1:e1] == server.outputs[0].token_ids  # policy tokens as generated
    assert server.calls[1]["prompt_ids"] == prompt_ids + response[:s3]
    assert response[s3:e3] == server.outputs[1].token_ids
    tool_text = tok.decode(response[s2:e2])
    assert tool_text.startswith("\n<|im_start|>user\n<tool_response>\n")
    assert 'Results for "capital of france":\nDoc 1 (Title: ' in tool_text and "Paris is the capital" in tool_text
    assert 'Results for "who wrote hamlet":\nDoc 1 (Title: Hamlet) Hamlet is a tragedy' in tool_text
    assert tool_text.endswith("</tool_response><|im_end|>\n<|im_start|>assistant\n")
    logprobs = result.batch["rollout_log_probs"][0][: len(response)].tolist()
    assert all(lp == 0.0 for lp in logprobs[s2:e2]) and logprobs[s1:e1] == pytest.approx(server.outputs[0].log_probs)
    if agent_name == "tool_agent_traced":
        metrics = result.non_tensor_batch["agent_metrics"][0]
        assert metrics["num_tool_calls"] == 1 and metrics["num_searches"] == 1 and metrics["queries_per_search"] == 2
        assert metrics["num_turns"] == 2 and metrics["observation_tokens"] == e2 - s2
        assert sum(v for k, v in metrics.items() if k.startswith("failure/")) == 0


# one row per case: the policy's turns, which retrieval server, the failures the traced loop must record
CASES = [
    ("unknown_tool", [_call("browse", {"url": "x"}), "Paris<|im_end|>"], "ok", {"unknown_tool": 1}),
    ("bad_arguments", [_call("search", {"query_list": "not a list"}), "Paris<|im_end|>"], "ok", {"bad_arguments": 1}),
    ("parse_error", ['<tool_call>\n{"name": "search", "arguments": {"query_list": ["x"]}\n</tool_call><|im_end|>'],
     "ok", {"parse_error": 1, "no_call": 1}),
    ("no_call", ["It is Paris.<|im_end|>"], "ok", {"no_call": 1}),
    ("timeout", [_call("search", {"query_list": ["capital of france"]}), "Paris<|im_end|>"], "silent",
     {"timeout": 1}),
    ("server_down", [_call("search", {"query_list": ["capital of france"]}), "Paris<|im_end|>"], "dead",
     {"tool_error": 1}),
    ("truncated", ["word " * 100], "ok", {"no_call": 1, "truncated_by_length": 1}),
]


@pytest.mark.parametrize("name,turns,where,expected", CASES, ids=[c[0] for c in CASES])
def test_traced_loop_records_tool_call_failures(name, turns, where, expected, qwen_dir, qwen_tokenizer,
                                                retrieval_server, silent_server, dead_url, tmp_path, monkeypatch):
    tok = qwen_tokenizer
    url = {"ok": retrieval_server.url, "silent": silent_server, "dead": dead_url}[where]
    server = ScriptedServer(tok, turns)
    out = _loop_run(qwen_dir, tok, _tool_yaml(tmp_path, url, timeout_s=0.3), server, url, monkeypatch,
                    response_length=64 if name == "truncated" else 512)
    metrics = out.extra_fields["agent_metrics"]
    assert {k.split("/", 1)[1]: v for k, v in metrics.items() if k.startswith("failure/") and v} == expected
    check_token_invariants(out, server, tok)


def test_calls_past_max_parallel_calls_are_counted_not_silently_dropped(qwen_dir, qwen_tokenizer, retrieval_server,
                                                                        tmp_path, monkeypatch):
    """verl executes the first `max_parallel_calls` calls of a turn and drops the rest without a word; the traced
    loop counts each dropped call as over_limit."""
    tok = qwen_tokenizer
    calls = "".join(_call("search", {"query_list": [q]}).replace("<|im_end|>", "") for q in ("nile", "paris", "x"))
    server = ScriptedServer(tok, [calls + "<|im_end|>", "Paris<|im_end|>"])
    out = _loop_run(qwen_dir, tok, _tool_yaml(tmp_path, retrieval_server.url), server, retrieval_server.url,
                    monkeypatch, overrides=["actor_rollout_ref.rollout.multi_turn.max_parallel_calls=1"])
    metrics = out.extra_fields["agent_metrics"]
    assert metrics["num_tool_calls"] == 1
    assert {k.split("/", 1)[1]: v for k, v in metrics.items() if k.startswith("failure/") and v} == {"over_limit": 2}
    check_token_invariants(out, server, tok)


def test_an_empty_first_generation_gives_an_empty_response(qwen_dir, qwen_tokenizer, retrieval_server, tmp_path,
                                                           monkeypatch):
    """verl's ToolAgentLoop returns `prompt_ids[-0:]` (the whole prompt) as the response ids when nothing was
    generated; the traced loop returns no response ids, matching the empty mask."""
    tok = qwen_tokenizer
    server = ScriptedServer(tok, [[]])
    out = _loop_run(qwen_dir, tok, _tool_yaml(tmp_path, retrieval_server.url), server, retrieval_server.url,
                    monkeypatch)
    assert out.response_ids == [] and out.response_mask == []
    assert out.prompt_ids == server.calls[0]["prompt_ids"]
    assert out.extra_fields["agent_metrics"]["failure/no_call"] == 1
    check_token_invariants(out, server, tok)


def test_traced_loop_stops_the_run_when_the_search_server_is_dead(qwen_dir, qwen_tokenizer, dead_url, tmp_path,
                                                                 monkeypatch):
    """verl's ToolAgentLoop turns a tool's exception into an observation; the traced loop re-raises SearchTool's
    fail-fast: the second failed search in a row (limit 2) fails the trajectory, and every later trajectory of the
    process fails before generating anything (verl fails those samples; with none left, the run stops)."""
    from agentic_verl.fail_fast import SearchFailFastError
    from agentic_verl.tools.search import SEARCH_FAILURES

    tok = qwen_tokenizer
    search = _call("search", {"query_list": ["capital of france"]})
    tool_yaml = _tool_yaml(tmp_path, dead_url, timeout_s=0.3, max_failures=2)
    SEARCH_FAILURES.clear()
    try:
        server = ScriptedServer(tok, [search, search, "Paris<|im_end|>"])
        with pytest.raises(SearchFailFastError, match=f"2 consecutive searches failed.*cannot reach {dead_url}"):
            _loop_run(qwen_dir, tok, tool_yaml, server, dead_url, monkeypatch)
        assert len(server.calls) == 2  # stopped at the second failed search, before generating again
        later = ScriptedServer(tok, ["Paris<|im_end|>"])
        with pytest.raises(SearchFailFastError, match="max_consecutive_search_failures=2"):
            _loop_run(qwen_dir, tok, tool_yaml, later, dead_url, monkeypatch)
        assert later.calls == []
    finally:
        SEARCH_FAILURES.clear()


def _loop_run(model_dir, tok, tool_config_path, server, url, monkeypatch, response_length=512, overrides=()):
    """tool_agent_traced built exactly as verl's AgentLoopWorker builds a loop, with the tools verl loads."""
    from agent_loop_helpers import build_loop, sample
    from verl.tools.tool_registry import load_all_tools

    monkeypatch.setenv("RETRIEVAL_URL", url)
    tools = load_all_tools(tool_config_path=tool_config_path, function_tool_path=None)
    config = verl_config(model_dir, "actor_rollout_ref.rollout.multi_turn.format=hermes", *overrides,
                         response_length=response_length)

    async def go():
        loop = build_loop("tool_agent_traced", config, server, tok, tools=tools)
        return await loop.run(dict(SAMPLING), **sample(QUESTION))

    return asyncio.run(go())


def test_traced_loop_with_the_smollm2_chat_template(smol_dir, smol_tokenizer, retrieval_server, monkeypatch):
    """The same tool round trip with SmolLM2's template (which renders no tool schema and a plain `tool` turn):
    policy tokens are kept as generated, the tool turn is mask 0 and carries the search results."""
    tok = smol_tokenizer
    server = ScriptedServer(tok, [_call("search", {"query_list": ["who wrote hamlet"]}).replace("<|im_end|>",
                                                                                                 tok.eos_token),
                                  "<answer> Shakespeare </answer>" + tok.eos_token])
    out = _loop_run(smol_dir, tok, str(REPO / "configs" / "tools" / "search_tool.yaml"), server, retrieval_server.url,
                    monkeypatch)
    check_token_invariants(out, server, tok)
    tool_runs = [tok.decode(out.response_ids[s:e]) for s, e, v in runs(out.response_mask) if v == 0]
    assert len(tool_runs) == 1 and "Doc 1 (Title: Hamlet) Hamlet is a tragedy" in tool_runs[0]
    assert out.extra_fields["agent_metrics"]["num_searches"] == 1


@pytest.mark.parametrize("metrics, expected", [
    ({"status": "server_crashed", "error_type": "server_crashed"}, "tool_error"),  # McpTool
    ({"status": "connect_failed", "error_type": "connect_failed"}, "tool_error"),
    ({"status": "too_many_connections", "error_type": "too_many_connections"}, "tool_error"),
    ({"status": "sandbox_error", "error_type": "sandbox_error"}, "tool_error"),  # PythonTool
    ({"status": "timeout", "error_type": "timeout"}, "timeout"),
    ({"status": "error", "error_type": "error"}, None),  # the model's code raised: its outcome, not a tool failure
    ({"status": "killed", "error_type": "killed"}, None),
    ({"status": "ok", "error_type": None}, None),
])
def test_our_tools_failure_kinds_reach_the_trace(metrics, expected):
    """What McpTool and PythonTool report in their metrics is counted by tool_agent_traced as the trace's kind."""
    from types import SimpleNamespace

    from agentic_verl.agent_loops.tool_agent_traced import TracedToolAgentLoop

    loop = object.__new__(TracedToolAgentLoop)
    loop.tools = {"python": object()}
    call = SimpleNamespace(name="python")
    assert loop._failure(call, {"code": "1"}, SimpleNamespace(text="out"), metrics, SimpleNamespace()) == expected
