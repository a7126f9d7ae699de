"""The RAG-R1 / Search-R1 format reward: every verdict, both query modes, options."""

from __future__ import annotations

import pytest

from agentic_verl.rewards import REWARDS
from agentic_verl.rewards.format import FORMAT_ERRORS, check_format, format_reward

T = "<think>reason</think>"
INFO = "\n<information>\nDoc 1: text\n</information>\n"
ANSWER = "<answer> Beijing </answer>"


CASES = [
    (T + ANSWER, {}, None),  # answer straight away
    (T + "<search> q </search>" + INFO + T + ANSWER, {}, None),  # one search round
    (f"{T}<search>a</search>{INFO}{T}<search>b</search>{INFO}{T}{ANSWER}", {}, None),  # two rounds
    ("\n " + T + "\n" + ANSWER + "\n", {}, None),  # whitespace between blocks is fine
    (T + "<search>a, b, c</search>" + INFO + T + ANSWER, {"mode": "multi"}, None),  # three queries
    (T + "<search>Paris, France</search>" + INFO + T + ANSWER, {}, None),  # single mode: comma is text
    (T + "<search>a</search><information>Doc: <answer>x</answer> <think></information>" + T + ANSWER, {}, None),
    # ^ tags inside an observation are document text
    (ANSWER, {"require_think": False}, None),  # think optional when configured
    (T + "so: " + ANSWER, {"allow_text_outside_tags": True}, None),  # free text allowed when configured
    ("", {}, "format:missing_answer"),  # empty response
    (T, {}, "format:missing_answer"),  # thought, never answered
    (T + "<search>q</search>" + INFO, {}, "format:missing_answer"),  # searched, never answered
    (ANSWER, {}, "format:missing_think"),  # no think before the answer
    (T + "<search>q</search>" + INFO + ANSWER, {}, "format:missing_think"),  # no think after an observation
    (T + T + ANSWER, {}, "format:out_of_order"),  # two thinks in one turn
    (T + "<answer>x", {}, "format:unclosed_tag"),  # answer never closed
    ("<think>x", {}, "format:unclosed_tag"),  # think never closed
    (T + "<search>q</search><information>doc", {}, "format:unclosed_tag"),  # observation never closed
    ("<think>use <search>q</search></think>" + ANSWER, {}, "format:nested_tag"),  # a tag inside think
    ("<think>x</search>" + ANSWER, {}, "format:mismatched_tag"),  # closed by the wrong tag
    ("</think>" + T + ANSWER, {}, "format:unmatched_close"),  # a closing tag with nothing open
    ("hello " + T + ANSWER, {}, "format:text_outside_tags"),  # stray text before
    (T + "hm" + ANSWER, {}, "format:text_outside_tags"),  # stray text between
    (T + "<search>q</search>" + T + ANSWER, {}, "format:search_without_information"),  # no observation
    (T + "<search>q</search>" + ANSWER, {}, "format:search_without_information"),  # answered blind
    (T + "<information>made up</information>" + T + ANSWER, {}, "format:information_without_search"),
    # ^ the policy wrote its own observation
    (T + "<search>  </search>" + INFO + T + ANSWER, {}, "format:empty_search"),  # blank query
    (T + "<search>a,,b</search>" + INFO + T + ANSWER, {"mode": "multi"}, "format:empty_query"),  # empty part
    (T + "<search>a,</search>" + INFO + T + ANSWER, {"mode": "multi"}, "format:empty_query"),  # trailing comma
    (T + "<search>a,b,c,d</search>" + INFO + T + ANSWER, {"mode": "multi"}, "format:too_many_queries"),
    (T + "<search>a,b</search>" + INFO + T + ANSWER, {"mode": "multi", "max_queries": 1}, "format:too_many_queries"),
    (
        f"{T}<search>a</search>{INFO}{T}<search>b</search>{INFO}{T}{ANSWER}",
        {"max_searches": 1},
        "format:too_many_searches",
    ),  # one search allowed, two made
    (T + "<answer>  </answer>", {}, "format:empty_answer"),  # blank answer
    (T + ANSWER + "<search>q</search>", {}, "format:search_after_answer"),  # kept searching
    (T + ANSWER + T + ANSWER, {}, "format:content_after_answer"),  # a new turn after the answer
    (T + ANSWER + ANSWER, {}, "format:multiple_answers"),  # answered twice
    (T + ANSWER + " thanks!", {}, "format:content_after_answer"),  # trailing text
    (T + ANSWER + " thanks!", {"allow_text_outside_tags": True}, "format:content_after_answer"),  # even if allowed
]


@pytest.mark.parametrize("text, options, expected", CASES)
def test_check_format(text, options, expected):
    assert check_format(text, **options).error_type == expected


def test_every_documented_verdict_has_a_case():
    assert all(code.startswith("format:") for code in FORMAT_ERRORS)
    assert check_format(b"bytes").error_type == "format:not_text"  # type: ignore[arg-type]
    covered = {expected for _, _, expected in CASES} | {"format:not_text"}
    assert covered - {None} == set(FORMAT_ERRORS)


def test_counts_searches_and_queries():
    text = f"{T}<search>a, b</search>{INFO}{T}<search>c</search>{INFO}{T}{ANSWER}"
    result = format_reward(text, mode="multi")
    assert (result["num_searches"], result["num_queries"]) == (2.0, 3.0)
    assert format_reward(text, mode="single")["num_queries"] == 2.0  # single mode: one query per search


@pytest.mark.parametrize(
    "weight, text, score",
    [
        (1.0, T + ANSWER, 1.0),  # valid: the weight
        (0.2, T + ANSWER, 0.2),  # a smaller weight
        (-1.0, T + ANSWER, -1.0),  # a negative weight (a penalty form)
        (0.2, ANSWER, 0.0),  # invalid: zero
    ],
)
def test_weight(weight, text, score):
    assert format_reward(text, weight=weight)["score"] == pytest.approx(score)


@pytest.mark.parametrize(
    "options",
    [
        {"mode": "parallel"},  # unknown mode
        {"max_queries": 0},  # fewer than one query
        {"max_queries": "3"},  # not an integer
        {"weight": "high"},  # weight not a number
    ],
)
def test_bad_config_is_an_error(options):
    with pytest.raises(ValueError):
        format_reward(T + ANSWER, **options)


def test_gold_gets_the_maximum():
    gold = f"{T}<search> capital of China, Beijing population </search>{INFO}{T}<answer> Beijing </answer>"
    assert REWARDS.get("format")(gold, ["Beijing"], None, mode="multi") == {
        "score": 1.0,
        "error_type": None,
        "num_searches": 1.0,
        "num_queries": 2.0,
    }
