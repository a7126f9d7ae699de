"""QA rewards: normalisation, EM / F1 / cover-EM, answer extraction, the registered components."""

from __future__ import annotations

import numpy as np
import pytest

from agentic_verl.rewards import REWARDS
from agentic_verl.rewards.qa import (
    cover_em,
    exact_match,
    extract_answer,
    f1,
    gold_answers,
    normalize_answer,
    qa_cover_em,
    qa_em,
    qa_f1,
    strip_information,
)


@pytest.mark.parametrize(
    "text, normalizer, expected",
    [
        ("The Eiffel Tower", "squad", "eiffel tower"),  # article dropped, lowercased
        ("  a  b   c ", "squad", "b c"),  # article "a" dropped, whitespace collapsed
        ("U.S.A.", "squad", "usa"),  # punctuation removed, not replaced by spaces
        ("theatre", "squad", "theatre"),  # "the" inside a word is kept (word boundaries)
        ("An apple", "squad", "apple"),  # "an" is an article too
        ("Ünïcödé Straße", "squad", "ünïcödé straße"),  # non-ASCII letters survive, lowercased
        ("new_york", "squad", "newyork"),  # the training normaliser deletes underscores
        ("new_york", "rag_r1_eval", "new york"),  # the eval normaliser turns them into spaces
        ('"Hello" \u201cworld\u201d', "rag_r1_eval", "hello world"),  # ASCII and curly quotes -> spaces
        ("", "squad", ""),  # empty stays empty
    ],
)
def test_normalize_answer(text, normalizer, expected):
    assert normalize_answer(text, normalizer) == expected


def test_normalize_answer_rejects_unknown_normalizer():
    with pytest.raises(ValueError, match="rag_r1_eval"):
        normalize_answer("x", "nope")


@pytest.mark.parametrize(
    "ground_truth, expected",
    [
        ("Paris", ["Paris"]),  # a bare string
        (["a", "b"], ["a", "b"]),  # a list
        (np.array(["a", "b"], dtype=object), ["a", "b"]),  # a numpy object array from parquet
        ({"target": np.array(["x"])}, ["x"]),  # Search-R1's {"target": array}
        ({"golden_answers": ["y"]}, ["y"]),  # RAG-R1's record field
        (1984, ["1984"]),  # a number becomes its string
        ([["nested"], ("tuple",)], ["nested", "tuple"]),  # nested containers are flattened
        (None, []),  # nothing
        ({"unrelated": 1}, []),  # a dict without a known key
        (object(), []),  # something unusable
    ],
)
def test_gold_answers(ground_truth, expected):
    assert gold_answers(ground_truth) == expected


@pytest.mark.parametrize(
    "prediction, golds, em, cover, token_f1",
    [
        ("Paris", ["Paris"], 1.0, 1.0, 1.0),  # identical
        ("the paris!", "Paris", 1.0, 1.0, 1.0),  # equal after normalisation
        ("Paris France", ["Paris"], 0.0, 1.0, 2 / 3),  # superset: cover yes, EM no, F1 partial
        ("Lyon", ["Paris", "Lyon"], 1.0, 1.0, 1.0),  # any gold counts
        ("Rome", ["Paris"], 0.0, 0.0, 0.0),  # wrong
        ("", ["Paris"], 0.0, 0.0, 0.0),  # empty prediction
        ("anything", ["the"], 0.0, 0.0, 0.0),  # gold normalising to "" covers nothing
        ("", ["a"], 1.0, 0.0, 1.0),  # both normalise to "": EM and F1 agree (SQuAD v2), cover does not
        ("Paris", [], 0.0, 0.0, 0.0),  # no golds
        (None, ["Paris"], 0.0, 0.0, 0.0),  # no prediction
    ],
)
def test_metrics(prediction, golds, em, cover, token_f1):
    assert exact_match(prediction, golds) == em
    assert cover_em(prediction, golds) == cover
    assert f1(prediction, golds) == pytest.approx(token_f1)


def test_f1_counts_repeated_tokens_once_per_occurrence():
    # "x b b" vs "b": one shared token (the gold has one "b"), precision 1/3, recall 1 -> F1 0.5
    assert f1("x b b", ["b"]) == pytest.approx(0.5)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<answer>Paris</answer>", "Paris"),  # the simple case
        ("<answer> a </answer> then <answer> b </answer>", "b"),  # the last one, stripped
        ("<answer>a</answer><information><answer>doc</answer></information>", "a"),  # never from observations
        ("<information>Doc 1: <answer>x</answer></information>", None),  # only an observation has one
        ("<answer>a</answer><information>unclosed <answer>b</answer>", "a"),  # unclosed info cuts the rest
        ("<answer>unclosed", None),  # no closing tag
        ("</answer><answer>", None),  # wrong order
        ("<answer></answer>", ""),  # empty but present
        ("<ANSWER>x</ANSWER>", None),  # tags are case-sensitive
        ("<answer>x<answer>y</answer>", "y"),  # the nearest opening before the last closing
        ("", None),  # empty text
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


def test_strip_information_keeps_policy_text_only():
    text = "think<information>\nDoc 1: a\n</information>more<information>b</information>end"
    assert strip_information(text) == "thinkmoreend"


@pytest.mark.parametrize(
    "fn, solution, ground_truth, score, error_type",
    [
        (qa_em, "<answer>Paris</answer>", ["Paris"], 1.0, None),  # correct
        (qa_em, "<answer>Rome</answer>", ["Paris"], 0.0, "qa:wrong_answer"),  # wrong
        (qa_em, "Paris", ["Paris"], 0.0, "qa:missing_answer"),  # right words, no tag
        (qa_em, "<answer>Paris</answer>", None, 0.0, "qa:no_gold_answer"),  # unusable ground truth
        (qa_f1, "<answer>Paris France</answer>", ["Paris"], 2 / 3, "qa:partial_match"),  # partial F1
        (qa_f1, "<answer>Paris</answer>", {"target": ["paris"]}, 1.0, None),  # full F1
        (qa_cover_em, "<answer>in Paris</answer>", ["Paris"], 1.0, None),  # covered
        (qa_cover_em, "<answer>Rome</answer>", ["Paris"], 0.0, "qa:wrong_answer"),  # not covered
    ],
)
def test_components(fn, solution, ground_truth, score, error_type):
    result = fn(solution, ground_truth)
    assert set(result) == {"score", "error_type"}
    assert result["score"] == pytest.approx(score)
    assert result["error_type"] == error_type


def test_eval_normalizer_option():
    # underscores: wrong under the training normaliser, right under RAG-R1's eval normaliser
    solution = "<answer>New_York</answer>"
    assert qa_em(solution, ["New York"])["score"] == 0.0
    assert qa_em(solution, ["New York"], normalizer="rag_r1_eval")["score"] == 1.0


@pytest.mark.parametrize("name", ["qa_em", "qa_f1", "qa_cover_em"])
def test_gold_gets_the_maximum(name):
    golds = {"target": np.array(["Barack Obama", "Obama"], dtype=object)}
    for gold in golds["target"]:
        result = REWARDS.get(name)(f"<think>sure</think><answer>{gold}</answer>", golds)
        assert result == {"score": 1.0, "error_type": None}
