"""Failures that are ours, or the data's, are never a silent 0 that reads as the model's wrong answer.

- a BFCL question the checker cannot read is `bfcl:bad_ground_truth`, and the reward wrappers count it
  (`reward/<name>/bad_ground_truth`, reduced per training step like `reward/<name>/exceptions`);
- any other exception inside the BFCL checker is a bug of ours: `ast_match` logs it and answers `bfcl:checker_bug`
  (an evaluation goes on), and the `bfcl_ast` reward raises it, so the wrappers count `reward/bfcl_ast/exceptions`;
- a decoder bug under `fc_format` is likewise `fc_format:decoder_bug` (logged) or a counted exception, never the
  model's `fc_format:undecodable_call`.
"""

from __future__ import annotations

import json
import logging

import pytest

from agentic_verl.rewards import failures, load_reward
from agentic_verl.rewards.bfcl import ast_match, bfcl_ast
from agentic_verl.rewards.compose import verl_compute_score
from agentic_verl.rewards.failures import exception_metrics
from agentic_verl.rewards.fc_format import DECODER_BUG, check_fc_format, fc_format

SCHEMA = {"type": "integer"}


@pytest.fixture(autouse=True)
def _fresh_counters(monkeypatch):
    """No exception streak and no "already logged" component carried in from other tests of this process."""
    failures.REWARD_EXCEPTIONS.clear()
    monkeypatch.setattr(failures, "_BAD_GROUND_TRUTH_LOGGED", set())
    yield
    failures.REWARD_EXCEPTIONS.clear()
GOOD = "[f(a=1)]"


def question(schema=SCHEMA, required=("a",), allowed=(1,)):
    functions = [{"name": "f", "parameters": {"type": "dict", "required": list(required) if isinstance(
        required, tuple) else required, "properties": {"a": schema}}}]
    return functions, [{"f": {"a": list(allowed)}}]


@pytest.mark.parametrize("schema,required,allowed,output,category", [
    ({}, ("a",), (1,), GOOD, "simple_python"),  # a parameter schema without a type
    (None, ("a",), (1,), GOOD, "simple_python"),  # a parameter schema that is not a dict
    ({"type": ["integer"]}, ("a",), (1,), GOOD, "simple_python"),  # a type that is not a string
    ({"type": "array"}, ("a",), ([1],), "[f(a=[1])]", "simple_python"),  # an array without items
    ({"type": "array", "items": None}, ("a",), ([1],), "[f(a=[1])]", "simple_python"),
    (SCHEMA, [{"a": 1}], (1,), GOOD, "simple_python"),  # required names that are not strings
    (SCHEMA, None, (1,), GOOD, "simple_python"),  # required that is not a list
    ({"type": "array", "items": {"type": "integer"}}, (), ([2], 0), "[f(a=[1])]", "simple_python"),  # option not a list
    ({"type": "dict"}, (), ({"k": [2]}, ["k"]), "[f(a={'k': 1})]", "simple_python"),  # a dict's option that is not a dict
    ({"type": "dict"}, (), ({"k": 1},), "[f(a={'k': 1})]", "simple_python"),  # a dict key's options not a list
    ({"type": "array", "items": {"type": "dict"}}, (), ([{"k": [2]}], 5), "[f(a=[{'k': 1}])]", "simple_python"),
    ({}, ("a",), (1,), "[f(a=1), f(a=1)]", "parallel"),  # in parallel too: not a silent "no match"
])
def test_unreadable_questions_are_bad_ground_truth(schema, required, allowed, output, category):
    functions, answer = question(schema, required, allowed)
    verdict = ast_match(output, functions, answer * (2 if category == "parallel" else 1), category)
    assert verdict["error_type"] == "bfcl:bad_ground_truth", verdict


def test_an_unknown_language_is_the_rows_fault_not_a_decode_failure():
    functions, answer = question()
    assert ast_match(GOOD, functions, answer, "simple_python", "cobol")["error_type"] == "bfcl:bad_ground_truth"
    assert bfcl_ast(GOOD, answer, {"functions": functions, "language": "cobol"})["error_type"] == "bfcl:bad_ground_truth"


def test_a_bad_ground_truth_is_counted_and_logged(caplog):
    functions, answer = question(schema={})
    compute_score = verl_compute_score(bfcl_ast)
    with caplog.at_level(logging.ERROR, logger="agentic_verl.rewards.failures"):
        rows = [compute_score("bfcl", GOOD, json.dumps(answer), {"functions": functions}) for _ in range(3)]
        good = compute_score("bfcl", GOOD, json.dumps(question()[1]), {"functions": question()[0]})
    assert [row["error_type"] for row in rows] == ["bfcl:bad_ground_truth"] * 3
    assert [row["reward/bfcl_ast/bad_ground_truth"] for row in rows + [good]] == [1.0, 1.0, 1.0, 0.0]
    assert good["score"] == 1.0 and good["reward/bfcl_ast/exceptions"] == 0.0
    assert any("reward/bfcl_ast/bad_ground_truth" in r.getMessage() for r in caplog.records)
    # the training step's log: the share of the step's samples whose ground truth was unusable
    metrics = exception_metrics(rows + [good])  # what trace_sampler.step_metrics reduces
    assert metrics["reward/bfcl_ast/bad_ground_truth/mean"] == 0.75
    # through a composition, under the component's key
    composed = load_reward([{"name": "bfcl_ast", "key": "ast"}, {"name": "fc_format", "weight": 0.1}])
    result = composed(GOOD, json.dumps(answer), {"functions": functions})
    assert result["reward/ast/bad_ground_truth"] == 1.0 and result["reward/fc_format/bad_ground_truth"] == 0.0


def _plant_bug(monkeypatch, module, name: str, error: Exception) -> None:
    """Replace `module.name` by a function that raises `error`: an exception nobody meant, inside our code."""

    def bug(*args, **kwargs):
        raise error

    monkeypatch.setattr(module, name, bug)


@pytest.fixture
def broken_checker(monkeypatch):
    """A bug inside our checker: the parameter check raises an exception nobody meant."""
    import agentic_verl.rewards.bfcl.check as check

    _plant_bug(monkeypatch, check, "_check_param", TypeError("checker bug"))


def test_a_checker_bug_is_logged_and_distinct_in_an_evaluation(broken_checker, caplog):
    functions, answer = question()
    with caplog.at_level(logging.ERROR, logger="agentic_verl.rewards.bfcl.match"):
        verdict = ast_match(GOOD, functions, answer, "simple_python")
    assert verdict["error_type"] == "bfcl:checker_bug" and "TypeError: checker bug" in verdict["errors"][0]
    assert any(r.exc_info and "checker bug" in str(r.exc_info[1]) for r in caplog.records)  # with its traceback


def test_a_checker_bug_is_a_counted_reward_exception(broken_checker):
    functions, answer = question()
    with pytest.raises(TypeError, match="checker bug"):
        bfcl_ast(GOOD, answer, {"functions": functions})
    result = verl_compute_score(bfcl_ast)("bfcl", GOOD, answer, {"functions": functions})
    assert result["reward/bfcl_ast/exceptions"] == 1.0 and result["reward/bfcl_ast/bad_ground_truth"] == 0.0
    assert result["error_type"] == "bfcl_ast:exception:TypeError"


@pytest.fixture
def broken_decoder(monkeypatch):
    import agentic_verl.rewards.fc_format as module

    _plant_bug(monkeypatch, module, "decode", KeyError("decoder bug"))


def test_a_decoder_bug_is_not_the_models_format_failure(broken_decoder, caplog):
    text = "<think>t</think>\n\n[f(a=1)]"
    with caplog.at_level(logging.ERROR, logger="agentic_verl.rewards.fc_format"):
        assert check_fc_format(text).error_type == DECODER_BUG
    assert any(r.exc_info for r in caplog.records)
    with pytest.raises(KeyError, match="decoder bug"):
        fc_format(text)
    result = verl_compute_score(fc_format)("bfcl", text, None, {})
    assert result["reward/fc_format/exceptions"] == 1.0 and result["error_type"] == "fc_format:exception:KeyError"


def test_the_models_own_failures_stay_model_failures():
    # the decoder's own failures (not a call list, too deep) are still the model's format verdicts
    assert check_fc_format("<think>t</think>\n\n[f(a=" + "[" * 5000 + "]").error_type == "fc_format:undecodable_call"
    functions, answer = question()
    assert ast_match("[f(a='x')]", functions, answer, "simple_python")["error_type"] == "type_error:simple"


@pytest.mark.parametrize("score", [float("nan"), float("inf"), "high", None])
def test_a_non_finite_score_never_reaches_verl(score):
    # a user's component that returns NaN: a 0 that says why, through the single entry as through a composition
    def nan_reward(solution_str, ground_truth, extra_info=None):
        return {"score": score, "error_type": None}

    result = verl_compute_score(nan_reward)("ds", "x", None, {})
    assert result["score"] == 0.0 and result["error_type"] == "nan_reward:non_finite_score"
