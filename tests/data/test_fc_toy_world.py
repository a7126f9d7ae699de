"""The function-calling toy world: byte-identical files per seed, disjoint train / dev / test APIs, every kind
present, gold calls that pass our BFCL checker (and a wrong value that fails), files `data fc` and `eval bfcl
--questions` read."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from agentic_verl.cli import main as cli_main
from agentic_verl.data.fc_toy_world import KINDS, PARAM_TYPES, SPLITS, build_world, write_world
from agentic_verl.data.function_calling import read_bfcl
from agentic_verl.eval.bfcl_data import load_question_files
from agentic_verl.eval.bfcl_eval import score, summarize
from agentic_verl.rewards.bfcl import ast_match, gold_calls, render_calls


@pytest.fixture(scope="module")
def world():
    return build_world(seed=5)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_gives_byte_identical_files_and_another_seed_does_not(tmp_path):
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        write_world(build_world(seed), tmp_path / name)
    a, b, c = (_files(tmp_path / name) for name in "abc")
    assert a == b
    assert a.keys() == c.keys() and all(a[name] != c[name] for name in a)
    assert len(a) == 1 + len(SPLITS) * (len(KINDS) + len(KINDS) - 1)  # apis.json; no possible answer for irrelevance


def test_apis_are_disjoint_across_splits_and_questions_use_their_splits_apis(world):
    by_split = {split: {a.name for a in world.apis if a.split == split} for split in SPLITS}
    assert [len(by_split[s]) for s in SPLITS] == [24, 8, 8]
    nouns = [a.noun for a in world.apis]
    assert len(set(nouns)) == len(nouns)  # a held-out API shares no noun (hence no name) with a train API
    params = {split: {p.name for a in world.apis if a.split == split for p in a.params} for split in SPLITS}
    assert not params["train"] & params["test"] and not params["train"] & params["dev"]
    for split, entries in world.questions.items():
        offered = {f["name"] for e in entries for f in e["function"]}
        assert offered <= by_split[split], split
    texts = {split: {e["question"][0][0]["content"] for e in world.questions[split]} for split in SPLITS}
    assert not texts["train"] & texts["test"]


def test_every_kind_and_type_is_present(world):
    for split, n in zip(SPLITS, (64, 12, 12), strict=True):
        assert Counter(e["category"] for e in world.questions[split]) == dict.fromkeys(KINDS, n)
    assert {p.kind for a in world.apis for p in a.params} == set(PARAM_TYPES)
    assert any(not p.required for a in world.apis for p in a.params)
    for entry in world.questions["train"]:
        n_functions = len(entry["function"])
        assert n_functions == (2 if entry["category"] == "multiple" else 1)
        if entry["category"] == "parallel":
            assert len(entry["ground_truth"]) == 2 and entry["ground_truth"][0] != entry["ground_truth"][1]
        if entry["category"] == "irrelevance":
            asked = entry["question"][0][0]["content"]
            assert entry["ground_truth"] is None and entry["function"][0]["name"].split("_", 1)[1] not in asked


def test_gold_calls_pass_the_checker_and_a_wrong_value_fails(world):
    checked = 0
    for entry in (e for entries in world.questions.values() for e in entries if e["category"] != "irrelevance"):
        functions, answer, category = entry["function"], entry["ground_truth"], entry["category"]
        calls = gold_calls(answer, functions)
        gold = f"<think>{entry['reasoning']}</think>\n\n" + render_calls(calls)
        assert ast_match(gold, functions, answer, category)["valid"], (entry["id"], gold)
        # the values are stated in the question (booleans as on / off)
        text = entry["question"][0][0]["content"]
        for call in calls:
            for value in next(iter(call.values())).values():
                shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
                assert shown in text, (entry["id"], value)
        # one value changed: the checker rejects it
        (name, args), = calls[0].items()
        param, value = next(iter(args.items()))
        wrong = (not value if isinstance(value, bool) else value + 1 if isinstance(value, int | float)
                 else value + "x")  # fmt: skip
        bad = render_calls([{name: {**args, param: wrong}}, *calls[1:]])
        verdict = ast_match(bad, functions, answer, category)
        expected = "parallel_function_checker_no_order:cannot_find_match" if category == "parallel" else "value_error"
        assert not verdict["valid"] and verdict["error_type"].startswith(expected), (entry["id"], bad, verdict)
        checked += 1
    assert checked == 3 * (64 + 12 + 12)
    for entry in (e for e in world.questions["test"] if e["category"] == "irrelevance"):
        refusal = f"<think>{entry['reasoning']}</think>\n\nNone of the given functions can be used."
        assert ast_match(refusal, entry["function"], None, "irrelevance")["valid"]


def test_files_read_back_through_data_fc_and_eval_bfcl(tmp_path, world):
    written = write_world(world, tmp_path / "world")
    # data fc's reader: categories from the file names, reasoning kept, every gold output passes
    records = [r for path in written["train"] for r in read_bfcl(path)]
    assert [type(r) for r in records] == [dict] * 256 and all(r["reasoning"] for r in records)
    assert Counter(r["category"] for r in records) == dict.fromkeys(KINDS, 64)
    # eval bfcl --questions: the same questions; scored with gold outputs everything is right, 1 call or 2 or 0
    questions, multi_turn = load_question_files(written["test"])
    assert multi_turn == []
    assert [q["id"] for q in questions] == [e["id"] for e in world.questions["test"]]
    outputs = [render_calls(gold_calls(q["possible_answer"], q["functions"])) if q["possible_answer"]
               else "No function fits." for q in questions]  # fmt: skip
    result = summarize(score(questions, outputs))
    assert result["summary"]["accuracy"] == 1.0 and set(result["categories"]) == set(KINDS)
    assert {c: s["calls_per_question"] for c, s in result["categories"].items()} == {
        "simple_python": 1.0, "multiple": 1.0, "parallel": 2.0, "irrelevance": 0.0}
    assert result["summary"]["calls_per_question"] == pytest.approx(1.0)


def test_cli_writes_the_world(tmp_path, capsys):
    out = tmp_path / "cli"
    assert cli_main(["data", "fc-toy-world", "--out", str(out), "--seed", "2", "--apis", "4", "2", "2",
                     "--questions", "3", "1", "1"]) == 0
    assert "train 12 questions on 4 APIs" in capsys.readouterr().out
    apis = json.loads((out / "apis.json").read_text())
    assert apis["seed"] == 2 and Counter(a["split"] for a in apis["apis"]) == {"train": 4, "dev": 2, "test": 2}
    assert _files(out)["test/BFCL_v4_parallel.json"] == _files(_written(tmp_path / "api", 2))["test/BFCL_v4_parallel.json"]
    assert cli_main(["data", "fc-toy-world", "--out", str(out), "--apis", "1", "2", "2"]) == 2
    assert "at least 2 APIs" in capsys.readouterr().err


def _written(out: Path, seed: int) -> Path:
    write_world(build_world(seed, apis=(4, 2, 2), questions=(3, 1, 1)), out)
    return out


def test_the_eval_prompt_is_the_training_prompt(tmp_path, world):
    """`eval bfcl --prompt funreason` shows a model exactly the prompt its `data fc` SFT rows trained it on."""
    from agentic_verl.data.fc_parquet import rl_row, sft_row
    from agentic_verl.eval.bfcl_data import build_messages

    written = write_world(world, tmp_path / "world")
    records = {r["id"]: r for path in written["test"] for r in read_bfcl(path)}
    for question in load_question_files(written["test"])[0]:
        record = records[question["id"]]
        trained = sft_row(record, "train", 0)["messages"][:-1]
        assert build_messages(question, "funreason") == trained == rl_row(record, "train", 0)["prompt"]
        assert "Python 3 syntax" not in trained[0]["content"]  # BFCL's language hint: the bfcl prompt's only
        assert "Python 3 syntax" in build_messages(question, "bfcl")[0]["content"]
