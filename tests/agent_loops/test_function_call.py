"""function_call: the FunReason/BFCL single-turn loop, constructed as verl does, with the real Qwen and SmolLM2
chat templates; scripted outputs for each failure category, BFCL's AST reward on what the loop produced, and
SmolLM2-135M through verl's AgentLoopWorker."""

from __future__ import annotations

import json

import numpy as np
import pytest
from agent_loop_helpers import EngineServer, ScriptedServer, run, run_loop, sample, verl_config
from agent_loop_invariants import check_token_invariants

from agentic_verl.agent_loops.function_call import FunctionCallConfig, classify
from agentic_verl.agent_loops.prompts import bfcl_messages
from agentic_verl.rewards.bfcl import bfcl_ast

SAMPLING = {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
FUNCTIONS = [{
    "name": "get_weather",
    "description": "Current weather in a city.",
    "parameters": {"type": "dict", "required": ["city"], "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "description": "celsius or fahrenheit", "enum": ["celsius", "fahrenheit"]}}},
}]
QUESTION = "What is the weather in Paris in celsius?"
ANSWER = json.dumps([{"get_weather": {"city": ["Paris"], "unit": ["celsius", ""]}}])
EXTRA_INFO = {"functions": json.dumps(FUNCTIONS), "category": "simple_python", "language": "python"}
GOLD = '<think>The user wants the weather in Paris, in celsius.</think>\n\n[get_weather(city="Paris", unit="celsius")]'


def _run(model_dir, tokenizer, server, response_length=256, **fields):
    overrides = [f"+actor_rollout_ref.rollout.custom.function_call.{k}={v}" for k, v in fields.items()]
    config = verl_config(model_dir, *overrides, response_length=response_length)
    kwargs = sample([{"role": "user", "content": QUESTION}], extra_info=dict(EXTRA_INFO), ground_truth=ANSWER)
    return run_loop("function_call", config, server, tokenizer, SAMPLING, kwargs)


@pytest.mark.parametrize("which", ["qwen", "smol"])
def test_gold_output_with_real_chat_templates(which, request):
    model_dir = request.getfixturevalue(f"{which}_dir")
    tok = request.getfixturevalue(f"{which}_tokenizer")
    eos = tok.eos_token
    server = ScriptedServer(tok, [GOLD + eos])
    out = _run(model_dir, tok, server)

    # the prompt: BFCL system prompt with the functions as JSON, then the user turn, through the chat template
    expected_prompt = tok.apply_chat_template(bfcl_messages(QUESTION, FUNCTIONS), add_generation_prompt=True,
                                              tokenize=True, return_dict=False)
    assert out.prompt_ids == expected_prompt
    assert '"name": "get_weather"' in tok.decode(out.prompt_ids)
    # one generation, all policy tokens, kept as generated (no re-tokenisation), logprobs carried
    assert out.response_mask == [1] * len(out.response_ids)
    assert out.response_ids == server.outputs[0].token_ids
    check_token_invariants(out, server, tok)
    info = out.extra_fields["function_call"]
    assert info == {"calls": [{"get_weather": {"city": "Paris", "unit": "celsius"}}], "failure": None,
                    "has_think": True, "language": "python", "format": "prompting"}
    assert sum(v for k, v in out.extra_fields["agent_metrics"].items() if k.startswith("failure/")) == 0
    assert out.extra_fields["agent_metrics"]["num_tool_calls"] == 1  # the decoded call counts as a tool call
    # the reward path: BFCL's AST match on the decoded response, as verl's reward manager would call it
    solution = tok.decode(out.response_ids, skip_special_tokens=True)
    assert bfcl_ast(solution, ANSWER, EXTRA_INFO)["score"] == 1.0


# one row per case: scripted output, config fields, the failure it must be classified as
CASES = [
    ("plain_text", "<think>No function fits.</think>\n\nI cannot answer that with these tools.", {}, "no_call"),
    ("think_only", "<think>Hmm.</think>", {}, "no_call"),
    ("empty_output", [], {}, "no_call"),
    ("unclosed_think", "<think>I will call get_weather(city='Paris')", {}, "parse_error"),
    ("broken_call", '<think>ok</think>\n\n[get_weather(city="Paris", unit=]', {}, "parse_error"),
    ("json_not_python", '<think>ok</think>\n\n{"name": "get_weather", "arguments": {"city": "Paris"}}', {},
     "parse_error"),
    ("hits_max_tokens", "<think>" + "let me think " * 50, {"max_tokens": 20}, "truncated_by_length"),
]


@pytest.mark.parametrize("name,script,fields,failure", CASES, ids=[c[0] for c in CASES])
def test_failure_categories(name, script, fields, failure, qwen_dir, qwen_tokenizer):
    tok = qwen_tokenizer
    turn = script if isinstance(script, list) else script + tok.eos_token * (failure != "truncated_by_length")
    server = ScriptedServer(tok, [turn])
    out = _run(qwen_dir, tok, server, **fields)
    info = out.extra_fields["function_call"]
    assert info["failure"] == failure and info["calls"] is None
    metrics = out.extra_fields["agent_metrics"]
    assert {k for k, v in metrics.items() if k.startswith("failure/") and v} == {f"failure/{failure}"}
    assert metrics["num_tool_calls"] == 0
    check_token_invariants(out, server, tok)
    solution = tok.decode(out.response_ids, skip_special_tokens=True)
    assert bfcl_ast(solution, ANSWER, EXTRA_INFO)["score"] == 0.0


def test_classify_and_config():
    assert classify('[get_weather(city="Paris")]', False) == ([{"get_weather": {"city": "Paris"}}], None)
    assert classify("```\n[f(a=1)]\n```", False)[0] == [{"f": {"a": 1}}]
    # a language-tagged fence fails the official decoder, and so the bfcl_ast reward: a parse error
    assert classify("```python\n[f(a=1)]\n```", False) == (None, "parse_error")
    assert classify("[f(a=1)]", True) == (None, "truncated_by_length")
    with pytest.raises(ValueError, match="unknown function_call language"):
        FunctionCallConfig(language="rust")


@pytest.mark.parametrize("bug", [KeyError("name"), AttributeError("'NoneType' object has no attribute 'id'"),
                                 lambda text, language: {"not": "a list"}], ids=["KeyError", "AttributeError", "shape"])
def test_a_decoder_bug_is_an_internal_error_not_the_models_format_failure(bug, qwen_dir, qwen_tokenizer,
                                                                          monkeypatch, caplog):
    """Issue 38 item 5: an exception out of OUR decoder (anything but its DecodeError), or a result that is not a
    call list, is counted as internal_error and logged with its traceback; the rollout goes on."""
    import agentic_verl.agent_loops.function_call_protocol as function_call

    def broken_decode(text, language):
        if isinstance(bug, Exception):
            raise bug
        return bug(text, language)

    monkeypatch.setattr(function_call, "decode", broken_decode)
    tok = qwen_tokenizer
    server = ScriptedServer(tok, [GOLD + tok.eos_token])
    with caplog.at_level("ERROR", logger=function_call.__name__):
        out = _run(qwen_dir, tok, server)
    info = out.extra_fields["function_call"]
    assert info["failure"] == "internal_error" and info["calls"] is None
    assert info["error"].startswith(("KeyError", "AttributeError", "TypeError"))
    metrics = out.extra_fields["agent_metrics"]
    assert {k for k, v in metrics.items() if k.startswith("failure/") and v} == {"failure/internal_error"}
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert record.exc_info is not None and "not the model's format error" in record.getMessage()
    check_token_invariants(out, server, tok)


# the model's format errors in each language: the Python decoder's DecodeError, the Java/JavaScript grammars'
# SyntaxFailure, and Java's {} / JavaScript's None for text that holds no call
FORMAT_ERRORS = [
    ("python", '[get_weather(city="Paris", unit=]', "parse_error"),
    ("java", "\ufffd(", "parse_error"),
    ("javascript", "get_weather(city=", "parse_error"),
    ("java", "\ufffd", "no_call"),
    ("javascript", "x", "no_call"),
]


@pytest.mark.parametrize("language,call,failure", FORMAT_ERRORS)
def test_a_model_format_error_stays_the_models_and_is_not_logged_as_a_bug(language, call, failure, qwen_dir,
                                                                          qwen_tokenizer, caplog):
    tok = qwen_tokenizer
    server = ScriptedServer(tok, ["<think>ok</think>\n\n" + call + tok.eos_token])
    config = verl_config(qwen_dir, response_length=256)
    kwargs = sample([{"role": "user", "content": QUESTION}], extra_info={**EXTRA_INFO, "language": language})
    with caplog.at_level("ERROR"):
        out = run_loop("function_call", config, server, tok, SAMPLING, kwargs)
    assert out.extra_fields["function_call"]["failure"] == failure
    assert "error" not in out.extra_fields["function_call"]
    assert out.extra_fields["agent_metrics"]["failure/internal_error"] == 0
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_smollm2_through_verl_agent_loop_worker(smol_dir, smol_tokenizer, smol_engine):
    """SmolLM2-135M answers for real through verl's AgentLoopWorker: whatever it writes is classified into
    exactly one outcome, and the batch's mask covers exactly the generated tokens."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto

    config = verl_config(smol_dir, "+actor_rollout_ref.rollout.custom.function_call.max_tokens=32",
                         prompt_length=512, response_length=32)
    server = EngineServer(smol_engine)
    worker = AgentLoopWorker(config, server)
    batch = DataProto.from_dict(non_tensors={
        "raw_prompt": np.array([None], dtype=object),
        "agent_name": np.array(["function_call"], dtype=object),
        "extra_info": np.array([dict(EXTRA_INFO)], dtype=object),
        "index": np.array([0]),
    })
    batch.non_tensor_batch["raw_prompt"][0] = [{"role": "user", "content": QUESTION}]
    result = run(worker.generate_sequences(batch))

    [call] = server.calls
    tok = smol_tokenizer
    prompt = result.batch["prompts"][0]
    attention = result.batch["attention_mask"][0]
    assert prompt[attention[: prompt.shape[0]].bool()].tolist() == call["prompt_ids"]
    assert call["prompt_ids"] == tok.apply_chat_template(bfcl_messages(QUESTION, FUNCTIONS), add_generation_prompt=True,
                                                         tokenize=True, return_dict=False)
    n = int(attention[prompt.shape[0]:].sum())
    generated = server.outputs[0].token_ids
    assert result.batch["responses"][0][:n].tolist() == generated[:32]
    assert result.batch["response_mask"][0].tolist() == [1] * n + [0] * (32 - n)
    info = result.non_tensor_batch["function_call"][0]
    assert (info["calls"] is None) == (info["failure"] is not None)
    assert info["failure"] in (None, "no_call", "parse_error", "truncated_by_length")


@pytest.mark.parametrize("module", ["function_call", "function_call_protocol"])
def test_doctests(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"agentic_verl.agent_loops.{module}"))
    assert result.attempted > 0 and result.failed == 0
