"""`data sft-steps`: RAG-R1's step-level cold-start samples cut from a real trajectory dump.

The trajectories come from the real `rag_r1` loop (scripted gold turns, real retrieval server on loopback, real
SmolLM2 tokenizer) with dumping on (AGENTIC_VERL_TRAJECTORY_DIR), and reward records appended the way `eval qa`
appends them: a correct 2-hop and 1-hop trajectory, a correct one with an invalid turn on the way, a wrong one
(reward 0) and one nobody scored.
"""

from __future__ import annotations

import asyncio
import json

import pandas as pd
import pytest

from agentic_verl.agent_loops.rag_r1 import INVALID_ACTION_OBSERVATION
from agentic_verl.agent_loops.trace import TRAJECTORY_DIR_ENV, append_record
from agentic_verl.cli import main as cli_main
from agentic_verl.data.rag_r1_parquet import to_rows
from agentic_verl.data.sft_steps import build_samples, cut_samples, trajectory_turn_texts, turn_kind
from agentic_verl.data.sft_trajectories import build_trajectories, end_of_turn_id, gold_turns
from agentic_verl.training.sft_dataset import PretokenizedSFTDataset
from agentic_verl.viewer.load import load_dumps

INVALID_TURN = "<think> I am not sure what to do. </think>"


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def _run_script(row, turns, tokenizer, retrieval_url):
    """The rag_r1 loop with `turns` as the policy's generations (what build_trajectories does for gold turns)."""
    from agentic_verl.agent_loops.in_process import (
        ScriptedServerManager,
        loop_trainer_config,
        make_agent_loop,
        sample_kwargs,
    )

    config = loop_trainer_config(1024, custom={"rag_r1": {"retrieval_url": retrieval_url, "topk": 3}})
    server = ScriptedServerManager(tokenizer, turns, end_of_turn_id(tokenizer))
    loop = make_agent_loop("rag_r1", tokenizer=tokenizer, server_manager=server, trainer_config=config)
    return await loop.run({"temperature": 1.0}, **sample_kwargs(row))


@pytest.fixture(scope="module")
def world(toy_world_dir, toy_retrieval_url, smollm2_tokenizer, tmp_path_factory):
    """The dump folder, the questions by role, their gold turns, the request ids, and the toy path's `steps` rows
    for the gold trajectories (built in the same run that dumped them)."""
    from agentic_verl.agent_loops.trace import TRACE_ID_FIELD
    from agentic_verl.agent_loops.trace_reward import reward_record

    questions = _jsonl(toy_world_dir / "train.jsonl")
    corpus = {d["id"]: d["contents"] for d in _jsonl(toy_world_dir / "corpus.jsonl")}
    one_hop = [q for q in questions if q["hops"] == 1]
    roles = {"two_hop": next(q for q in questions if q["hops"] == 2), "one_hop": one_hop[0],
             "unscored": one_hop[1], "wrong": one_hop[2], "detour": one_hop[3]}
    turns = {role: gold_turns(q, corpus)[0] for role, q in roles.items()}
    turns["wrong"][-1] = "<think> I could not find it. </think>\n<answer> Nowhere </answer>"
    turns["detour"] = [INVALID_TURN, *turns["detour"]]
    rows = {role: to_rows([q], split="train", data_source="toy_world", mode="sq")[0] for role, q in roles.items()}
    dump = tmp_path_factory.mktemp("dump")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(TRAJECTORY_DIR_ENV, str(dump))
        gold = ["two_hop", "one_hop", "unscored"]
        toy_rows, toy_stats = asyncio.run(build_trajectories(
            [rows[r] for r in gold], [roles[r] for r in gold], corpus, tokenizer=smollm2_tokenizer,
            retrieval_url=toy_retrieval_url, style="steps"))
        assert toy_stats["kept"] == 3, toy_stats

        async def scripted():
            return await asyncio.gather(*(_run_script(rows[r], turns[r], smollm2_tokenizer, toy_retrieval_url)
                                          for r in ("wrong", "detour")))

        outs = dict(zip(("wrong", "detour"), asyncio.run(scripted()), strict=True))
    ids = {role: next(r["request_id"] for r in toy_rows if r["id"] == roles[role]["id"]) for role in gold}
    ids.update({role: out.extra_fields[TRACE_ID_FIELD] for role, out in outs.items()})
    scores = {"two_hop": 1.0, "one_hop": 1.0, "wrong": 0.0, "detour": 1.0}  # "unscored": no reward record
    rewards = tmp_path_factory.mktemp("rewards")  # a reward manager may write from another process
    for role, em in scores.items():
        append_record(reward_record(ids[role], em, {"em": em, "gold": roles[role]["golden_answers"]}), str(rewards))
    return {"dump": dump, "rewards": rewards, "roles": roles, "turns": turns, "ids": ids, "toy_rows": toy_rows}


@pytest.fixture(scope="module")
def loaded(world):
    result = load_dumps([str(world["dump"]), str(world["rewards"])])
    assert len(result.trajectories) == 5 and result.rewards_joined == 4 and not result.unmatched_rewards
    return {t["request_id"]: t for t in result.trajectories}


@pytest.fixture(scope="module")
def steps(loaded):
    return build_samples(list(loaded.values()), style="steps")


def _previous_observation(record, turn_start):
    """The mask-0 tokens right before response position `turn_start` (written out here, not with mask_runs)."""
    end = start = turn_start
    while start > 0 and record["response_mask"][start - 1] == 0:
        start -= 1
    return record["response_ids"][start:end]


def _turn_spans(record):
    spans, mask = [], record["response_mask"]
    for i, m in enumerate(mask):
        if m and (i == 0 or not mask[i - 1]):
            spans.append([i, i + 1])
        elif m:
            spans[-1][1] = i + 1
    return spans


def test_two_hop_trajectory_gives_three_with_history_and_two_without(world, steps):
    rows, _ = steps
    mine = [r for r in rows if r["request_id"] == world["ids"]["two_hop"]]
    assert [(r["kind"], r["step"], r["history"]) for r in mine] == [
        ("search", 0, True),  # the first turn: with and without history are the same sample, emitted once
        ("search", 1, True), ("search", 1, False),
        ("answer", 2, True), ("answer", 2, False),
    ]


@pytest.mark.parametrize("role", ["two_hop", "one_hop", "detour"])
def test_each_sample_learns_exactly_its_turn_and_no_observation(role, world, loaded, steps, smollm2_tokenizer):
    tok = smollm2_tokenizer
    record = loaded[world["ids"][role]]
    prompt, response = record["prompt_ids"], record["response_ids"]
    spans = _turn_spans(record)
    gold = world["turns"][role]
    assert [tok.decode(response[a:b]) for a, b in spans] == gold  # the loop's turns are the scripted ones
    rows = [r for r in steps[0] if r["request_id"] == record["request_id"]]
    assert rows
    for row in rows:
        a, b = spans[row["step"]]
        target = [t for t, m in zip(row["input_ids"], row["loss_mask"], strict=True) if m]
        assert tok.decode(target) == gold[row["step"]]
        assert row["num_target_tokens"] == b - a == sum(row["loss_mask"])
        assert row["num_tokens"] == len(row["input_ids"]) == len(row["loss_mask"])
        if row["history"]:
            # the trajectory's own prefix, token for token; the loss exactly on turn `step`'s positions
            assert row["input_ids"] == prompt + response[:b]
            assert row["loss_mask"] == [0] * (len(prompt) + a) + [1] * (b - a)
            assert all(record["response_mask"][i] == 1 for i in range(a, b))
        else:
            observation = _previous_observation(record, a)
            if role == "detour" and row["step"] == 1:  # right after the invalid turn: the loop's correction
                assert tok.decode(observation) == INVALID_ACTION_OBSERVATION
            else:  # the documents the step relies on
                assert tok.decode(observation).startswith("\n<information>\n")
            assert row["input_ids"] == prompt + observation + response[a:b]
            assert row["loss_mask"] == [0] * (len(prompt) + len(observation)) + [1] * (b - a)
        assert row["kind"] == ("answer" if "<answer>" in gold[row["step"]] else "search")


def test_an_invalid_turn_gets_no_sample_and_is_counted(world, loaded, steps):
    rows, stats = steps
    detour = [r for r in rows if r["request_id"] == world["ids"]["detour"]]
    # turn 0 is the invalid one; turn 1 (search) now has history, so it gets both samples
    assert [(r["kind"], r["step"], r["history"]) for r in detour] == [
        ("search", 1, True), ("search", 1, False), ("answer", 2, True), ("answer", 2, False)]
    assert stats["turns_without_action"] == 1


def test_wrong_and_unscored_trajectories_are_dropped_and_counted(world, steps):
    rows, stats = steps
    assert {r["request_id"] for r in rows} == {world["ids"][r] for r in ("two_hop", "one_hop", "detour")}
    assert stats["trajectories"] == 5 and stats["kept"] == 3
    assert stats["dropped"] == {"other_agent": 0, "no_reward": 1, "below_min_reward": 1, "no_samples": 0}
    # 2-hop: 5 samples, 1-hop: 2 turns -> 3, detour: 4
    assert stats["samples"] == len(rows) == 12
    assert stats["samples_by_kind"] == {"answer": 6, "search": 6} and stats["samples_without_history"] == 5
    assert stats["tokens"] == sum(r["num_tokens"] for r in rows)
    assert stats["target_tokens"] == sum(r["num_target_tokens"] for r in rows)
    # a lower bar keeps the wrong one too; the unscored one is never kept
    _, low = build_samples(load_dumps([str(world["dump"]), str(world["rewards"])]).trajectories, min_reward=0.0)
    assert low["kept"] == 4 and low["dropped"]["no_reward"] == 1


def test_the_toy_path_cuts_the_same_rows_from_its_own_run(world, steps):
    """sft-trajectories --style steps and sft-steps over its dump: one cutting code path, identical rows."""
    dump_rows = {(r["request_id"], r["step"], r["history"]): r for r in steps[0]}
    toy = [r for r in world["toy_rows"] if r["request_id"] != world["ids"]["unscored"]]
    assert len(toy) == 5 + 3
    for row in toy:
        cut = dump_rows[(row["request_id"], row["step"], row["history"])]
        assert (row["input_ids"], row["loss_mask"], row["kind"]) == (cut["input_ids"], cut["loss_mask"], cut["kind"])


def test_trajectory_style_is_one_row_with_every_valid_turn_in_the_loss(world, loaded):
    rows, stats = build_samples(list(loaded.values()), style="trajectory")
    assert stats["samples"] == stats["kept"] == 3 and stats["samples_by_kind"] == {"trajectory": 3}
    for row in rows:
        record = loaded[row["request_id"]]
        assert row["input_ids"] == record["prompt_ids"] + record["response_ids"]
        mask = list(record["response_mask"])
        if row["request_id"] == world["ids"]["detour"]:
            a, b = _turn_spans(record)[0]
            mask[a:b] = [0] * (b - a)  # the invalid turn stays in the input, out of the loss
        assert row["loss_mask"] == [0] * len(record["prompt_ids"]) + mask


def test_max_length_drops_and_counts_long_samples(loaded):
    rows, stats = build_samples(list(loaded.values()), style="steps")
    limit = sorted(r["num_tokens"] for r in rows)[len(rows) // 2]
    short, cut = build_samples(list(loaded.values()), style="steps", max_length=limit)
    assert short and all(r["num_tokens"] <= limit for r in short)
    assert cut["samples_too_long"] == len(rows) - len(short) > 0


def test_agent_filter(loaded):
    _, stats = build_samples(list(loaded.values()), agent="search_r1")
    assert stats["dropped"]["other_agent"] == 5 and stats["samples"] == 0
    _, stats = build_samples(list(loaded.values()), agent=None)
    assert stats["kept"] == 3


def test_turn_text_falls_back_to_the_tokenizer_for_dumps_without_text(world, loaded, smollm2_tokenizer):
    record = dict(loaded[world["ids"]["two_hop"]])
    record["response_segments"] = [{**s, "text": None} for s in record["response_segments"]]
    with pytest.raises(ValueError, match="--tokenizer"):
        trajectory_turn_texts(record)
    texts = trajectory_turn_texts(record, lambda ids: smollm2_tokenizer.decode(ids, skip_special_tokens=False))
    assert texts == world["turns"]["two_hop"]


@pytest.mark.parametrize("text, kind", [
    ("<think> a </think>\n<search> Ada Bo </search>", "search"),  # think+search
    ("<think> a </think>\n<answer> Kilu </answer>", "answer"),  # think+answer
    ("<search> x </search> then <answer> y </answer>", "search"),  # the first complete block decides
    ("<answer> y </answer><search> x </search>", "answer"),
    ("<answer> Kilu", None),  # unclosed: neither
    ("<search> a </answer>", None),  # mismatched: neither
    (INVALID_TURN, None),  # no tag at all
])
def test_turn_kind_follows_the_loops_action_rule(text, kind):
    assert turn_kind(text) == kind


def test_cut_samples_on_a_hand_made_layout():
    # prompt [9]; turn 0 = [1, 2], observation [50, 51], turn 1 = [3], observation [52], turn 2 = [4, 5]
    response, mask = [1, 2, 50, 51, 3, 52, 4, 5], [1, 1, 0, 0, 1, 0, 1, 1]
    texts = ["<search> a </search>", "<search> b </search>", "<answer> c </answer>"]
    rows, counts = cut_samples([9], response, mask, texts)
    assert [(r["input_ids"], r["loss_mask"]) for r in rows] == [
        ([9, 1, 2], [0, 1, 1]),
        ([9, 1, 2, 50, 51, 3], [0, 0, 0, 0, 0, 1]), ([9, 50, 51, 3], [0, 0, 0, 1]),
        ([9, 1, 2, 50, 51, 3, 52, 4, 5], [0, 0, 0, 0, 0, 0, 0, 1, 1]), ([9, 52, 4, 5], [0, 0, 1, 1]),
    ]
    assert counts["turns_without_action"] == 0
    with pytest.raises(ValueError, match="2 turn texts for 3 policy turns"):
        cut_samples([9], response, mask, texts[:2])


def test_token_weights_land_on_their_token_in_every_row_that_learns_it():
    # the same layout; response index 4 (turn 1's only token) weighs 5, index 7 (turn 2's second) weighs 3
    response, mask = [1, 2, 50, 51, 3, 52, 4, 5], [1, 1, 0, 0, 1, 0, 1, 1]
    texts = ["<search> a </search>", "<search> b </search>", "<answer> c </answer>"]
    rows, _ = cut_samples([9], response, mask, texts, token_weights={4: 5, 7: 3})
    assert [r["loss_mask"] for r in rows] == [
        [0, 1, 1], [0, 0, 0, 0, 0, 5], [0, 0, 0, 5], [0, 0, 0, 0, 0, 0, 0, 1, 3], [0, 0, 1, 3]]
    assert [r["num_target_tokens"] for r in rows] == [2, 1, 1, 2, 2]  # tokens, not weights
    (row,), _ = cut_samples([9], response, mask, texts, style="trajectory", token_weights={4: 5, 7: 3})
    assert row["loss_mask"] == [0, 1, 1, 0, 0, 5, 0, 1, 3] and row["num_target_tokens"] == 5


@pytest.mark.parametrize("weights, error", [
    ({2: 4}, "index 2: not a policy token"),  # an observation token: the weight would never reach the loss
    ({8: 4}, "index 8: not a policy token"),
    ({-1: 4}, "index -1: not a policy token"),
    ({4: 0}, "integer >= 1, got 0"),
    ({4: 2.5}, "integer >= 1, got 2.5"),
    ({4: True}, "integer >= 1, got True"),
])
def test_bad_token_weights_are_errors(weights, error):
    response, mask = [1, 2, 50, 51, 3, 52, 4, 5], [1, 1, 0, 0, 1, 0, 1, 1]
    texts = ["<search> a </search>", "<search> b </search>", "<answer> c </answer>"]
    with pytest.raises(ValueError, match=error):
        cut_samples([9], response, mask, texts, token_weights=weights)


def test_cli_writes_parquet_and_stats_that_the_sft_dataset_reads(world, tmp_path, capsys):
    out = tmp_path / "sft.parquet"
    assert cli_main(["data", "sft-steps", str(world["dump"]), str(world["rewards"]), "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    assert printed == stats and stats["samples"] == 12 and stats["kept"] == 3 and stats["out"] == str(out)
    frame = pd.read_parquet(out)
    assert len(frame) == 12
    assert {"input_ids", "loss_mask", "num_tokens", "num_target_tokens", "request_id", "kind", "step",
            "history"} <= set(frame.columns)
    dataset = PretokenizedSFTDataset(str(out), tokenizer=None, config={"max_length": 4096})
    assert len(dataset) == 12
    assert dataset[4]["loss_mask"].tolist() == [int(m) for m in frame["loss_mask"][4]]

    long = tmp_path / "traj.parquet"
    assert cli_main(["data", "sft-steps", str(world["dump"]), str(world["rewards"]), "--out", str(long),
                     "--style", "trajectory", "--min-reward", "0"]) == 0
    assert len(pd.read_parquet(long)) == 4  # the wrong trajectory too, with --min-reward 0


def test_cli_errors(world, tmp_path, capsys):
    def error(*argv):
        assert cli_main(["data", "sft-steps", *argv, "--out", str(tmp_path / "x.parquet")]) == 2
        return capsys.readouterr().err

    assert "trajectory dump not found" in error(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    assert "no *.jsonl dump files" in error(str(tmp_path / "empty"))
    assert "no trajectory records" in error(str(world["rewards"]))  # reward records only
    assert "no reward records: was the dump written by `eval qa`" in error(str(world["dump"]))
    assert "1 no reward, 4 below min reward" in error(str(world["dump"]), str(world["rewards"]), "--min-reward", "2")
    assert "agent loop 'other'" in error(str(world["dump"]), str(world["rewards"]), "--agent", "other")
    assert not (tmp_path / "x.parquet").exists()


def test_docstring_examples_run():
    import doctest

    import agentic_verl.data.sft_steps as module

    result = doctest.testmod(module)
    assert result.attempted >= 2 and result.failed == 0
