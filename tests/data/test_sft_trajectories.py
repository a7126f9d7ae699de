"""SFT trajectories: the rag_r1 loop's own layout, real retrieval, observations out of the loss (real SmolLM2 tokenizer)."""

from __future__ import annotations

import asyncio
import json
import re

import pandas as pd
import pytest

from agentic_verl.cli import main as cli_main
from agentic_verl.data.rag_r1_parquet import to_rows
from agentic_verl.data.sft_trajectories import build_trajectories, end_of_turn_id, gold_turns
from agentic_verl.training.sft_dataset import PretokenizedSFTDataset

_OBSERVATION_RE = re.compile(r"\n<information>\n.*?\n</information>\n", re.DOTALL)


def _questions(world_dir, split="train"):
    return [json.loads(line) for line in (world_dir / f"{split}.jsonl").read_text().splitlines()]


def _corpus(world_dir):
    docs = [json.loads(line) for line in (world_dir / "corpus.jsonl").read_text().splitlines()]
    return {d["id"]: d["contents"] for d in docs}


@pytest.fixture(scope="module")
def sft_parquet(toy_world_dir, toy_retrieval_url, smollm2_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("sft") / "sft.parquet"
    assert cli_main(["data", "sft-trajectories", "--world", str(toy_world_dir), "--retrieval-url", toy_retrieval_url,
                     "--tokenizer", str(smollm2_dir), "--out", str(out)]) == 0
    return out


def test_every_train_question_gets_a_trajectory(sft_parquet, toy_world_dir):
    frame = pd.read_parquet(sft_parquet)
    stats = json.loads(sft_parquet.with_suffix(".stats.json").read_text())
    questions = _questions(toy_world_dir)
    assert stats["questions"] == len(questions)
    assert stats["kept"] == len(frame) >= 0.9 * len(questions)  # BM25 on entity names almost never misses
    assert set(frame["hops"]) == {1, 2}


def test_loss_mask_is_zero_exactly_on_prompt_and_observation_tokens(sft_parquet, smollm2_tokenizer):
    tok = smollm2_tokenizer
    frame = pd.read_parquet(sft_parquet)
    for row in frame.itertuples():
        ids, mask = [int(t) for t in row.input_ids], [int(m) for m in row.loss_mask]
        prompt_len = mask.index(1)
        prompt = tok.apply_chat_template(
            [{"role": "user", "content": tok.decode(ids[:prompt_len]).split("<|im_start|>user\n")[1].split(
                "<|im_end|>")[0]}], add_generation_prompt=True, tokenize=False)
        assert tok.decode(ids[:prompt_len]) == prompt  # the prompt is the chat template with generation prompt
        # character span of every token of the response, then where the observations are in the text
        pieces = [tok.decode(ids[prompt_len:i + 1]) for i in range(prompt_len, len(ids))]
        ends = [len(p) for p in pieces]
        text = pieces[-1]
        spans = [m.span() for m in _OBSERVATION_RE.finditer(text)]
        assert len(spans) == row.hops  # one search (and one observation) per hop
        for k, end in enumerate(ends):
            start = ends[k - 1] if k else 0
            inside = any(a <= start and end <= b for a, b in spans)
            assert mask[prompt_len + k] == (0 if inside else 1), (row.id, k, text[start:end])


def test_targets_are_the_gold_turns_and_end_with_the_answer(sft_parquet, smollm2_tokenizer, toy_world_dir):
    tok = smollm2_tokenizer
    corpus = _corpus(toy_world_dir)
    by_id = {q["id"]: q for q in _questions(toy_world_dir)}
    for row in pd.read_parquet(sft_parquet).itertuples():
        target = [int(t) for t, m in zip(row.input_ids, row.loss_mask, strict=True) if m]
        turns, _ = gold_turns(by_id[row.id], corpus)
        assert tok.decode(target) == "".join(turns)  # the loop cut the EOS after </answer>, as at rollout time
        assert target[-1] != end_of_turn_id(tok)
        assert f"<answer> {row.golden_answers[0]} </answer>" in tok.decode(target)


def test_verl_sft_dataset_reads_the_rows_unchanged(sft_parquet):
    from omegaconf import OmegaConf

    frame = pd.read_parquet(sft_parquet)
    config = OmegaConf.create({"pad_mode": "no_padding", "max_length": 2048, "truncation": "error"})
    dataset = PretokenizedSFTDataset(str(sft_parquet), tokenizer=None, config=config)
    assert len(dataset) == len(frame)
    assert dataset[3]["loss_mask"].tolist() == [int(m) for m in frame["loss_mask"][3]]


@pytest.mark.parametrize(
    "texts, question, expected",
    [
        # one hop: search the subject, copy the sentence with the answer
        ({"1": "Ada Bo\nAda Bo is a poet who was born in Kilu. Ada Bo works for Zed Labs."},
         {"supporting_ids": ["1"], "golden_answers": ["Kilu"]},
         ["<think> I need to find information about Ada Bo. </think>\n<search> Ada Bo </search>",
          "<think> Ada Bo is a poet who was born in Kilu. </think>\n<answer> Kilu </answer>"]),
        # two hops: the first fact names the bridge, whose passage holds the answer
        ({"1": "Ada Bo\nAda Bo is a poet who was born in Kilu.", "2": "Kilu\nKilu is a city in Mora."},
         {"supporting_ids": ["1", "2"], "golden_answers": ["Mora"]},
         ["<think> I need to find information about Ada Bo. </think>\n<search> Ada Bo </search>",
          "<think> Ada Bo is a poet who was born in Kilu. Now I need to find information about Kilu. </think>\n"
          "<search> Kilu </search>",
          "<think> Kilu is a city in Mora. </think>\n<answer> Mora </answer>"]),
    ],
)
def test_gold_turns(texts, question, expected):
    turns, needed = gold_turns(question, texts)
    assert turns == expected
    assert needed == [texts[i].split("\n", 1)[1] for i in question["supporting_ids"]]


def test_a_trajectory_whose_search_misses_its_passage_is_dropped(toy_world_dir, toy_retrieval_url, smollm2_tokenizer):
    one_hop = [q for q in _questions(toy_world_dir) if q["hops"] == 1]
    questions = [one_hop[0], next(q for q in one_hop if q["supporting_ids"] != one_hop[0]["supporting_ids"])]
    corpus = _corpus(toy_world_dir)
    pid, answer = questions[0]["supporting_ids"][0], questions[0]["golden_answers"][0]
    title = corpus[pid].split("\n", 1)[0]
    corpus[pid] = f"{title}\n{title} was last seen near {answer}."  # text the server does not have
    rows = to_rows(questions, split="train", data_source="toy_world", mode="sq")
    kept, stats = asyncio.run(build_trajectories(rows, questions, corpus, tokenizer=smollm2_tokenizer,
                                                 retrieval_url=toy_retrieval_url))
    assert stats["dropped_retrieval_miss"] == 1 and [r["id"] for r in kept] == [questions[1]["id"]]


def test_steps_style_cuts_rag_r1_step_samples(toy_world_dir, toy_retrieval_url, smollm2_dir, smollm2_tokenizer,
                                              tmp_path):
    out = tmp_path / "steps.parquet"
    assert cli_main(["data", "sft-trajectories", "--world", str(toy_world_dir), "--retrieval-url", toy_retrieval_url,
                     "--tokenizer", str(smollm2_dir), "--out", str(out), "--limit", "8", "--style", "steps"]) == 0
    frame = pd.read_parquet(out)
    stats = json.loads(out.with_suffix(".stats.json").read_text())
    corpus = _corpus(toy_world_dir)
    by_id = {q["id"]: q for q in _questions(toy_world_dir)}
    # per trajectory: every turn with history, every turn but the first without: 2 * turns - 1 = 2 * hops + 1
    expected = sum(2 * by_id[i]["hops"] + 1 for i in set(frame["id"]))
    assert stats["style"] == "steps" and stats["samples"] == len(frame) == expected
    assert stats["kept"] == frame["id"].nunique() >= 7
    for row in frame.itertuples():
        target = [int(t) for t, m in zip(row.input_ids, row.loss_mask, strict=True) if m]
        turns, _ = gold_turns(by_id[row.id], corpus)
        assert smollm2_tokenizer.decode(target) == turns[row.step]  # exactly one gold turn is learned
        assert row.kind == ("answer" if row.step == len(turns) - 1 else "search")


def test_decision_weight_weighs_the_tokens_that_choose_search_again_or_answer(
        toy_world_dir, toy_retrieval_url, smollm2_dir, smollm2_tokenizer, tmp_path):
    frames = {}
    for weight in (1, 7):
        out = tmp_path / f"w{weight}.parquet"
        assert cli_main(["data", "sft-trajectories", "--world", str(toy_world_dir), "--retrieval-url",
                         toy_retrieval_url, "--tokenizer", str(smollm2_dir), "--out", str(out), "--limit", "10",
                         "--decision-weight", str(weight)]) == 0
        frames[weight] = pd.read_parquet(out)
        assert json.loads(out.with_suffix(".stats.json").read_text())["decision_weight"] == weight
    plain, weighted = frames[1], frames[7]
    assert list(plain["id"]) == list(weighted["id"]) and set(weighted["hops"]) == {1, 2}
    for before, after in zip(plain.itertuples(), weighted.itertuples(), strict=True):
        ids, mask = [int(t) for t in after.input_ids], [int(m) for m in after.loss_mask]
        weighted_at = [i for i, m in enumerate(mask) if m == 7]
        assert [m for i, m in enumerate(mask) if i not in weighted_at] == [
            int(m) for i, m in enumerate(before.loss_mask) if i not in weighted_at]
        # in each turn after a search, the token right after its fact sentence: search again, or answer
        turn_starts = [i for i in range(1, len(mask)) if mask[i] and not mask[i - 1]]
        expected = [" Now", " </"] if after.hops == 2 else [" </"]
        assert [smollm2_tokenizer.decode([ids[i]]) for i in weighted_at] == expected
        for index, start, end in zip(weighted_at, turn_starts[1:], [*turn_starts[2:], len(ids)], strict=True):
            assert start < index < end
            assert smollm2_tokenizer.decode(ids[start:index]).startswith("<think> ")  # after the fact sentence
            assert smollm2_tokenizer.decode(ids[start:index]).endswith(".")
        assert after.num_target_tokens == before.num_target_tokens  # weights, not extra targets


def test_decision_weight_must_be_a_positive_integer(toy_world_dir, tmp_path, capsys):
    for bad in ("0", "-2", "1.5", "x"):
        with pytest.raises(SystemExit) as exit_info:
            cli_main(["data", "sft-trajectories", "--world", str(toy_world_dir), "--retrieval-url",
                      "http://127.0.0.1:9", "--tokenizer", "t", "--out", str(tmp_path / "x.parquet"),
                      "--decision-weight", bad])
        assert exit_info.value.code == 2
        assert "must be an integer >= 1" in capsys.readouterr().err
