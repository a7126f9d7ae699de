"""The evaluation-only converter of BFCL's own multi-turn questions into `bfcl_multi_turn` rows: every question of
the four categories becomes a row `parse_entry` accepts, with the docs of its classes (the withheld ones left out of
the prompt, present in extra_info.function) and its ground truth; the rows are marked as BFCL's test questions."""

from __future__ import annotations

import json

import pytest

from agentic_verl.eval.bfcl_multi_turn_data import (
    DATA_SOURCE,
    EVAL_ONLY_SPLIT,
    MULTI_TURN_CATEGORIES,
    bfcl_eval_row,
    function_docs,
    load_bfcl_multi_turn_entries,
)
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry


@pytest.mark.parametrize("category", MULTI_TURN_CATEGORIES)
def test_every_question_becomes_a_row_the_loop_accepts(category):
    entries = load_bfcl_multi_turn_entries(category)
    assert len(entries) == 200
    for entry in entries:
        row = bfcl_eval_row(entry)
        parsed = parse_entry(row["extra_info"], need_ground_truth=True)
        assert parsed.id == entry["id"] and parsed.ground_truth == entry["ground_truth"]
        assert json.loads(row["reward_model"]["ground_truth"]) == entry["ground_truth"]
        assert (row["data_source"], row["extra_info"]["split"]) == (DATA_SOURCE, EVAL_ONLY_SPLIT)
        assert row["agent_name"] == "bfcl_multi_turn" and row["extra_info"]["long_context"] is (
            category == "multi_turn_long_context")
        names = {doc["name"] for doc in parsed.function}
        assert names == {doc["name"] for doc in function_docs(entry["involved_classes"])}
        system = row["prompt"][0]["content"]
        for name in names:  # the prompt documents every function but the withheld ones
            assert (json.dumps({"name": name})[1:-1] in system) is (name not in parsed.withheld_names())
        assert row["prompt"][1:] == entry["question"][0]


def test_miss_func_rows_withhold_what_bfcl_withholds():
    [entry] = load_bfcl_multi_turn_entries("multi_turn_miss_func", ids=["multi_turn_miss_func_2"])
    parsed = parse_entry(bfcl_eval_row(entry)["extra_info"])
    assert entry["missed_function"] == {"4": ["cp", "cat"]}
    assert [doc["name"] for doc in parsed.added_functions(4)] == ["cp", "cat"]
    assert parsed.withheld_names() == {"cp", "cat"}


def test_bad_requests_are_refused():
    with pytest.raises(ValueError, match="unknown BFCL multi-turn category 'simple_python'"):
        load_bfcl_multi_turn_entries("simple_python")
    with pytest.raises(ValueError, match=r"has no question \['multi_turn_base_9999'\]"):
        load_bfcl_multi_turn_entries("multi_turn_base", ids=["multi_turn_base_9999"])
    with pytest.raises(ValueError, match="not one of bfcl-eval's multi-turn classes"):
        function_docs(["NoSuchAPI"])
