"""Property-based fuzzing of the `bfcl_multi_turn` loop: thousands of hostile policy outputs (issue 38) through the
real loop (built as verl builds it, the Qwen chat template), the LIVE BFCL environment server (bfcl-eval's
simulators in `.venv-bfcl`, started once for the module) and the real reward (bfcl-eval's checker on that server).

A policy output is drawn from the generic hostile building blocks (tests/hostile_outputs.py) and from BFCL call-list
strategies of this file: `[f(a=1), g(b='x')]` with the question's own functions and unknown ones, arguments that are
non-finite or out-of-range numbers, 20,000-character strings, NUL and control characters, nested containers with
hostile keys; hundreds to thousands of calls in one step; broken brackets; lists cut mid-call; raw token ids that
decode to invalid UTF-8. Every example asserts: `run` returns (no exception), the token/mask invariants, the response
length bound, the loop's per-turn counts equal the trace's failure counts by kind, the environment never failed (the
live server takes whatever the model writes), and the reward is finite and judged."""

from __future__ import annotations

import asyncio
import functools
import math

import pytest
from agent_loop_helpers import ScriptedServer, build_loop, sample, verl_config
from bfcl_env.conftest import bfcl_env  # noqa: F401 (the live server the tests share)
from fuzz_harness import check_hostile_output
from hostile_outputs import (
    argument_values,
    brackets,
    control_text,
    cut_anywhere,
    hostile_text,
    long_strings,
    numbers,
    token_ids,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_verl.agent_loops import bfcl_multi_turn
from agentic_verl.eval.bfcl_data import load_multi_turn_questions, multi_turn_messages
from agentic_verl.rewards.bfcl import multi_turn as reward_module
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry

pytestmark = pytest.mark.bfcl_official
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
# File system, file system + messages, file system + tickets: no MathAPI, whose power/logarithm with a huge exponent
# or precision run for minutes in bfcl-eval's simulator (as in BFCL itself; docs/bfcl_env.md, Failure modes)
ENTRY_IDS = ("multi_turn_base_12", "multi_turn_base_19", "multi_turn_base_23")
# The prompt documents these functions only (a short prompt keeps 2,000 outputs fast); the session has all of its
# classes' methods, so the others run too (and their errors count as unknown_tool: not in the prompt)
DOCUMENTED = ("ls", "cd", "mkdir", "pwd", "touch", "echo", "cat", "send_message", "get_user_id", "ticket_login")
EXAMPLES = 260  # each a batch of BATCH trajectories, run at once (as verl's agent-loop worker runs them)
BATCH = 2
MIN_OUTPUTS = 2000  # generated policy outputs over the whole run (issue 38: at least 2,000 per loop)
RESPONSE_LENGTH = 32768
TERMINATIONS = (None, "step_limit", "max_tokens", "response_budget")


# -- BFCL call lists ---------------------------------------------------------------------------------
@st.composite
def _mostly(draw, common: st.SearchStrategy, rare: st.SearchStrategy, one_in: int):
    """`rare` once in `one_in` draws, else `common` (a weight without repeating strategies in one_of)."""
    return draw(rare) if draw(st.integers(0, one_in - 1)) == 0 else draw(common)


def hostile_argument() -> st.SearchStrategy[str]:
    """A BFCL argument value as Python source: mostly values that decode (non-finite and 400-digit numbers, hex
    integers, NUL / control characters, lone surrogates, 2,000- and, rarely, 20,000-character strings, containers
    with non-finite keys), so that the trajectory goes on; sometimes any hostile value (`hostile_outputs`), which
    may not decode at all (`9` x 5,000, `10**10**10`, brackets)."""
    decodable = st.one_of(
        st.sampled_from(["1e999", "-1e999", "1e999-1e999", "[1e999, -1e999]", "{1e999: 'k'}", "{'k': [1e999]}",
                         "0x" + "f" * 300, "-0x" + "f" * 3000, "'a\\x00b'", "'\\ud800'", "'\\x1b[31m'", "''",
                         "'document'", "'..'", "'/'", "True", "None", "[]", "{}", "[[[[[[[[1]]]]]]]]"]),
        st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-(10**400), 10**400).map(str),
        control_text().map(repr), long_strings(2_000).map(repr))
    huge = st.sampled_from(["a", "(", "漢", "\x00", "'"]).map(lambda unit: repr(unit * 20_000))
    scalar = _mostly(_mostly(decodable, huge, 40), st.one_of(numbers(), argument_values()), 8)
    return st.one_of(scalar, st.lists(scalar, max_size=3).map(lambda v: "[" + ", ".join(v) + "]"),
                     st.tuples(scalar, scalar).map(lambda kv: "{" + f"{kv[0]}: {kv[1]}" + "}"))


def bfcl_call(names: list[str]) -> st.SearchStrategy[str]:
    """One call: one of the question's functions (or an unknown name) with hostile keyword arguments."""
    name = _mostly(st.sampled_from(names), st.sampled_from(["unknown_fn", "exit", "__import__", "eval"]), 5)
    keyword = st.sampled_from(["folder", "file_name", "dir_name", "content", "path", "x", "recursive"])
    args = st.lists(st.tuples(keyword, hostile_argument()), max_size=2, unique_by=lambda kv: kv[0])
    return st.builds(lambda n, a: f"{n}({', '.join(f'{k}={v}' for k, v in a)})", name, args)


def call_list(names: list[str]) -> st.SearchStrategy[str]:
    return st.lists(bfcl_call(names), min_size=1, max_size=4).map(lambda calls: "[" + ", ".join(calls) + "]")


def many_calls(names: list[str]) -> st.SearchStrategy[str]:
    """Hundreds to thousands of (cheap) calls in one step."""
    cheap = [n for n in ("pwd", "ls", "get_user_id") if n in names] or names[:1]
    return st.builds(lambda name, n: "[" + ", ".join(f"{name}()" for _ in range(n)) + "]",
                     st.sampled_from(cheap), st.integers(129, 1500))


def broken(calls: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Call lists with broken brackets: cut mid-call, unbalanced, nested in brackets."""
    return st.one_of(cut_anywhere(calls), st.builds(lambda b, c: b + c, brackets(), calls),
                     calls.map(lambda text: text.replace(")", "", 1)), calls.map(lambda text: "[" * 50 + text))


def step_text(names: list[str]) -> st.SearchStrategy[str]:
    """The text after an optional reasoning block: mostly call lists (the trajectory goes on), else anything."""
    calls = call_list(names)
    other = st.one_of(many_calls(names), broken(calls), _mostly(broken(calls), hostile_text(extra=[calls]), 3))
    think = st.sampled_from(["", "<think>plan</think>\n\n", "<think>", "</think>", "<think><think>x</think>"])
    return st.builds(lambda t, b: t + b, think, _mostly(calls, other, 3))


def policy_outputs(tokenizer, names: list[str]) -> st.SearchStrategy[list[list[int]]]:
    """A script of 8-12 steps, each token ids: text with EOS (or, rarely, cut without it, which ends the
    trajectory), or raw token ids (invalid UTF-8, special tokens, ids beyond the vocabulary) with EOS."""
    eos = tokenizer.eos_token_id
    encode = functools.lru_cache(maxsize=4096)(lambda t: tuple(tokenizer.encode(t, add_special_tokens=False)))
    text = step_text(names).map(lambda t: list(encode(t)))  # big pieces repeat: encode each once
    step = st.one_of(_mostly(text.map(lambda ids: ids + [eos]), token_ids(tokenizer, max_pieces=4).map(
        lambda ids: ids + [eos]), 10), _mostly(text.map(lambda ids: ids + [eos]), text, 20))
    return st.lists(step, min_size=8, max_size=12)


# -- the environment and the question ----------------------------------------------------------------
@pytest.fixture(scope="module")
def rows() -> list[tuple[dict, list[dict]]]:
    by_id = {q["id"]: q["entry"] for q in load_multi_turn_questions(["multi_turn_base"])}
    rows = []
    for entry_id in ENTRY_IDS:
        entry = {**by_id[entry_id], "function": [doc for doc in by_id[entry_id]["function"] if doc["name"] in DOCUMENTED]}
        rows.append((entry, multi_turn_messages(parse_entry(entry, need_ground_truth=True), "funreason")))
    return rows


class _Slot:
    """The server_manager of a loop object built once (hydra's instantiate costs more than an example): it serves
    the current example's scripted server."""

    current: ScriptedServer | None = None

    async def generate(self, request_id, **kwargs):
        return await self.current.generate(request_id, **kwargs)


def check_outcome(out, server, tokenizer, entry: dict) -> float:
    """The properties of one trajectory (beyond every loop's, `check_hostile_output`); returns its reward."""
    metrics = check_hostile_output(out, server, tokenizer, RESPONSE_LENGTH)
    record = out.extra_fields["bfcl_multi_turn"]
    turns = record["turns"]
    assert record["terminated"] in TERMINATIONS and record["env_failure"] is None, record["env_failure"]
    assert len(record["model_calls"]) == len(turns) <= len(entry["question"])
    # counts by kind: the trace's failures are the loop's per-turn counts
    assert metrics["failure/parse_error"] == sum(t["decode_failures"] for t in turns)
    assert metrics["failure/tool_error"] + metrics["failure/unknown_tool"] == sum(t["env_errors"] for t in turns)
    assert metrics["num_tool_calls"] == sum(t["calls"] for t in turns) == sum(
        len(step) for turn in record["model_calls"] for step in turn)
    assert (metrics["failure/truncated_by_length"] > 0) == (record["terminated"] in ("max_tokens", "response_budget"))
    assert sum(t["steps"] for t in turns) == len(server.calls)
    verdict = reward_module.bfcl_multi_turn("", None, {**entry, **out.extra_fields})
    assert math.isfinite(verdict["score"]) and verdict["score"] in (0.0, 1.0)
    assert verdict["score"] == 1.0 or verdict["error_type"], verdict
    return verdict["score"]


def fuzz_batches(config, tok, rows, outputs, examples: int, check_out=None) -> list[int]:
    """Run batches of BATCH trajectories drawn by hypothesis (`outputs`: a strategy of step scripts) through loops
    built once from `config`, on one event loop (the loop's environment client lives on it), checking each with
    `check_outcome` (and `check_out(out)`); returns how many of each script's outputs the loop asked for."""
    event_loop = asyncio.new_event_loop()
    generated = []

    async def build(slot):  # inside the event loop, as verl builds loops
        return build_loop("bfcl_multi_turn", config, slot, tok)

    slots = [_Slot() for _ in range(BATCH)]
    loops = [event_loop.run_until_complete(build(slot)) for slot in slots]

    async def run(position, row, script):
        entry, prompt = row
        server = slots[position].current = ScriptedServer(tok, list(script))
        out = await loops[position].run(dict(SAMPLING), **sample(prompt, extra_info=dict(entry)))
        return out, server

    async def run_batch(batch):
        return await asyncio.gather(*(run(position, rows[index], script)
                                      for position, (index, script) in enumerate(batch)))

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(batch=st.lists(st.tuples(st.integers(0, len(rows) - 1), outputs), min_size=BATCH, max_size=BATCH))
    def one(batch):
        results = event_loop.run_until_complete(run_batch(batch))
        for (index, script), (out, server) in zip(batch, results, strict=True):
            if check_out is not None:
                check_out(out)
            check_outcome(out, server, tok, rows[index][0])
            generated.append(min(len(server.calls), len(script)))  # the script's outputs the loop asked for

    try:
        bfcl_multi_turn._CLIENTS.clear()
        bfcl_multi_turn.ENV_FAILURES.clear()
        one()
    finally:
        event_loop.run_until_complete(asyncio.sleep(0))
        event_loop.close()
        bfcl_multi_turn._CLIENTS.clear()
    return generated


def test_hostile_policy_outputs_never_escape_the_loop(bfcl_env, rows, qwen_dir, qwen_tokenizer):  # noqa: F811
    tok = qwen_tokenizer
    custom = "+actor_rollout_ref.rollout.custom.bfcl_multi_turn"
    config = verl_config(qwen_dir, f"{custom}.env_url={bfcl_env.url}", f"{custom}.max_tokens_per_step=8192",
                         prompt_length=4096, response_length=RESPONSE_LENGTH)
    names = sorted({doc["name"] for entry, _ in rows for doc in entry["function"]} | {"rm", "mv", "grep"})
    generated = fuzz_batches(config, tok, rows, policy_outputs(tok, names), EXAMPLES)
    assert sum(generated) >= MIN_OUTPUTS, (sum(generated), len(generated))
    assert bfcl_multi_turn.ENV_FAILURES.count(bfcl_env.url) == 0
