"""The anchor states our loops record for GiGPO (`gigpo_anchors` in extra_fields): one per policy turn of the
response, START for the first, the same digest where two trajectories' environment histories agree; and the
estimator takes the loops' outputs as they are (two bfcl_multi_turn trajectories of one group, with the fake
environment)."""

from __future__ import annotations

import numpy as np
import torch
from agent_loop_helpers import ScriptedServer, run_loop, sample, verl_config
from test_bfcl_multi_turn import ENV_URL, SAMPLING, TWO_TURNS, env, row  # noqa: F401 (env: the fake's fixture)

from agentic_verl.training.gigpo import GigpoSettings, step_advantages, turn_spans
from agentic_verl.training.gigpo_anchors import ANCHORS_FIELD, START


def _trajectory(model_dir, tok, script):
    config = verl_config(model_dir, f"+actor_rollout_ref.rollout.custom.bfcl_multi_turn.env_url={ENV_URL}",
                         prompt_length=2048, response_length=1024)
    prompt, extra_info = row(TWO_TURNS)
    return run_loop("bfcl_multi_turn", config, ScriptedServer(tok, list(script)), tok, SAMPLING,
                    sample(prompt, extra_info=dict(extra_info)))


def test_bfcl_multi_turn_anchors_follow_the_environments_history(qwen_dir, qwen_tokenizer, env):  # noqa: F811
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    same_start = ["[ls()]" + eos, "Two entries." + eos]
    a = _trajectory(qwen_dir, tok, [*same_start, "[ls()]" + eos, "Same." + eos])
    b = _trajectory(qwen_dir, tok, [*same_start, "[pwd()]" + eos, "Root." + eos])
    c = _trajectory(qwen_dir, tok, ["Nothing to do." + eos, "[ls()]" + eos, "Done." + eos])
    anchors = [out.extra_fields[ANCHORS_FIELD] for out in (a, b, c)]
    for out, row_anchors in zip((a, b, c), anchors, strict=True):  # one per policy turn, the first from the prompt
        assert len(row_anchors) == len(turn_spans(out.response_mask)) and row_anchors[0] == START
    assert anchors[0][:3] == anchors[1][:3]  # the same calls and outputs: the same states
    assert anchors[0][3] != anchors[1][3]  # after ls vs pwd
    assert anchors[2][1] != anchors[0][2]  # turn 2 reached without having listed the folder first

    # the estimator on the loops' own outputs: one group, padded to one width
    outs = (a, b, c)
    width = max(len(out.response_mask) for out in outs)
    mask = torch.zeros(3, width)
    rewards = torch.zeros(3, width)
    for i, out in enumerate(outs):
        mask[i, :len(out.response_mask)] = torch.tensor(out.response_mask, dtype=torch.float32)
        rewards[i, len(out.response_mask) - 1] = [1.0, 0.0, 0.0][i]
    step = step_advantages(rewards, mask, np.array(["q"] * 3, dtype=object), anchors, GigpoSettings(gamma=1.0))
    fourth_a, fourth_b = turn_spans(a.response_mask)[3][0], turn_spans(b.response_mask)[3][0]
    third_a, third_b = turn_spans(a.response_mask)[2][0], turn_spans(b.response_mask)[2][0]
    assert step[0, third_a] > 0 > step[1, third_b]  # same state, then success vs failure
    assert step[0, fourth_a] == 0 and step[1, fourth_b] == 0  # distinct states: groups of one


def test_function_call_records_its_one_turn(qwen_dir, qwen_tokenizer):
    from agentic_verl.agent_loops.prompts import bfcl_messages

    tok = qwen_tokenizer
    functions = [{"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {}}}]
    config = verl_config(qwen_dir)
    out = run_loop("function_call", config, ScriptedServer(tok, ["[f()]" + tok.eos_token]), tok, SAMPLING,
                   sample(bfcl_messages("q", functions), extra_info={"functions": functions}))
    assert out.extra_fields[ANCHORS_FIELD] == [START]


def test_rag_r1_anchors_are_the_passages_retrieved_so_far(qwen_dir, qwen_tokenizer, retrieval_server):
    """Two trajectories that searched the same thing reach the same state; an empty generation adds no anchor (the
    anchors stay one per run of policy tokens)."""
    tok, eos = qwen_tokenizer, qwen_tokenizer.eos_token
    config = verl_config(qwen_dir, f"+actor_rollout_ref.rollout.custom.rag_r1.retrieval_url={retrieval_server.url}",
                         "+actor_rollout_ref.rollout.custom.rag_r1.mode=sq")
    outs = []
    for script in (["<search>capital of france</search>", "<answer>Paris</answer>" + eos],
                   ["<search>capital of france</search>", "", "<answer>Paris</answer>" + eos],
                   ["<search>who wrote hamlet</search>", "<answer>x</answer>" + eos]):
        outs.append(run_loop("rag_r1", config, ScriptedServer(tok, script), tok, SAMPLING,
                             sample([{"role": "user", "content": "Capital of France?"}])))
    anchors = [out.extra_fields[ANCHORS_FIELD] for out in outs]
    for out, row_anchors in zip(outs, anchors, strict=True):
        assert len(row_anchors) == len(turn_spans(out.response_mask)) and row_anchors[0] == START
    assert anchors[0][1] != START and anchors[2][1] != anchors[0][1]  # other passages, another state
