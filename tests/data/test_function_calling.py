"""`agentic-verl data fc`: BFCL v4 and xLAM records -> SFT + RL parquet, evaluation questions excluded, a held-out
split. Every input is a small file the test writes in the real formats."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agentic_verl.cli import main as cli_main
from agentic_verl.data.fc_parquet import NO_CALL_TEXT, call_text, convert, template_reasoning
from agentic_verl.data.function_calling import (
    UnsupportedRecord,
    bfcl_function,
    eval_keys,
    held_out_split,
    normalize_text,
    question_key,
    read_records,
    xlam_category,
    xlam_record,
)
from agentic_verl.rewards.bfcl import decode
from agentic_verl.rewards.bfcl.decode import strip_reasoning

ADD = {
    "name": "add",
    "description": "Add two integers.",
    "parameters": {"a": {"type": "int", "description": "first"}, "b": {"type": "int", "description": "second"}},
}
WEATHER = {
    "name": "weather",
    "description": "Weather of a city.",
    "parameters": {
        "city": {"type": "str", "description": "city"},
        "unit": {"type": "str, optional", "description": "unit", "default": "C"},
    },
}


def _xlam(i, query, answers, tools=(ADD, WEATHER), **extra):
    return {"id": i, "query": query, "tools": json.dumps(list(tools)), "answers": json.dumps(answers), **extra}


XLAM = [
    _xlam(
        0,
        "What is 2 plus 3?",
        [{"name": "add", "arguments": {"a": 2, "b": 3}}],
        reasoning="The add function sums two integers.",
    ),
    _xlam(
        1,
        "Weather in Paris, and 4 + 5?",
        [{"name": "weather", "arguments": {"city": "Paris"}}, {"name": "add", "arguments": {"a": 4, "b": 5}}],
        cot="Two requests.",
    ),
    _xlam(2, "what is 2 PLUS 3", [{"name": "add", "arguments": {"a": 2, "b": 3}}], thought="Same question again."),
    _xlam(3, "Tell me a joke.", [], reasoning="No function tells jokes."),
    _xlam(
        4,
        "Find the area of a triangle with base 10 and height 5!",
        [{"name": "add", "arguments": {"a": 10, "b": 5}}],
        reasoning="Eval question in disguise.",
    ),
    _xlam(5, "Add -7 and 8.", [{"name": "add", "arguments": {"a": -7, "b": 8}}]),  # no reasoning
    *[
        _xlam(
            10 + i,
            f"Add {i} and {i + 1}.",
            [{"name": "add", "arguments": {"a": i, "b": i + 1}}],
            reasoning=f"Sum of {i} and {i + 1}.",
        )
        for i in range(10)
    ],
]

BFCL_FUNCTIONS = [{"name": "calc_area", "description": "Area of a triangle.",
                   "parameters": {"type": "dict", "properties": {"base": {"type": "integer"}, "height": {"type": "integer"},
                                                                 "unit": {"type": "string"}},
                                  "required": ["base", "height"]}}]  # fmt: skip


def _bfcl_files(folder: Path, category: str, entries: list[dict], answers: list[dict] | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"BFCL_v4_{category}.json"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    if answers is not None:
        (folder / "possible_answer").mkdir(exist_ok=True)
        (folder / "possible_answer" / path.name).write_text("".join(json.dumps(a) + "\n" for a in answers))
    return path


@pytest.fixture
def eval_file(tmp_path):
    """A BFCL evaluation file: one question also asked (differently spelled) by an xLAM record."""
    entries = [{"id": "simple_python_0", "question": [[{"role": "user", "content":
                "Find the area of a triangle with base 10 and height 5."}]], "function": BFCL_FUNCTIONS}]  # fmt: skip
    answers = [
        {"id": "simple_python_0", "ground_truth": [{"calc_area": {"base": [10], "height": [5], "unit": ["", "cm"]}}]}
    ]
    return _bfcl_files(tmp_path / "eval", "simple_python", entries, answers)


@pytest.fixture
def xlam_file(tmp_path):
    path = tmp_path / "xlam.json"
    path.write_text(json.dumps(XLAM))
    return path


# ---- records ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool, expected", [
    # xLAM types map to BFCL's; "optional" or a default makes a parameter optional
    (WEATHER, {"type": "dict", "properties": {"city": {"type": "string", "description": "city"},
                                              "unit": {"type": "string", "description": "unit"}},
               "required": ["city"]}),
    # containers and unknown types
    ({"name": "f", "parameters": {"xs": {"type": "List[int]"}, "m": {"type": "Dict[str, Any]"}, "u": {"type": "Union"}}},
     {"type": "dict", "properties": {"xs": {"type": "array", "description": ""}, "m": {"type": "dict", "description": ""},
                                     "u": {"type": "any", "description": ""}}, "required": ["xs", "m", "u"]}),
    # JSON-schema tools keep their schema, with BFCL's "dict" for "object"
    ({"name": "g", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
     {"type": "dict", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
])  # fmt: skip
def test_bfcl_function(tool, expected):
    assert bfcl_function(tool)["parameters"] == expected


@pytest.mark.parametrize("n_calls, n_functions, category", [
    (1, 1, "simple_python"), (1, 3, "multiple"), (2, 1, "parallel"), (2, 2, "parallel_multiple"), (0, 2, "irrelevance"),
])  # fmt: skip
def test_xlam_category(n_calls, n_functions, category):
    assert xlam_category(n_calls, n_functions) == category


def test_xlam_record_reads_json_strings_and_reasoning_fields():
    record = xlam_record(XLAM[1])
    assert record["id"] == "xlam_1" and record["category"] == "parallel_multiple"
    assert record["calls"] == [{"weather": {"city": "Paris"}}, {"add": {"a": 4, "b": 5}}]
    assert record["possible_answer"] == [{"weather": {"city": ["Paris"]}}, {"add": {"a": [4], "b": [5]}}]
    assert record["reasoning"] == "Two requests."  # from `cot`
    assert xlam_record(XLAM[3])["calls"] == [] and xlam_record(XLAM[3])["possible_answer"] is None


@pytest.mark.parametrize("entry, reason", [
    ({"id": 1, "query": "x", "tools": "not json", "answers": "[]"}, "malformed"),
    ({"id": 1, "query": "", "tools": "[]", "answers": "[]"}, "malformed"),
    ({"id": 1, "query": "x", "tools": "[]", "answers": '[{"arguments": {}}]'}, "malformed"),  # call without a name
])  # fmt: skip
def test_bad_xlam_records_are_counted_not_fatal(entry, reason):
    with pytest.raises(UnsupportedRecord) as info:
        xlam_record(entry)
    assert info.value.reason == reason


def test_bfcl_files_with_answers_and_unsupported_entries(tmp_path):
    entries = [
        {
            "id": "live_simple_0-0-0",
            "question": [
                [{"role": "system", "content": "be nice"}, {"role": "user", "content": "Area for base 3, height 4?"}]
            ],
            "function": BFCL_FUNCTIONS,
        },
        {
            "id": "live_simple_1-1-0",
            "question": [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]],
            "function": BFCL_FUNCTIONS,
        },  # two turn groups: multi-turn
    ]
    answers = [{"id": "live_simple_0-0-0", "ground_truth": [{"calc_area": {"base": [3], "height": [4], "unit": [""]}}]}]
    path = _bfcl_files(tmp_path, "live_simple", entries, answers)
    first, second = list(read_records(str(path)))
    assert first["category"] == "live_simple" and first["turns"] == [
        {"role": "user", "content": "Area for base 3, height 4?"}
    ]
    assert first["calls"] == [{"calc_area": {"base": 3, "height": 4}}]  # the optional unit is left out
    assert isinstance(second, UnsupportedRecord) and second.reason == "multi_turn"
    irrelevance = _bfcl_files(tmp_path / "irr", "irrelevance", [{**entries[0], "id": "irrelevance_0"}], None)
    (record,) = read_records(str(irrelevance))
    assert record["calls"] == [] and record["category"] == "irrelevance"
    other = _bfcl_files(tmp_path / "mt", "multi_turn_base", [{**entries[0], "id": "multi_turn_base_0"}], None)
    assert next(read_records(str(other))).reason == "unsupported_category"


def test_bfcl_package_data_reads():
    records = list(read_records("bfcl:simple_python"))
    assert len(records) > 300 and all(r["calls"] for r in records)


# ---- evaluation overlap and the held-out split --------------------------------------------------------------------


def test_normalized_text_ignores_case_punctuation_and_spacing():
    assert normalize_text("Find the area of a triangle with base 10 and height 5!") == normalize_text(
        "find the  AREA of a triangle, with base 10 and height 5."
    )
    assert normalize_text("base 10") != normalize_text("base 1 0")


def test_eval_keys_from_files_and_the_bfcl_package(eval_file):
    ids, texts = eval_keys([str(eval_file)])
    assert ids == {"simple_python_0"} and texts == {
        normalize_text("Find the area of a triangle with base 10 and height 5")
    }
    all_ids, _ = eval_keys(["bfcl"])
    assert {"simple_python_0", "live_multiple_0-0-0", "irrelevance_0"} <= all_ids
    assert eval_keys(["none"]) == (set(), set())


def test_held_out_split_keeps_duplicate_questions_together_and_is_seeded():
    records = [xlam_record(e) for e in XLAM]
    train, held = held_out_split(records, 0.25, seed=0)
    assert len(train) + len(held) == len(records) and held and train
    assert not {question_key(r) for r in train} & {question_key(r) for r in held}
    same = {question_key(xlam_record(XLAM[0]))}
    assert sum(question_key(r) in same for r in held) in (0, 2)  # records 0 and 2 ask the same question
    assert held_out_split(records, 0.25, seed=0) == (train, held)
    assert held_out_split(records, 0.25, seed=1) != (train, held)
    assert held_out_split(records, 0.0) == (records, [])


# ---- convert: the files the recipes read --------------------------------------------------------------------------


def test_convert_writes_sft_and_rl_parquet_without_eval_questions(tmp_path, xlam_file, eval_file):
    out = tmp_path / "out"
    stats = convert([str(xlam_file)], out, exclude_eval=[str(eval_file)], val_fraction=0.2, seed=0)
    assert stats["dropped"]["eval_overlap_text"] == 1  # record 4 asks the eval question
    assert stats["dropped"]["sft:no_reasoning"] == 1  # record 5 (default: drop)
    assert json.loads((out / "stats.json").read_text()) == stats
    sft = pd.concat([pd.read_parquet(out / "sft_train.parquet"), pd.read_parquet(out / "sft_val.parquet")])
    rl = pd.concat([pd.read_parquet(out / "rl_train.parquet"), pd.read_parquet(out / "rl_val.parquet")])
    assert len(sft) == len(XLAM) - 2 and len(rl) == len(XLAM) - 1
    eval_text = normalize_text("Find the area of a triangle with base 10 and height 5")
    for frame in (sft, rl):
        assert not {i["id"] for i in frame["extra_info"]} & {"simple_python_0"}
    splits = {}
    for row in sft.itertuples():
        messages = list(row.messages)
        assert [m["role"] for m in messages] == ["system", "user", "assistant"]
        assert "functions in JSON format" in messages[0]["content"] and '"add"' in messages[0]["content"]
        assert normalize_text(messages[1]["content"]) != eval_text
        target = messages[2]["content"]
        assert target.startswith("<think>") and "</think>\n\n" in target
        calls_text = target.split("</think>\n\n", 1)[1]
        record = xlam_record(XLAM[[e["id"] for e in XLAM].index(int(row.extra_info["id"].removeprefix("xlam_")))])
        assert (decode(calls_text) if record["calls"] else calls_text) == (record["calls"] or NO_CALL_TEXT)
        splits.setdefault(row.extra_info["split"], set()).add(normalize_text(messages[1]["content"]))
    assert splits["val"] and not splits["train"] & splits["val"]


def test_rl_rows_score_their_reference_with_the_bfcl_reward(tmp_path, xlam_file):
    from agentic_verl.registry import load_reference

    compute_score = load_reference(f"{Path(__file__).resolve().parents[2] / 'reward_fns/bfcl_ast.py'}:compute_score")
    convert([str(xlam_file)], tmp_path, exclude_eval=["none"], val_fraction=0.0)
    rl = pd.read_parquet(tmp_path / "rl_train.parquet")
    assert set(rl["agent_name"]) == {"function_call"}
    by_id = {f"xlam_{e['id']}": xlam_record(e) for e in XLAM}
    for row in rl.itertuples():
        record = by_id[row.extra_info["id"]]
        gold = "<think>x</think>\n\n" + call_text(record)
        scored = compute_score(row.data_source, gold, row.reward_model["ground_truth"], dict(row.extra_info))
        assert scored["score"] == 1.0, (row.extra_info["id"], scored)
        wrong = compute_score(
            row.data_source,
            "<think>x</think>\n\n[add(a=999, b=0)]",
            row.reward_model["ground_truth"],
            dict(row.extra_info),
        )
        assert wrong["score"] == 0.0


def test_template_reasoning_is_deterministic_and_names_the_calls(tmp_path, xlam_file):
    record = xlam_record(XLAM[5])
    assert template_reasoning(record) == template_reasoning(dict(record))
    assert "add with a=-7, b=8" in template_reasoning(record)
    stats = convert([str(xlam_file)], tmp_path, exclude_eval=["none"], val_fraction=0.0, missing_reasoning="template")
    assert "sft:no_reasoning" not in stats["dropped"] and stats["files"]["sft_train"]["rows"] == len(XLAM)


def test_bfcl_training_data_never_contains_eval_ids(tmp_path, eval_file):
    """Converting the evaluation file itself keeps nothing: every id is an evaluation id."""
    stats = convert([str(eval_file)], tmp_path, exclude_eval=[str(eval_file)], missing_reasoning="template")
    assert stats["kept"] == 0 and stats["dropped"] == {"eval_overlap_id": 1}
    assert stats["files"]["sft_train"]["path"] is None and not (tmp_path / "sft_train.parquet").exists()


def test_cli(tmp_path, xlam_file, eval_file, capsys):
    out = tmp_path / "cli"
    assert (
        cli_main(
            [
                "data",
                "fc",
                "--input",
                str(xlam_file),
                "--out",
                str(out),
                "--exclude-eval",
                str(eval_file),
                "--val-fraction",
                "0.2",
                "--missing-reasoning",
                "template",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "records read" in printed and "eval_overlap_text" in printed
    assert (out / "sft_train.parquet").exists() and (out / "rl_val.parquet").exists()
    assert (
        strip_reasoning(pd.read_parquet(out / "sft_train.parquet")["messages"][0][-1]["content"])
        .strip()
        .startswith("[")
    )


@pytest.mark.parametrize("module", ["data.function_calling", "data.fc_parquet", "training.fc_sft_dataset"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"agentic_verl.{module}"))
    assert result.attempted >= 1 and result.failed == 0
