"""Per-request sampling seeds: the same run draws the same seeds, every sample of a group and every generation its
own, greedy and caller-seeded requests untouched; checked on the seed helper and through the rag_r1 and
function_call loops as verl constructs them."""

from __future__ import annotations

import pytest
from agent_loop_helpers import ScriptedServer, run_loop, sample, verl_config

from agentic_verl.agent_loops import sampling_seeds
from agentic_verl.agent_loops.prompts import rag_r1_messages
from agentic_verl.agent_loops.sampling_seeds import start_trajectory

SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}


@pytest.fixture(autouse=True)
def fresh_counts():
    sampling_seeds.reset()
    yield
    sampling_seeds.reset()


class _Image:  # its repr holds a memory address, different in every run
    pass


def _group_seeds(rollout_config, rows, n=3, generations=2):
    return [[start_trajectory(rollout_config, row).params(SAMPLING)["seed"] for _ in range(generations)]
            for row in rows for _ in range(n)]


def test_a_run_repeats_its_seeds_and_every_sample_and_generation_has_its_own():
    rows = [sample([{"role": "user", "content": q}], index=i) for i, q in enumerate(["a?", "b?"])]
    first = _group_seeds({"seed": 42}, rows)
    sampling_seeds.reset()
    assert _group_seeds({"seed": 42}, rows) == first
    flat = [seed for trajectory in first for seed in trajectory]
    assert len(set(flat)) == len(flat)  # 2 samples x 3 in a group x 2 generations
    assert all(0 <= seed < 2**31 for seed in flat)
    later_step = _group_seeds({"seed": 42}, rows)  # the same samples again: new seeds
    assert not set(flat) & {seed for trajectory in later_step for seed in trajectory}
    sampling_seeds.reset()
    assert _group_seeds({"seed": 43}, rows) != first  # the rollout seed names the run


def test_objects_in_the_prompt_count_by_type_so_a_new_run_keys_the_same():
    row = sample([{"role": "user", "content": [{"type": "image", "image": _Image()}, {"type": "text", "text": "x"}]}])
    first = start_trajectory({"seed": 1}, row).params(SAMPLING)["seed"]
    sampling_seeds.reset()
    again = sample([{"role": "user", "content": [{"type": "image", "image": _Image()}, {"type": "text", "text": "x"}]}])
    assert start_trajectory({"seed": 1}, again).params(SAMPLING)["seed"] == first


def test_greedy_and_caller_seeded_requests_are_left_alone():
    row = sample([{"role": "user", "content": "q"}])
    seeds = start_trajectory({"seed": 0}, row)
    assert seeds.params({**SAMPLING, "temperature": 0.0}) == {**SAMPLING, "temperature": 0.0}
    assert seeds.params({**SAMPLING, "seed": 5})["seed"] == 5
    assert "seed" in seeds.params(SAMPLING)


def _rag_run(model_dir, tok, url, question="Who wrote Hamlet"):
    script = ["<search> who wrote hamlet </search>", "<answer> Shakespeare </answer>" + tok.eos_token]
    server = ScriptedServer(tok, script)
    config = verl_config(model_dir, f"+actor_rollout_ref.rollout.custom.rag_r1.retrieval_url={url}",
                         "+actor_rollout_ref.rollout.custom.rag_r1.retrieval_max_retries=0")
    run_loop("rag_r1", config, server, tok, SAMPLING, sample(rag_r1_messages(question, mode="sq")))
    return [call["sampling_params"]["seed"] for call in server.calls]


def test_rag_r1_requests_carry_the_seeds_of_their_sample_and_turn(smol_dir, smol_tokenizer, retrieval_server):
    group = [_rag_run(smol_dir, smol_tokenizer, retrieval_server.url) for _ in range(2)]
    assert [len(seeds) for seeds in group] == [2, 2]
    assert len({seed for seeds in group for seed in seeds}) == 4
    sampling_seeds.reset()
    assert [_rag_run(smol_dir, smol_tokenizer, retrieval_server.url) for _ in range(2)] == group
    assert _rag_run(smol_dir, smol_tokenizer, retrieval_server.url, "Where is Paris") not in group


def test_function_call_request_carries_a_seed_that_repeats(smol_dir, smol_tokenizer):
    def seed_of_one_run():
        server = ScriptedServer(smol_tokenizer, ["[f()]" + smol_tokenizer.eos_token])
        kwargs = sample([{"role": "user", "content": "Call f."}], extra_info={"functions": "[]"})
        run_loop("function_call", verl_config(smol_dir), server, smol_tokenizer, SAMPLING, kwargs)
        return server.calls[0]["sampling_params"]["seed"]

    first, second = seed_of_one_run(), seed_of_one_run()
    assert first != second
    sampling_seeds.reset()
    assert [seed_of_one_run(), seed_of_one_run()] == [first, second]
