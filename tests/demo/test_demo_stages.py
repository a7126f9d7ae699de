"""Stage records from each evaluation's own result.json (written here by the evaluations' own summarizers)."""

from __future__ import annotations

import json

import pytest
from demo_helpers import qa_question, write_bfcl, write_qa, write_screenspot

from agentic_verl.demo.stages import detect_kind, load_result, stage_record
from agentic_verl.v2p.sizes import MEDIUM_BELOW, SIZE_BUCKETS, SMALL_BELOW, size_bucket


def test_qa_result_gives_em_by_hops_searches_and_truncation(tmp_path):
    questions = [qa_question(0, 1, 1, 1), qa_question(1, 1, 0, 1), qa_question(2, 1, 1, 2),
                 qa_question(3, 2, 0, 2, truncated=True), qa_question(4, 2, 0, 0), qa_question(5, 2, 1, 3)]
    path = write_qa(tmp_path / "qa" / "result.json", questions)
    record = stage_record("after SFT", path, 81.0)
    assert record["eval"] == "qa" and record["label"] == "after SFT" and record["seconds"] == 81.0
    assert record["source"] == str(path) and record["n"] == 6
    assert record["score"] == pytest.approx(3 / 6, abs=1e-4)  # eval qa rounds to 4 decimals
    assert record["by_kind"] == pytest.approx({"1-hop": 2 / 3, "2-hop": 1 / 3}, abs=1e-4)
    assert list(record["by_kind"]) == ["1-hop", "2-hop"]
    assert record["tool_calls_per_question"] == pytest.approx((1 + 1 + 2 + 2 + 0 + 3) / 6, abs=1e-4)
    assert record["truncation_rate"] == pytest.approx(1 / 6)


def test_bfcl_result_gives_accuracy_by_category_decoded_calls_and_truncation(tmp_path):
    cases = [  # (category, possible answer, output, finish_reason)
        ("simple_python", [{"set_lamp": {"level": [3]}}], "<think>three</think>\n\n[set_lamp(level=3)]", "stop"),
        ("simple_python", [{"set_lamp": {"level": [3]}}], "[set_lamp(level=4)]", "stop"),  # decodes, wrong value
        ("parallel", [{"set_lamp": {"level": [1]}}, {"set_lamp": {"level": [2]}}],
         "[set_lamp(level=1), set_lamp(level=2)]", "stop"),  # two calls
        ("parallel", [{"set_lamp": {"level": [1]}}, {"set_lamp": {"level": [2]}}],
         "<think>first one, then", "length"),  # cut off: nothing decodes
        ("irrelevance", None, "None of these functions fits.", "stop"),  # no call: right for irrelevance
        ("irrelevance", None, "[set_lamp(level=", "stop"),  # a broken call: 0 calls, still counted as no call
    ]
    path, records = write_bfcl(tmp_path / "bfcl" / "result.json", cases)
    assert [r["valid"] for r in records] == [True, False, True, False, True, True]  # the real checker's verdicts
    record = stage_record("before SFT", path, 12.5)
    assert record["eval"] == "bfcl" and record["n"] == 6
    assert record["score"] == pytest.approx(4 / 6)
    assert record["by_kind"] == pytest.approx({"simple_python": 1 / 2, "parallel": 1 / 2, "irrelevance": 1.0})
    assert record["tool_calls_per_question"] == pytest.approx((1 + 1 + 2 + 0 + 0 + 0) / 6)
    assert record["truncation_rate"] == pytest.approx(1 / 6)


def test_bfcl_result_with_multi_turn_questions_counts_their_executed_calls(tmp_path):
    """Multi-turn records carry no single output: the calls their steps executed, as `eval bfcl` counted them."""
    from agentic_verl.eval.bfcl_eval import summarize

    path, records = write_bfcl(tmp_path / "bfcl" / "result.json", [
        ("simple_python", [{"set_lamp": {"level": [3]}}], "[set_lamp(level=3)]", "stop")])
    records += [{"id": "multi_turn_base_0", "category": "multi_turn_base", "valid": True, "error_type": None,
                 "calls": 5, "finish_reason": "stop"},
                {"id": "multi_turn_base_1", "category": "multi_turn_base", "valid": False,
                 "error_type": "multi_turn:force_terminated", "calls": 2, "finish_reason": "length"}]
    path.write_text(json.dumps({"settings": {"label": "x"}, **summarize(records)}))
    record = stage_record("multi-turn", path, 1.0)
    assert record["eval"] == "bfcl" and record["n"] == 3 and record["score"] == pytest.approx(2 / 3)
    assert record["by_kind"] == pytest.approx({"simple_python": 1.0, "multi_turn_base": 0.5})
    assert record["tool_calls_per_question"] == pytest.approx((1 + 5 + 2) / 3)
    assert record["truncation_rate"] == pytest.approx(1 / 3)


def test_screenspot_result_gives_accuracy_by_size_clicks_and_truncation(tmp_path):
    small, medium, large = [0, 0, 20, 20], [100, 100, 140, 140], [200, 100, 300, 180]
    samples = [(small, [10, 10], {}), (small, [50, 50], {"truncated": True}),  # hit; a miss cut at the limit
               (medium, [120, 120], {}), (large, None, {"finish_reason": "length"}), (large, [250, 150], {})]
    path = write_screenspot(tmp_path / "ss" / "result.json", samples)
    assert [size_bucket(box, (336, 224)) for box in (small, medium, large)] == ["small", "medium", "large"]
    record = stage_record("after pointer SFT", path, 30.0)
    assert record["eval"] == "screenspot" and record["n"] == 5
    assert record["score"] == pytest.approx(3 / 5)
    assert record["by_kind"] == pytest.approx({"small": 1 / 2, "medium": 1.0, "large": 1 / 2})
    assert list(record["by_kind"]) == list(SIZE_BUCKETS)  # small, medium, large in that order
    assert record["tool_calls_per_question"] == pytest.approx(4 / 5)  # one sample without a click
    assert record["truncation_rate"] == pytest.approx(2 / 5)


def test_screenspot_without_a_truncation_field_counts_none(tmp_path):
    path = write_screenspot(tmp_path / "result.json", [([0, 0, 20, 20], [5, 5], {}), ([0, 0, 20, 20], None, {})])
    assert stage_record("x", path, 1.0)["truncation_rate"] == 0.0


def test_size_buckets_follow_the_stated_area_thresholds():
    small_bound, medium_bound = SMALL_BELOW, MEDIUM_BELOW
    width, height = 1000, 100  # area 100,000 px: a box of area `share * 100000` px
    for share, bucket in [(small_bound * 0.99, "small"), (small_bound, "medium"), (medium_bound * 0.99, "medium"),
                          (medium_bound, "large"), (0.5, "large")]:
        assert size_bucket([0, 0, share * width, height], [width, height]) == bucket, share


@pytest.mark.parametrize("content, message", [
    ("{not json", "is not valid JSON"),  # a broken file
    ("[1, 2]", "expected a JSON object"),  # JSON, but not an object
    ('{"summary": {"em": 0.5}, "questions": []}', "not a result.json of `agentic-verl eval qa`"),  # unknown shape
    ('{"summary": {"n": 0, "em_by_hops": {}}, "questions": []}', "a qa result without the fields"),  # fields missing
])
def test_bad_results_fail_naming_the_file(tmp_path, content, message):
    path = tmp_path / "broken" / "result.json"
    path.parent.mkdir()
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        stage_record("x", path, 1.0)
    assert str(path) in str(info.value)


def test_missing_result_and_empty_evaluation_are_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="evaluation result not found: .*nope.json"):
        load_result(tmp_path / "nope.json")
    path = write_qa(tmp_path / "empty.json", [])
    with pytest.raises(ValueError, match="no questions"):
        stage_record("x", path, 1.0)


def test_detect_kind_names_the_keys_it_saw():
    with pytest.raises(ValueError, match=r"top-level keys: rows, settings"):
        detect_kind(json.loads('{"settings": {}, "rows": []}'), "x.json")
