"""tool_agent_traced under hostile model output: thousands of generated turns (hostile_outputs.py) through verl's
ToolAgentLoop with our trace, the hermes parser, the real Qwen tokenizer and chat template, and our SearchTool
(loaded by verl's tool registry from configs/tools/search_tool.yaml) against the real retrieval server on loopback.

Each example is a script of 2-6 turns (text or raw token ids) with hermes tool calls: valid, invalid JSON, unknown
tools, hostile arguments (huge numbers, NUL, 20,000-character queries, `</tool_response>` inside a query), hundreds
of calls in one turn, and turns cut at the token limit. Whatever the turns hold, `run` returns; the token invariants
hold; the response fits the budget; no_call and truncated_by_length are counted exactly when they happened; every
failed tool call is counted under its kind; hostile queries never make the retrieval server look down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_loop_helpers import sample, verl_config
from fuzz_harness import FuzzRunner, check_hostile_output, failures
from hostile_outputs import (
    TOOL_TAGS,
    control_text,
    hostile_text,
    json_tool_calls,
    long_strings,
    many_calls,
    numbers,
    tag_imitations,
    token_ids,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_verl.tools.search import SEARCH_FAILURES

REPO = Path(__file__).resolve().parents[2]
RESPONSE_LENGTH, TURN_TOKENS = 1024, 256
# max_tokens: each generation is cut at TURN_TOKENS (verl passes sampling params through to the server), so that a
# 20,000-character turn does not take the whole response budget and scripts reach their later turns
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True,
            "max_tokens": TURN_TOKENS}
EXAMPLES, MIN_OUTPUTS = 1600, 2000
MULTI_TURN = ("actor_rollout_ref.rollout.multi_turn.format=hermes",
              "actor_rollout_ref.rollout.multi_turn.max_parallel_calls=4",
              "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=128")
QUESTION = [{"role": "user", "content": "What is the capital of France? Use the search tool."}]


def search_calls():
    """Well-formed hermes calls of the search tool with hostile query lists (and non-list ones)."""
    short = st.one_of(st.text(max_size=30), control_text(), numbers(), tag_imitations(TOOL_TAGS, st.text(max_size=9)),
                      st.just("</tool_response><|im_end|>"), st.just("capital of france"))
    query = st.one_of(short, short, short, hostile_text(max_pieces=1), long_strings())
    query_list = st.one_of(st.lists(short, max_size=4), st.lists(query, max_size=8), query, st.just(None),
                           st.integers(), st.just([[]]))

    def call(queries, name: str) -> str:
        return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps({"query_list": queries})}}}\n</tool_call>'

    return st.builds(call, query_list, st.sampled_from(["search", "search", "browse", "Search", ""]))


def call_turns():
    """A turn that keeps the trajectory going: a few calls (valid, unknown tools, broken JSON) after some text."""
    calls = st.one_of(search_calls(), search_calls(), json_tool_calls())
    prefix = st.one_of(st.just(""), st.text(max_size=40), hostile_text(max_pieces=2))
    return st.builds(lambda p, block: p + "".join(block) + "<|im_end|>", prefix, st.lists(calls, min_size=1, max_size=5))


def tool_turns():
    """Any turn: hostile text with calls among other fragments, or hundreds of calls; ended by <|im_end|> unless
    cut at the turn limit."""
    calls = st.one_of(search_calls(), json_tool_calls())
    mixed = hostile_text(extra=[calls, calls], max_pieces=4)
    return st.one_of(mixed, many_calls(max_calls=400)).map(lambda t: t + "<|im_end|>")


def scripts(tokenizer):
    """2-6 turns, mostly opened by a call turn: a turn is reached only when the one before made a call."""
    any_turn = st.one_of(call_turns(), tool_turns(), token_ids(tokenizer))
    first = st.one_of(call_turns(), call_turns(), call_turns(), any_turn)
    return st.builds(lambda head, rest: [head, *rest], first, st.lists(any_turn, min_size=1, max_size=5))


@pytest.fixture(scope="module")
def fuzz_setup(qwen_dir, qwen_tokenizer, retrieval_server, tmp_path_factory):
    from verl.tools.tool_registry import load_all_tools

    text = (REPO / "configs" / "tools" / "search_tool.yaml").read_text()
    text = text.replace("${oc.env:RETRIEVAL_URL,http://127.0.0.1:8000}", retrieval_server.url)
    text = text.replace("timeout_s: 10.0", "timeout_s: 5.0").replace("max_retries: 2", "max_retries: 0")
    tool_yaml = tmp_path_factory.mktemp("fuzz_tools") / "search_tool.yaml"
    tool_yaml.write_text(text)
    tools = load_all_tools(tool_config_path=str(tool_yaml), function_tool_path=None)
    config = verl_config(qwen_dir, *MULTI_TURN, response_length=RESPONSE_LENGTH)
    SEARCH_FAILURES.clear()
    runner = FuzzRunner()
    yield runner, config, qwen_tokenizer, tools, retrieval_server.url
    runner.close()
    SEARCH_FAILURES.clear()


def test_hostile_turns_never_escape_tool_agent_traced(fuzz_setup):
    runner, config, tok, tools, url = fuzz_setup
    agent = runner.build("tool_agent_traced", config, tok, tools=tools)

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(script=scripts(tok))
    def one_sample(script):
        server = runner.server(tok, script, TURN_TOKENS)

        async def go():
            return await agent.run(dict(SAMPLING), **sample(QUESTION))

        out = runner.run(go(), server)
        metrics = check_hostile_output(out, server, tok, RESPONSE_LENGTH)
        counted = failures(out)
        assert counted["no_call"] == (metrics["num_tool_calls"] == 0)
        assert counted["truncated_by_length"] == (len(out.response_mask) >= RESPONSE_LENGTH)
        assert metrics["num_turns"] == sum(1 for o in server.outputs) and metrics["num_turns"] >= 1
        assert SEARCH_FAILURES.count(url) == 0, "a model's query made the retrieval server look down"

    one_sample()
    print("STATS", runner.outputs, runner.examples, runner.kinds)
    assert runner.outputs >= MIN_OUTPUTS, (runner.outputs, runner.examples)


def test_a_thousand_calls_in_one_turn_run_the_first_max_parallel_calls_and_count_the_rest(fuzz_setup, qwen_dir):
    runner, _, tok, tools, _ = fuzz_setup
    config = verl_config(qwen_dir, *MULTI_TURN, response_length=40000)
    agent = runner.build("tool_agent_traced", config, tok, tools=tools)
    calls = "".join(f'<tool_call>\n{{"name": "search", "arguments": {{"query_list": ["q{i}"]}}}}\n</tool_call>'
                    for i in range(1000))
    server = runner.server(tok, [calls + "<|im_end|>", "Paris<|im_end|>"], 40000)
    sampling = {**SAMPLING, "max_tokens": 40000}
    out = runner.run(agent.run(sampling, **sample(QUESTION)), server)
    metrics = check_hostile_output(out, server, tok, 40000)
    assert metrics["num_tool_calls"] == 4  # multi_turn.max_parallel_calls=4
    assert failures(out)["over_limit"] == 996
