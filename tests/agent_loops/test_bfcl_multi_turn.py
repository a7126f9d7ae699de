"""bfcl_multi_turn: BFCL's multi-turn protocol, constructed as verl constructs agent loops, with the real Qwen and
SmolLM2 chat templates, scripted policy outputs, and an in-process fake of the BFCL environment client
(fake_bfcl_env.py); the reward on what the loop recorded, through verl's own loader of reward_fns/."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from agent_loop_helpers import ScriptedServer, build_loop, run_loop, sample, verl_config
from agent_loop_invariants import check_token_invariants, observation_texts
from fake_bfcl_env import CLASSES, FUNCTIONS, INITIAL_CONFIG, FakeBfclEnv, FakeEnvError

from agentic_verl.agent_loops import bfcl_multi_turn
from agentic_verl.agent_loops.prompts import bfcl_added_functions_message, bfcl_multi_turn_messages
from agentic_verl.rewards.bfcl import multi_turn as reward_module
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry

REPO = Path(__file__).resolve().parents[2]
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
ENV_URL = "http://127.0.0.1:9"  # never contacted: the fake stands in for the client
LS, LS_ROOT = {"name": "ls", "arguments": {}}, '{"current_directory_content": ["docs", "readme.md"]}'
TWO_TURNS = [[{"role": "user", "content": "Create todo.txt in the docs folder."}],
             [{"role": "user", "content": "What is in that folder now?"}]]


def row(question, ground_truth=None, missed=None, entry_id="multi_turn_base_0"):
    """(prompt, extra_info) of a bfcl_multi_turn row, the structured fields as JSON strings as the data writes them."""
    extra_info = {"id": entry_id, "question": json.dumps(question), "initial_config": json.dumps(INITIAL_CONFIG),
                  "involved_classes": list(CLASSES), "function": json.dumps(FUNCTIONS),
                  "ground_truth": json.dumps(ground_truth or [[] for _ in question])}
    if missed:
        extra_info["missed_function"] = json.dumps(missed)
    entry = parse_entry(extra_info)
    return bfcl_multi_turn_messages(entry.question[0], entry.functions_at_start()), extra_info


@pytest.fixture()
def env(monkeypatch):
    """The fake environment, handed out wherever the loop or the reward makes a BfclEnvClient."""
    fake = FakeBfclEnv()
    fake.clients_made = []

    def new_env_client(url, api_key_env, timeout_s):
        fake.clients_made.append((url, api_key_env, timeout_s))
        return fake

    monkeypatch.setattr(reward_module, "new_env_client", new_env_client)
    bfcl_multi_turn._CLIENTS.clear()
    bfcl_multi_turn.ENV_FAILURES.clear()
    yield fake
    bfcl_multi_turn._CLIENTS.clear()
    bfcl_multi_turn.ENV_FAILURES.clear()


def _config(model_dir, response_length=1024, **fields):
    fields = {"env_url": ENV_URL, **fields}
    overrides = [f"+actor_rollout_ref.rollout.custom.bfcl_multi_turn.{k}={v}" for k, v in fields.items()]
    return verl_config(model_dir, *overrides, prompt_length=2048, response_length=response_length)


def _run(model_dir, tok, server, prompt, extra_info, response_length=1024, hf_model_type="qwen2", **fields):
    config = _config(model_dir, response_length, **fields)
    kwargs = sample(prompt, extra_info=dict(extra_info))
    return run_loop("bfcl_multi_turn", config, server, tok, SAMPLING, kwargs, hf_model_type=hf_model_type)


def _texts(script, tok):
    """The assistant messages as BFCL's handler keeps them: the generated text, special tokens dropped."""
    return [tok.decode(tok.encode(s, add_special_tokens=False), skip_special_tokens=True) for s in script]


def test_two_turns_tokens_are_the_chat_template_of_bfcls_conversation(qwen_dir, qwen_tokenizer, env):
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    # no <think> here: this Qwen3 template drops the reasoning of earlier turns when it renders a conversation,
    # while the trajectory keeps every policy token as generated (test_reasoning_is_kept_as_generated)
    script = [
        "[ls()]" + eos,
        "[cd(folder='docs'), touch(file_name='todo.txt')]" + eos,
        "I created todo.txt in docs." + eos,
        "[ls()]" + eos,
        "docs holds notes.txt and todo.txt." + eos,
    ]
    server = ScriptedServer(tok, list(script))
    prompt, extra_info = row(TWO_TURNS)
    out = _run(qwen_dir, tok, server, prompt, extra_info)

    # the conversation bfcl-eval's prompting handler builds (tool outputs as `tool` messages, the next user turn
    # after the turn's answer), rendered by the model's chat template up to the last generation: exactly the
    # context the policy saw for it (the last message itself is the policy's, checked below)
    a = _texts(script, tok)
    ls_docs = '{"current_directory_content": ["notes.txt", "todo.txt"]}'
    conversation = prompt + [
        {"role": "assistant", "content": a[0]}, {"role": "tool", "content": LS_ROOT},
        {"role": "assistant", "content": a[1]}, {"role": "tool", "content": '{"current_working_directory": "docs"}'},
        {"role": "tool", "content": "None"},
        {"role": "assistant", "content": a[2]}, *TWO_TURNS[1],
        {"role": "assistant", "content": a[3]}, {"role": "tool", "content": ls_docs},
    ]
    rendered = tok.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    assert tok.decode(server.calls[-1]["prompt_ids"], skip_special_tokens=False) == rendered
    assert tok.decode(out.prompt_ids + out.response_ids, skip_special_tokens=False) == rendered + a[4] + eos
    assert out.prompt_ids == tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True,
                                                     return_dict=False)
    # policy tokens exactly as generated (logprobs carried), everything else masked with logprob 0
    check_token_invariants(out, server, tok)
    assert sum(out.response_mask) == sum(len(o.token_ids) for o in server.outputs)
    assert len(observation_texts(out, tok)) == 4  # 3 tool groups + the second user turn
    assert observation_texts(out, tok)[2].startswith("\n<|im_start|>user\nWhat is in that folder now?<|im_end|>\n")
    assert [c["sampling_params"]["max_tokens"] for c in server.calls][0] == 1024
    seeds = [c["sampling_params"]["seed"] for c in server.calls]  # each step samples with its own seed
    assert len(set(seeds)) == len(seeds) == 5
    assert "stop" not in server.calls[0]["sampling_params"]  # EOS ends a step

    record = out.extra_fields["bfcl_multi_turn"]
    assert record["model_calls"] == [
        [[LS], [{"name": "cd", "arguments": {"folder": "docs"}}, {"name": "touch", "arguments": {"file_name": "todo.txt"}}]],
        [[LS]],
    ]
    assert record["turns"] == [
        {"steps": 3, "calls": 3, "decode_failures": 0, "env_errors": 0, "end": "no_call"},
        {"steps": 2, "calls": 1, "decode_failures": 0, "env_errors": 0, "end": "no_call"},
    ]
    assert record["responses"] == [a[:3], a[3:]]  # every step's text, the answers that end the turns included
    assert record["terminated"] is None and record["num_turns"] == 2 and record["env_url"] == ENV_URL
    metrics = out.extra_fields["agent_metrics"]
    assert metrics["num_turns"] == 5 and metrics["num_tool_calls"] == 4
    assert (metrics["policy_tokens"], metrics["observation_tokens"]) == (out.response_mask.count(1),
                                                                          out.response_mask.count(0))
    assert sum(v for k, v in metrics.items() if k.startswith("failure/")) == 0
    assert out.num_turns == 1 + 5 + 3 + 1  # user, 5 assistant messages, 3 tool groups, the second user turn

    # the environment: one session from the entry, the executed calls in order, closed once
    assert env.created == [{"initial_config": INITIAL_CONFIG, "involved_classes": CLASSES, "long_context": False}]
    assert [calls for _, calls in env.executed] == [step for turn in record["model_calls"] for step in turn]
    assert {session for session, _ in env.executed} == {"session-0"} and env.closed == ["session-0"]

    # the reward, as verl runs it: the loop's extra_fields merged into extra_info, the checker's verdict mapped
    env.verdict = {"valid": True, "error_type": None, "per_turn": [True, True], "details": {}}
    compute_score = _verl_reward()
    merged = {**extra_info, **out.extra_fields}
    result = compute_score(data_source="bfcl", solution_str="", ground_truth=extra_info["ground_truth"],
                           extra_info=merged)
    assert result["score"] == 1.0 and result["error_type"] is None and result["bfcl_mt/turn_accuracy"] == 1.0
    assert result["bfcl_mt/calls"] == 4.0 and result["reward/bfcl_multi_turn/exceptions"] == 0.0
    [check] = env.checks
    assert check["model_calls"] == record["model_calls"]
    assert check["entry"] == parse_entry(extra_info).raw and check["entry"]["initial_config"] == INITIAL_CONFIG
    assert env.clients_made[-1] == (ENV_URL, None, 30.0)  # the reward checks on the loop's server


def test_reasoning_is_kept_as_generated(qwen_dir, qwen_tokenizer, env):
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    script = ["<think>Look first.</think>\n\n[ls()]" + eos, "<think>Seen.</think>\n\nTwo entries." + eos,
              "<think>Nothing to call.</think>\n\nSee above." + eos]
    server = ScriptedServer(tok, list(script))
    out = _run(qwen_dir, tok, server, *row(TWO_TURNS))
    check_token_invariants(out, server, tok)
    assert tok.decode(out.response_ids).count("<think>") == 3  # earlier turns' reasoning stays in the context
    assert out.extra_fields["bfcl_multi_turn"]["model_calls"] == [[[LS]], []]


def _verl_reward():
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": str(REPO / "reward_fns/bfcl_multi_turn.py"), "name": "compute_score", "reward_kwargs": {}}}})
    return get_custom_reward_fn(config)


def test_smollm2_template_through_the_llama_builder_verl_picks(smol_dir, smol_tokenizer, env):
    tok, eos = smol_tokenizer, smol_tokenizer.eos_token
    script = ["[ls()]" + eos, "Two entries." + eos, "[cd(folder='docs')]" + eos, "Done." + eos]
    server = ScriptedServer(tok, list(script))
    prompt, extra_info = row(TWO_TURNS)
    out = _run(smol_dir, tok, server, prompt, extra_info, hf_model_type="llama")
    check_token_invariants(out, server, tok)
    observations = observation_texts(out, tok)
    assert LS_ROOT in observations[0] and "What is in that folder now?" in observations[1]
    assert out.extra_fields["bfcl_multi_turn"]["model_calls"] == [[[LS]], [[{"name": "cd",
                                                                              "arguments": {"folder": "docs"}}]]]
    assert env.closed == ["session-0"]


def test_missed_function_docs_appear_only_from_the_turn_that_adds_them(qwen_dir, qwen_tokenizer, env):
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    question = [[{"role": "user", "content": "Rename readme.md to README.md."}], []]
    mv = {"name": "mv", "arguments": {"source": "readme.md", "destination": "README.md"}}
    server = ScriptedServer(tok, [
        "<think>No function renames.</think>\n\nI cannot rename files with these functions." + eos,
        "[mv(source='readme.md', destination='README.md')]" + eos,
        "Renamed." + eos,
    ])
    prompt, extra_info = row(question, missed={"1": ["mv"]}, entry_id="multi_turn_miss_func_0")
    out = _run(qwen_dir, tok, server, prompt, extra_info)

    mv_doc = json.dumps({"name": "mv"})[1:-1]
    seen = [mv_doc in tok.decode(call["prompt_ids"]) for call in server.calls]
    assert seen == [False, True, True]
    assert '"name": "cd"' in tok.decode(server.calls[0]["prompt_ids"])  # the others are there from the start
    added = tok.apply_chat_template([bfcl_added_functions_message([FUNCTIONS[3]])], tokenize=False)
    assert observation_texts(out, tok)[0] == "\n" + added + "<|im_start|>assistant\n"
    record = out.extra_fields["bfcl_multi_turn"]
    assert record["model_calls"] == [[], [[mv]]]
    assert record["turns"][0] == {"steps": 1, "calls": 0, "decode_failures": 0, "env_errors": 0, "end": "no_call"}
    check_token_invariants(out, server, tok)

    # a prompt that already documents the withheld function is refused before any session exists
    leaky = bfcl_multi_turn_messages(question[0], FUNCTIONS)
    with pytest.raises(ValueError, match=r"documents \['mv'\].*withholds"):
        _run(qwen_dir, tok, ScriptedServer(tok, []), leaky, extra_info)
    assert len(env.created) == 1

    # BFCL's own wording of the added docs (`eval bfcl --prompt bfcl`): the Python list its prompting handler prints
    server = ScriptedServer(tok, ["I cannot." + eos, "[mv(source='readme.md', destination='README.md')]" + eos,
                                  "Renamed." + eos])
    out = _run(qwen_dir, tok, server, prompt, extra_info, added_functions_format="python")
    added = observation_texts(out, tok)[0]
    assert f"{[FUNCTIONS[3]]}\nI have updated some more functions you can choose from. What about now?" in added
    assert json.dumps(FUNCTIONS[3], indent=4) not in added and out.extra_fields["bfcl_multi_turn"]["model_calls"] == [
        [], [[mv]]]
    with pytest.raises(ValueError, match="added_functions_format must be one of"):
        _run(qwen_dir, tok, ScriptedServer(tok, []), prompt, extra_info, added_functions_format="yaml")


def test_more_steps_than_the_limit_force_quit_and_the_reward_fails_it_unchecked(qwen_dir, qwen_tokenizer, env):
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    server = ScriptedServer(tok, ["[ls()]" + eos] * 3 + ["never asked" + eos])
    prompt, extra_info = row(TWO_TURNS)
    out = _run(qwen_dir, tok, server, prompt, extra_info, max_steps_per_turn=2)
    record = out.extra_fields["bfcl_multi_turn"]
    # as BFCL: the step after the limit still executes, then the whole trajectory stops
    assert len(server.calls) == 3 and len(env.executed) == 3
    assert record["model_calls"] == [[[LS], [LS], [LS]]]
    assert record["terminated"] == "step_limit" and record["turns"][0]["end"] == "step_limit"
    assert env.closed == ["session-0"]
    check_token_invariants(out, server, tok)

    result = _verl_reward()(data_source="bfcl", solution_str="", ground_truth=None,
                            extra_info={**extra_info, **out.extra_fields})
    assert (result["score"], result["error_type"]) == (0.0, "multi_turn:force_terminated")
    assert env.checks == []  # BFCL's runner fails a force-terminated entry without running the checker


@pytest.mark.parametrize("case", ["max_tokens", "response_budget"])
def test_running_out_of_tokens_ends_the_trajectory(case, qwen_dir, qwen_tokenizer, env):
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    if case == "max_tokens":  # one step longer than max_tokens_per_step
        server = ScriptedServer(tok, ["<think>" + "let me think " * 20, "never asked" + eos])
        out = _run(qwen_dir, tok, server, *row(TWO_TURNS), max_tokens_per_step=8)
        assert len(out.response_ids) == 8
    else:  # the first tool output uses up response_length
        server = ScriptedServer(tok, ["[ls()]" + eos, "never asked" + eos])
        out = _run(qwen_dir, tok, server, *row(TWO_TURNS), response_length=24)
        assert len(out.response_ids) == 24 and out.response_mask[-1] == 0
    record = out.extra_fields["bfcl_multi_turn"]
    assert len(server.calls) == 1 and record["terminated"] == case and record["turns"][-1]["end"] == case
    assert out.extra_fields["agent_metrics"]["failure/truncated_by_length"] == 1.0
    assert env.closed == ["session-0"]
    check_token_invariants(out, server, tok)
    result = _verl_reward()(data_source="bfcl", solution_str="", ground_truth=None,
                            extra_info={**row(TWO_TURNS)[1], **out.extra_fields})
    assert (result["score"], result["error_type"]) == (0.0, f"bfcl_multi_turn:{case}") and env.checks == []


def test_decode_failures_and_environment_errors_are_counted_per_turn(qwen_dir, qwen_tokenizer, env):
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    server = ScriptedServer(tok, [
        "[rm(file_name='readme.md')]" + eos,  # no such function: the environment answers an error
        "[cd(folder=]" + eos,  # an attempted call that does not decode: the turn ends, as in BFCL
        "[cd()]" + eos,  # a missing argument: an error output
        "ok" + eos,
    ])
    out = _run(qwen_dir, tok, server, *row(TWO_TURNS))
    record = out.extra_fields["bfcl_multi_turn"]
    assert record["model_calls"] == [[[{"name": "rm", "arguments": {"file_name": "readme.md"}}]],
                                     [[{"name": "cd", "arguments": {}}]]]
    assert record["turns"] == [
        {"steps": 2, "calls": 1, "decode_failures": 1, "env_errors": 1, "end": "parse_error"},
        {"steps": 2, "calls": 1, "decode_failures": 0, "env_errors": 1, "end": "no_call"},
    ]
    failures = {k: v for k, v in out.extra_fields["agent_metrics"].items() if k.startswith("failure/") and v}
    assert failures == {"failure/unknown_tool": 1.0, "failure/parse_error": 1.0, "failure/tool_error": 1.0}
    assert "Error during execution: name 'rm' is not defined" in observation_texts(out, tok)[0]
    check_token_invariants(out, server, tok)


class _RaisingServer:
    calls: list = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        raise RuntimeError("the rollout server died")


class _HangingServer:
    def __init__(self):
        self.called = asyncio.Event()

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        self.called.set()
        await asyncio.Event().wait()


@pytest.mark.parametrize("path", ["env_error", "server_error", "cancelled", "close_fails"])
def test_the_session_is_closed_on_every_path(path, qwen_dir, qwen_tokenizer, env):
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    prompt, extra_info = row(TWO_TURNS)
    config = _config(qwen_dir)
    kwargs = sample(prompt, extra_info=extra_info)
    server = ScriptedServer(tok, ["[ls()]" + eos, "done" + eos, "done" + eos])
    if path == "env_error":
        env.fail_execute_at = 0
    elif path == "server_error":
        server = _RaisingServer()
    elif path == "cancelled":
        server = _HangingServer()
    else:
        async def close(session_id):
            raise FakeEnvError("502: the environment server is gone")
        env.close = close

    async def go():
        loop = build_loop("bfcl_multi_turn", config, server, tok)
        task = asyncio.ensure_future(loop.run(dict(SAMPLING), **kwargs))
        if path == "cancelled":
            await server.called.wait()
            task.cancel()
        return await task

    if path in ("env_error", "close_fails"):  # the environment's failures never leave the loop
        out = asyncio.run(go())
        record = out.extra_fields["bfcl_multi_turn"]
        if path == "env_error":  # the trajectory ends, counted; the reward refuses to score it
            assert (record["terminated"], record["model_calls"]) == ("env_error", [[]])
            assert "FakeEnvError: 500 from the environment server" in record["env_failure"]
            assert out.extra_fields["agent_metrics"]["failure/tool_error"] == 1
            with pytest.raises(RuntimeError, match="environment failed during the rollout"):
                reward_module.bfcl_multi_turn("", None, {**extra_info, **out.extra_fields})
        else:  # a finished trajectory: its close failing is logged
            assert record["terminated"] is None and record["env_failure"] is None
    else:
        expected = {"server_error": RuntimeError, "cancelled": asyncio.CancelledError}[path]
        with pytest.raises(expected):
            asyncio.run(go())
    assert len(env.created) == 1
    if path == "close_fails":
        assert env.sessions  # the close was attempted (and failed, logged): the server's idle sweep closes it
    else:
        assert env.closed == ["session-0"] and not env.sessions


def test_config_and_row_errors_are_clear(qwen_dir, qwen_tokenizer, env):
    tok = qwen_tokenizer
    prompt, extra_info = row(TWO_TURNS)
    with pytest.raises(ValueError, match="needs env_url"):
        run_loop("bfcl_multi_turn", verl_config(qwen_dir), ScriptedServer(tok, []), tok, SAMPLING,
                 sample(prompt, extra_info=extra_info))
    with pytest.raises(ValueError, match="unknown BfclMultiTurnConfig key"):
        _run(qwen_dir, tok, ScriptedServer(tok, []), prompt, extra_info, max_turns=3)
    broken = {**extra_info, "question": json.dumps([TWO_TURNS[0], []])}  # an empty turn that adds nothing
    with pytest.raises(ValueError, match="turn 1 has no message and adds no functions"):
        _run(qwen_dir, tok, ScriptedServer(tok, []), prompt, broken)
    with pytest.raises(ValueError, match="more than rollout.prompt_length"):
        run_loop("bfcl_multi_turn", verl_config(qwen_dir, f"+actor_rollout_ref.rollout.custom.bfcl_multi_turn.env_url="
                                                          f"{ENV_URL}", prompt_length=64),
                 ScriptedServer(tok, []), tok, SAMPLING, sample(prompt, extra_info=extra_info))
    assert env.created == []  # every one of them failed before a session was opened
