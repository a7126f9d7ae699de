"""`agentic-verl eval search`: the real rag_r1 loop, in-process, against a real retrieval server.

Two policies: a tiny random transformers model in the real HFGenerationEngine (never answers: every failure path),
and a scripted token stream that plays the gold toy-world turns (every success path, exact EM and search counts).
"""

from __future__ import annotations

import json

import pytest

from agentic_verl.cli import main as cli_main
from agentic_verl.data.sft_trajectories import gold_turns
from agentic_verl.eval.search_eval import EvalSettings, evaluate, format_table, summarize


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from agentic_verl.cpu.models import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen2", arch="qwen2")


class GoldEngine:
    """HFGenerationEngine's interface, playing the gold turns of the question found in the prompt; questions in
    `wrong` get a wrong final answer. Token ids come from the real tokenizer."""

    def __init__(self, tokenizer, world_dir, wrong=()):
        self.tokenizer = tokenizer
        self.corpus = {d["id"]: d["contents"] for d in _jsonl(world_dir / "corpus.jsonl")}
        self.questions = _jsonl(world_dir / "train.jsonl") + _jsonl(world_dir / "test.jsonl")
        self.wrong = set(wrong)

    async def generate(self, prompt_ids, sampling_params=None, request_id=None):
        from agentic_verl.cpu.engine import GenerationOutput

        text = self.tokenizer.decode(prompt_ids)
        question = next(q for q in self.questions if f"Question: {q['question']}" in text)
        turns, _ = gold_turns(question, self.corpus)
        turn = turns[text.count("\n<information>\n")]
        if question["id"] in self.wrong and "<answer>" in turn:
            turn = "<answer> Nowhere </answer>"
        ids = self.tokenizer.encode(turn, add_special_tokens=False) + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        return GenerationOutput(ids, None, "completed", "stop")


def test_gold_policy_scores_em_1_with_one_search_per_hop(toy_world_dir, toy_retrieval_url, smollm2_dir,
                                                         smollm2_tokenizer, tmp_path):
    settings = EvalSettings(model=str(smollm2_dir), questions=str(toy_world_dir / "test.jsonl"),
                            retrieval_url=toy_retrieval_url, limit=6, dump_dir=str(tmp_path / "traj"), label="gold")
    questions = _jsonl(toy_world_dir / "test.jsonl")[:6]
    wrong = questions[0]["id"]
    result = evaluate(settings, engine=GoldEngine(smollm2_tokenizer, toy_world_dir, wrong=[wrong]))
    s = result["summary"]
    assert s["n"] == 6 and s["answer_rate"] == 1.0
    assert s["em"] == pytest.approx(5 / 6, abs=1e-4)
    assert s["searches_per_question"] == pytest.approx(sum(q["hops"] for q in questions) / 6, abs=1e-4)
    assert s["failures"]["wrong_answer"] == 1 and s["failures"]["no_answer"] == 0 and s["failures"]["no_call"] == 0
    by_id = {r["id"]: r for r in result["questions"]}
    assert by_id[wrong]["answer"] == "Nowhere" and by_id[wrong]["failures"] == ["wrong_answer"]
    for q in questions[1:]:
        assert by_id[q["id"]]["answer"] == q["golden_answers"][0]
        assert by_id[q["id"]]["turns"] == q["hops"] + 1

    # the dump is the loop's own trajectories joined with our reward records, as `agentic-verl view` reads it
    from agentic_verl.viewer import load_dumps

    loaded = load_dumps([str(tmp_path / "traj")])
    assert len(loaded.trajectories) == 6 and loaded.rewards_joined == 6 and not loaded.unmatched_rewards


def test_tiny_random_model_through_the_cli(toy_world_dir, toy_retrieval_url, tiny_model, tmp_path, capsys):
    out = tmp_path / "eval"
    assert cli_main(["eval", "search", "--model", str(tiny_model), "--questions", str(toy_world_dir / "test.jsonl"),
                     "--retrieval-url", toy_retrieval_url, "--limit", "3", "--max-turns", "1",
                     "--max-tokens-per-turn", "6", "--out", str(out), "--label", "tiny"]) == 0
    table = capsys.readouterr().out
    assert "| tiny | 3 | 0.000 |" in table
    result = json.loads((out / "result.json").read_text())
    assert result["settings"]["engine"] == "hf"  # the default engine (vLLM: tests/eval/test_vllm_engine.py)
    s = result["summary"]
    assert s["n"] == 3 and s["em"] == 0.0 and s["answer_rate"] == 0.0
    assert s["failures"]["no_answer"] == 3
    for record in result["questions"]:
        assert record["turns"] == 2  # max_turns=1 search turn + the final turn
        assert record["policy_tokens"] <= 12 and record["failures"][0] == "no_answer"
    assert list((out / "trajectories").glob("trajectories_*.jsonl"))


def test_unknown_engine_is_an_error_that_lists_the_known_ones():
    from agentic_verl.eval.loop_runner import open_engine

    with pytest.raises(ValueError, match="unknown generation engine 'tgi'; known: hf, vllm"):
        with open_engine("tgi", "any/model"):
            pass


@pytest.mark.parametrize(
    "results, em, searches, failures",
    [
        ([], 0.0, 0.0, {}),  # nothing evaluated
        ([{"em": 1.0, "searches": 2, "turns": 3, "answer": "a", "hops": 2, "policy_tokens": 10, "failures": []},
          {"em": 0.0, "searches": 0, "turns": 1, "answer": None, "hops": 1, "policy_tokens": 4,
           "failures": ["no_answer", "no_call"]}],
         0.5, 1.0, {"no_answer": 1, "no_call": 1}),  # one right two-hop, one silent one-hop
    ],
)
def test_summarize(results, em, searches, failures):
    s = summarize(results)
    assert s["em"] == em and s["searches_per_question"] == searches
    assert {k: v for k, v in s["failures"].items() if v} == failures
    if results:
        assert s["em_by_hops"] == {"1": {"n": 1, "em": 0.0}, "2": {"n": 1, "em": 1.0}}
        table = format_table([{"summary": {**s, "seconds": 3}, "settings": {"label": "x", "model": "m"}}])
        assert table.splitlines()[2].startswith("| x | 2 | 0.500 | 1.00 |")


def test_table_cli_joins_results_in_order(tmp_path, capsys):
    summary = summarize([{"em": 1.0, "searches": 1, "turns": 2, "answer": "a", "hops": 1, "policy_tokens": 9,
                          "failures": []}])
    paths = []
    for label in ("before", "after"):
        path = tmp_path / label / "result.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"settings": {"label": label, "model": "m"}, "summary": summary}))
        paths.append(str(path))
    assert cli_main(["eval", "table", *paths, "-o", str(tmp_path / "table.md")]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[2].startswith("| before | 1 | 1.000") and rows[3].startswith("| after |")
    assert (tmp_path / "table.md").read_text().splitlines() == rows
    assert [r["label"] for r in json.loads((tmp_path / "table.json").read_text())] == ["before", "after"]
