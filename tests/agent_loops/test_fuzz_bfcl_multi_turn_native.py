"""`bfcl_multi_turn` with `format: native` under hostile policy output: hermes `<tool_call>` blocks with hostile
names and JSON argument values (non-finite and 400-digit numbers, NUL and control characters, 20,000-character
strings, nested containers), hundreds of blocks in one step, broken JSON and unclosed blocks, imitated tags, prose,
raw token ids; through the real loop, the Qwen chat template with tools, verl's hermes parser, the LIVE BFCL
environment server and the real reward. The properties are the prompting-mode fuzz's (`check_outcome`)."""

from __future__ import annotations

import functools
import json

import pytest
from agent_loop_helpers import verl_config
from bfcl_env.conftest import bfcl_env  # noqa: F401 (the live server the tests share)
from hostile_outputs import brackets, control_text, cut_anywhere, hostile_text, long_strings, numbers, token_ids
from hypothesis import strategies as st
from test_fuzz_bfcl_multi_turn import RESPONSE_LENGTH, _mostly, fuzz_batches, rows  # noqa: F401

from agentic_verl.agent_loops import bfcl_multi_turn

pytestmark = pytest.mark.bfcl_official
EXAMPLES = 80  # each a batch of two trajectories of 8-12 steps
MIN_OUTPUTS = 500


def json_value() -> st.SearchStrategy[str]:
    """A JSON argument value as text: mostly ones that parse (so the trajectory goes on), sometimes anything."""
    parses = st.one_of(
        st.sampled_from(["1e999", "-1e999", "NaN", "Infinity", '"a\\u0000b"', '"\\ud800"', '""', '"document"',
                         '".."', "true", "null", "[]", "{}", "[[[[[[[[1]]]]]]]]", '{"k": [1e999]}']),
        st.integers(-(10**400), 10**400).map(str), control_text().map(json.dumps), long_strings(2_000).map(json.dumps))
    return _mostly(parses, st.one_of(numbers(), brackets(max_depth=60), long_strings(20_000).map(json.dumps)), 8)


def hermes_call(names: list[str]) -> st.SearchStrategy[str]:
    name = _mostly(st.sampled_from(names), st.sampled_from(["unknown_fn", "exit", "__import__", ""]), 5)
    keyword = st.sampled_from(["folder", "file_name", "dir_name", "content", "path", "x"])
    args = st.lists(st.tuples(keyword, json_value()), max_size=2, unique_by=lambda kv: kv[0])
    return st.builds(lambda n, a: '<tool_call>\n{"name": ' + json.dumps(n) + ', "arguments": {'
                     + ", ".join(f"{json.dumps(k)}: {v}" for k, v in a) + "}}\n</tool_call>", name, args)


def step_text(names: list[str]) -> st.SearchStrategy[str]:
    calls = st.lists(hermes_call(names), min_size=1, max_size=4).map("\n".join)
    many = st.builds(lambda n: "\n".join(['<tool_call>\n{"name": "pwd", "arguments": {}}\n</tool_call>'] * n),
                     st.integers(129, 300))
    other = st.one_of(many, cut_anywhere(calls), calls.map(lambda t: t.replace("}", "", 1)),
                      st.sampled_from(['<tool_call>\n{"name": "ls", "arguments": [1]}\n</tool_call>',
                                       "<tool_call><tool_call></tool_call>", "</tool_call>", "<tool_call>"]),
                      hostile_text(max_pieces=3))
    think = st.sampled_from(["", "<think>plan</think>\n\n", "<think>", "</think>"])
    return st.builds(lambda t, b: t + b, think, _mostly(calls, other, 3))


def policy_outputs(tokenizer, names: list[str]):
    eos = tokenizer.eos_token_id
    encode = functools.lru_cache(maxsize=4096)(lambda t: tuple(tokenizer.encode(t, add_special_tokens=False)))
    text = step_text(names).map(lambda t: list(encode(t)))
    step = st.one_of(_mostly(text.map(lambda ids: ids + [eos]), token_ids(tokenizer, max_pieces=4).map(
        lambda ids: ids + [eos]), 10), _mostly(text.map(lambda ids: ids + [eos]), text, 20))
    return st.lists(step, min_size=8, max_size=12)


def test_hostile_native_outputs_never_escape_the_loop(bfcl_env, rows, qwen_dir, qwen_tokenizer):  # noqa: F811
    tok = qwen_tokenizer
    custom = "+actor_rollout_ref.rollout.custom.bfcl_multi_turn"
    config = verl_config(qwen_dir, f"{custom}.env_url={bfcl_env.url}", f"{custom}.max_tokens_per_step=8192",
                         f"{custom}.format=native", prompt_length=4096, response_length=RESPONSE_LENGTH)
    names = sorted({doc["name"] for entry, _ in rows for doc in entry["function"]} | {"rm", "mv"})

    def native(out):
        assert out.extra_fields["bfcl_multi_turn"]["format"] == "native"

    generated = fuzz_batches(config, tok, rows, policy_outputs(tok, names), EXAMPLES, native)
    assert sum(generated) >= MIN_OUTPUTS, (sum(generated), len(generated))
    assert bfcl_multi_turn.ENV_FAILURES.count(bfcl_env.url) == 0
