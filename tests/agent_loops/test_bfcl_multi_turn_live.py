"""bfcl_multi_turn end to end on CPU without a model: the real loop (built as verl builds it, the Qwen chat template)
driven by a scripted policy that writes BFCL's ground-truth calls as model text, against the LIVE BFCL environment
server (bfcl-eval's simulators in `.venv-bfcl`), then the real reward (reward_fns/bfcl_multi_turn.py through verl's
loader) through the real client: bfcl-eval's multi-turn checker must accept the gold trajectory and reject a
trajectory with one call changed with the error type bfcl-eval's checker, run directly, gives.

The questions are BFCL's own multi_turn_base / multi_turn_miss_func entries in the loop's row schema (`eval bfcl`'s
loader, agentic_verl/eval/bfcl_data.py, with the loop's training prompt): BFCL's test questions, used here to test,
never to train."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from agent_loop_helpers import ScriptedServer, run_loop, sample, verl_config
from agent_loop_invariants import check_token_invariants

from agentic_verl.agent_loops import bfcl_multi_turn
from agentic_verl.bfcl_env.protocol import keyword_call
from agentic_verl.bfcl_env.venv import available, ensure_venv
from agentic_verl.eval.bfcl_data import load_multi_turn_questions, multi_turn_messages
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry
from agentic_verl.rewards.bfcl.render import render_calls

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))  # bfcl_mt_lengths
sys.path.insert(0, str(REPO / "scripts" / "agreement"))
from _bfcl_mt_cases import official_checks  # noqa: E402  (bfcl-eval's checker run directly, in .venv-bfcl)

pytestmark = [pytest.mark.bfcl_official, pytest.mark.skipif(not available(), reason="no .venv-bfcl (make bfcl-venv)")]

SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
# a file system + tickets, the vehicle with positional ground truths and floats, travel + tickets, trading
BASE_IDS = ["multi_turn_base_2", "multi_turn_base_55", "multi_turn_base_152", "multi_turn_base_102"]
DONE = "Done."
CANNOT = "None of the functions I have can do that."


@pytest.fixture(scope="module")
def live_env(tmp_path_factory):
    ensure_venv()
    from agentic_verl.bfcl_env.process import BfclEnvProcess

    log = tmp_path_factory.mktemp("bfcl_env_live") / "server.log"
    with BfclEnvProcess(log_path=log) as server:
        yield server
    assert server.process.returncode == 0, log.read_text()[-3000:]


@pytest.fixture(autouse=True)
def _fresh_clients():
    bfcl_multi_turn._CLIENTS.clear()  # the loop's clients belong to event loops that asyncio.run closes
    yield
    bfcl_multi_turn._CLIENTS.clear()


def load_entry(category: str, entry_id: str) -> dict:
    """One BFCL question in the loop's row schema (function docs of its classes, ground truth beside)."""
    [entry] = [q["entry"] for q in load_multi_turn_questions([category]) if q["id"] == entry_id]
    return entry


def bfcl_row(entry: dict) -> dict:
    """A `bfcl_multi_turn` row of a BFCL question, with the loop's training prompt (for these tests only)."""
    prompt = multi_turn_messages(parse_entry(entry, need_ground_truth=True), "funreason")
    return {"data_source": "bfcl_multi_turn_test", "prompt": prompt, "extra_info": entry,
            "reward_model": {"style": "rule", "ground_truth": json.dumps(entry["ground_truth"])}}


def health(env) -> dict:
    import httpx

    return httpx.get(env.url + "/health", timeout=10).json()


def gold_calls(entry: dict) -> list[list[dict]]:
    """The ground truth per turn as decoded calls `{"name", "arguments"}` (positional arguments named by the docs)."""
    order = {doc["name"]: list(doc["parameters"]["properties"]) for doc in entry["function"]}
    return [[keyword_call(text, order) for text in turn] for turn in entry["ground_truth"]]


def script(turns: list[list[dict]], eos: str) -> tuple[list[str], list[int]]:
    """The policy's messages: per turn, one step writing the turn's calls in the prompt's format (reasoning, then
    `[f(a=1), g(b='x')]`) and an answer without a call that ends the turn; a turn without calls only answers.
    Also returns the index of each turn's first message."""
    messages, starts = [], []
    for calls in turns:
        starts.append(len(messages))
        if calls:
            text = render_calls([{call["name"]: call["arguments"]} for call in calls])
            messages += [f"<think>The request needs {len(calls)} call(s).</think>\n\n{text}{eos}", DONE + eos]
        else:
            messages.append(f"<think>No function fits.</think>\n\n{CANNOT}{eos}")
    return messages, starts


def run_entry(env, model_dir, tok, row: dict, messages: list[str]):
    config = verl_config(model_dir, f"+actor_rollout_ref.rollout.custom.bfcl_multi_turn.env_url={env.url}",
                         prompt_length=16384, response_length=16384)
    server = ScriptedServer(tok, list(messages))
    kwargs = sample(row["prompt"], extra_info=dict(row["extra_info"]))
    out = run_loop("bfcl_multi_turn", config, server, tok, SAMPLING, kwargs)
    return out, server


def score(row: dict, out) -> dict:
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": str(REPO / "reward_fns/bfcl_multi_turn.py"), "name": "compute_score", "reward_kwargs": {}}}})
    compute_score = get_custom_reward_fn(config)
    # what verl's reward manager passes: the row's extra_info with the loop's extra_fields merged in
    return compute_score(data_source=row["data_source"], solution_str="", extra_info={**row["extra_info"],
                         **out.extra_fields}, ground_truth=row["reward_model"]["ground_truth"])


def as_strings(model_calls: list) -> list:
    """Decoded calls [turn][step][call] as the call strings bfcl-eval's checker takes (written independently of the
    server's rendering)."""
    return [[[f"{c['name']}({', '.join(f'{k}={v!r}' for k, v in c['arguments'].items())})" for c in step]
             for step in turn] for turn in model_calls]


@pytest.mark.parametrize("entry_id", BASE_IDS)
def test_gold_trajectory_reaches_the_simulators_and_the_checker_accepts_it(entry_id, live_env, qwen_dir,
                                                                          qwen_tokenizer):
    entry = load_entry("multi_turn_base", entry_id)
    row, turns = bfcl_row(entry), gold_calls(entry)
    messages, _ = script(turns, qwen_tokenizer.eos_token)
    before = health(live_env)["stats"]
    out, server = run_entry(live_env, qwen_dir, qwen_tokenizer, row, messages)

    record = out.extra_fields["bfcl_multi_turn"]
    assert record["terminated"] is None and len(server.calls) == len(messages)
    assert record["model_calls"] == [[calls] if calls else [] for calls in turns]
    assert all(t["decode_failures"] == 0 for t in record["turns"])
    check_token_invariants(out, server, qwen_tokenizer)
    # every gold call ran on the simulators, in one session that the loop closed
    after = health(live_env)
    n_calls = sum(len(calls) for calls in turns)
    assert after["stats"]["calls_executed"] - before["calls_executed"] == n_calls
    assert after["stats"]["created"] - before["created"] == 1 and after["stats"]["closed"] - before["closed"] == 1
    assert after["sessions"] == 0

    result = score(row, out)
    assert result["score"] == 1.0 and result["error_type"] is None, result
    assert json.loads(result["bfcl_mt/per_turn"]) == [True] * len(turns)
    assert result["bfcl_mt/calls"] == n_calls and result["reward/bfcl_multi_turn/exceptions"] == 0.0


def _changed(turns: list[list[dict]]) -> tuple[list[list[dict]], int]:
    """The gold calls with the first string argument of the middle calling turn changed; and that turn."""
    changed = copy.deepcopy(turns)
    busy = [t for t, calls in enumerate(turns) if calls]
    for turn in busy[len(busy) // 2:] + busy[: len(busy) // 2]:
        for call in changed[turn]:
            strings = [k for k, v in call["arguments"].items() if isinstance(v, str)]
            if strings:
                call["arguments"][strings[0]] = "zz_changed"
                return changed, turn
    raise AssertionError("no string argument to change")


@pytest.mark.parametrize("entry_id", BASE_IDS[:3])
def test_one_changed_call_fails_with_the_error_type_of_bfcl_evals_checker(entry_id, live_env, qwen_dir,
                                                                         qwen_tokenizer):
    entry = load_entry("multi_turn_base", entry_id)
    row = bfcl_row(entry)
    turns, changed_turn = _changed(gold_calls(entry))
    messages, _ = script(turns, qwen_tokenizer.eos_token)
    out, _ = run_entry(live_env, qwen_dir, qwen_tokenizer, row, messages)
    model_calls = out.extra_fields["bfcl_multi_turn"]["model_calls"]
    assert model_calls == [[calls] if calls else [] for calls in turns]

    result = score(row, out)
    [official] = official_checks([(entry, "changed", as_strings(model_calls))])
    assert official["valid"] is False
    assert (result["score"], result["error_type"]) == (0.0, official["error_type"]), result
    assert result["error_type"].startswith("multi_turn:")
    per_turn = json.loads(result["bfcl_mt/per_turn"])
    assert per_turn[changed_turn] is False and all(per_turn[:changed_turn])
    assert result["bfcl_mt/first_failed_turn"] == changed_turn


def test_calls_the_simulators_refuse_are_error_outputs_and_the_verdict_is_bfcl_evals(live_env, qwen_dir,
                                                                                     qwen_tokenizer):
    """An unknown function and a call without its required argument, before the gold calls of turn 0: the real
    server answers BFCL's error outputs, the loop counts them (unknown_tool, tool_error), and the reward's verdict on
    the whole trajectory is the one bfcl-eval's checker gives run directly."""
    tok = qwen_tokenizer
    entry = load_entry("multi_turn_base", "multi_turn_base_2")
    row, turns = bfcl_row(entry), gold_calls(entry)
    wrong = [{"name": "no_such_function", "arguments": {"x": 1}}, {"name": "cd", "arguments": {}}]
    messages, _ = script(turns, tok.eos_token)
    messages.insert(0, render_calls([{c["name"]: c["arguments"]} for c in wrong]) + tok.eos_token)
    out, server = run_entry(live_env, qwen_dir, tok, row, messages)

    record = out.extra_fields["bfcl_multi_turn"]
    assert record["model_calls"][0] == [wrong, turns[0]]
    assert record["turns"][0]["env_errors"] == 2 and record["turns"][0]["calls"] == 2 + len(turns[0])
    tool_outputs = tok.decode(server.calls[1]["prompt_ids"])
    assert "Error during execution: name 'no_such_function' is not defined" in tool_outputs
    assert "Error during execution: GorillaFileSystem.cd() missing 1 required positional argument" in tool_outputs
    metrics = out.extra_fields["agent_metrics"]
    assert (metrics["failure/unknown_tool"], metrics["failure/tool_error"]) == (1.0, 1.0)

    result = score(row, out)
    [official] = official_checks([(entry, "errors", as_strings(record["model_calls"]))])
    assert (result["score"] == 1.0, result["error_type"]) == (official["valid"], official["error_type"]), result
    assert result["bfcl_mt/env_errors"] == 2.0


def test_miss_func_withholds_the_docs_until_the_turn_that_adds_them(live_env, qwen_dir, qwen_tokenizer):
    tok = qwen_tokenizer
    entry = load_entry("multi_turn_miss_func", "multi_turn_miss_func_1")
    row, turns = bfcl_row(entry), gold_calls(entry)
    ((added_at, withheld),) = ((int(k), v) for k, v in entry["missed_function"].items())
    assert withheld == ["mv"] and turns[added_at] and not entry["question"][added_at]
    messages, starts = script(turns, tok.eos_token)
    out, server = run_entry(live_env, qwen_dir, tok, row, messages)

    doc = json.dumps({"name": "mv"})[1:-1]  # `"name": "mv"`, as the function list prints it
    seen = [doc in tok.decode(call["prompt_ids"]) for call in server.calls]
    assert seen == [i >= starts[added_at] for i in range(len(messages))]
    assert "I have updated some more functions you can choose from" in tok.decode(server.calls[starts[added_at]]
                                                                                  ["prompt_ids"])
    assert out.extra_fields["bfcl_multi_turn"]["model_calls"] == [[calls] if calls else [] for calls in turns]
    check_token_invariants(out, server, tok)
    result = score(row, out)
    assert result["score"] == 1.0 and result["error_type"] is None, result

    # the same trajectory without an answer at the turn that adds the docs: BFCL's empty-turn verdict
    skipped = [calls if t != added_at else [] for t, calls in enumerate(turns)]
    out, _ = run_entry(live_env, qwen_dir, tok, row, script(skipped, tok.eos_token)[0])
    result = score(row, out)
    assert (result["score"], result["error_type"]) == (0.0, "multi_turn:empty_turn_model_response"), result
    assert json.loads(result["bfcl_mt/per_turn"])[added_at] is False


@pytest.mark.parametrize("category, entry_id", [("multi_turn_base", "multi_turn_base_2"),
                                                ("multi_turn_miss_func", "multi_turn_miss_func_1")])
def test_the_lengths_benchmark_measures_what_the_loop_produces(category, entry_id, live_env, qwen_dir,
                                                               qwen_tokenizer):
    """scripts/bfcl_mt_lengths.py renders a gold trajectory with the chat template instead of running the loop;
    the loop, scripted with the same assistant messages, gives the same response length but for 5 tokens of the
    rendering: the empty `<think>\n\n</think>\n\n` this Qwen template writes into a conversation's final assistant
    message (4) and the newline after the last <|im_end|> (1)."""
    import asyncio

    from bfcl_mt_lengths import _tokens, gold_conversation

    from agentic_verl.bfcl_env.client import BfclEnvClient

    tok = qwen_tokenizer
    row = bfcl_row(load_entry(category, entry_id))

    async def conversation():
        client = BfclEnvClient(live_env.url)
        try:
            return await gold_conversation(client, row["extra_info"])
        finally:
            await client.aclose()

    messages = asyncio.run(conversation())
    measured = _tokens(tok, messages, False) - _tokens(tok, row["prompt"], True)
    script = [m["content"] + tok.eos_token for m in messages[len(row["prompt"]):] if m["role"] == "assistant"]
    out, _ = run_entry(live_env, qwen_dir, tok, row, script)
    assert out.extra_fields["bfcl_multi_turn"]["terminated"] is None
    assert measured == len(out.response_ids) + 5


def test_generated_tasks_gold_trajectories_score_one_through_the_loop(live_env, qwen_dir, qwen_tokenizer, tmp_path):
    """`agentic-verl data bfcl-multi-turn`'s rows (one task of each kind) with the generator's gold assistant
    messages as the script: the loop executes exactly the generator's calls on the live server, and the reward
    (bfcl-eval's checker) gives 1.0: the generator, the loop, the server and the reward agree on the row schema."""
    import pandas as pd

    from agentic_verl.data.bfcl_multi_turn.dataset import write_dataset

    tok = qwen_tokenizer
    write_dataset(tmp_path, seed=3, count=4, kinds=["base", "miss_func", "miss_param", "long_context"])
    gold = {json.loads(line)["id"]: json.loads(line) for line in (tmp_path / "trajectories.jsonl").open()}
    rows = pd.read_parquet(tmp_path / "rl.parquet").to_dict("records")
    assert sorted(row["extra_info"]["kind"] for row in rows) == ["base", "long_context", "miss_func", "miss_param"]
    for row in rows:
        row["prompt"] = [dict(m) for m in row["prompt"]]
        trajectory = gold[row["extra_info"]["id"]]
        out, _ = run_entry(live_env, qwen_dir, tok, row,
                           [text + tok.eos_token for turn in trajectory["assistant"] for text in turn])
        record = out.extra_fields["bfcl_multi_turn"]
        assert record["terminated"] is None and record["model_calls"] == trajectory["calls"], row["extra_info"]["id"]
        result = score(row, out)
        assert (result["score"], result["error_type"]) == (1.0, None), (row["extra_info"]["id"], result)
