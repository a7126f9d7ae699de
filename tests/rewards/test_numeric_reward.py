"""numeric_em (agentic_verl/rewards/numeric.py) and its verl entry reward_fns/numeric_em.py: a table of cases, the
gold answer scoring 1, and hostile outputs that never raise and always land in a named error kind."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentic_verl.rewards import REWARDS
from agentic_verl.rewards.numeric import ERROR_TYPES, MAX_DIGITS, numeric_em, parse_number

REPO = Path(__file__).resolve().parents[2]

CASES = [
    # the plain right answer
    ("<answer>798950</answer>", "798950", 1.0, None),
    # thousands separators and surrounding spaces are not part of the number
    ("<answer> 798,950 </answer>", "798950", 1.0, None),
    ("<answer>798_950</answer>", "798950", 1.0, None),
    # 12.0 is 12
    ("<answer>12.0</answer>", "12", 1.0, None),
    # the last complete answer counts (a model that corrects itself)
    ("<answer>1</answer> no, <answer>2</answer>", "2", 1.0, None),
    # a sign is kept: SQuAD normalisation would call -5 and 5 equal
    ("<answer>-5</answer>", "5", 0.0, "numeric:wrong_answer"),
    # off by one
    ("<answer>798951</answer>", "798950", 0.0, "numeric:wrong_answer"),
    # words, units, expressions and exponents are not numbers
    ("<answer>798950 cookies</answer>", "798950", 0.0, "numeric:not_a_number"),
    ("<answer>5510 * 145</answer>", "798950", 0.0, "numeric:not_a_number"),
    ("<answer>1e3</answer>", "1000", 0.0, "numeric:not_a_number"),
    ("<answer></answer>", "1", 0.0, "numeric:not_a_number"),
    # no tag, or an unclosed one
    ("798950", "798950", 0.0, "numeric:missing_answer"),
    ("<answer>798950", "798950", 0.0, "numeric:missing_answer"),
    # a ground truth without a number scores 0 whatever the answer
    ("<answer>1</answer>", "one", 0.0, "numeric:no_gold_answer"),
    ("<answer>1</answer>", None, 0.0, "numeric:no_gold_answer"),
    # a list of golds, any matches
    ("<answer>7</answer>", ["6", "7"], 1.0, None),
]


@pytest.mark.parametrize("text, gold, score, error_type", CASES)
def test_cases(text, gold, score, error_type):
    assert numeric_em(text, gold) == {"score": score, "error_type": error_type}


def test_gold_scores_one_and_is_registered():
    assert numeric_em("<answer>40626</answer>", 40626)["score"] == 1.0
    assert REWARDS.get("numeric_em") is numeric_em


def test_a_number_longer_than_the_limit_is_not_a_number():
    assert parse_number("9" * MAX_DIGITS) is not None
    assert numeric_em(f"<answer>{'9' * (MAX_DIGITS + 3)}</answer>", "9")["error_type"] == "numeric:not_a_number"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=st.one_of(st.text(max_size=300), st.binary(max_size=50), st.none(), st.integers(), st.lists(st.text())),
       gold=st.one_of(st.text(max_size=20), st.integers(), st.none(), st.lists(st.integers(), max_size=3)))
def test_hostile_outputs_never_raise_and_get_a_named_kind(text, gold):
    out = numeric_em(text, gold)
    assert set(out) == {"score", "error_type"} and out["score"] in (0.0, 1.0)
    assert (out["score"] == 1.0) == (out["error_type"] is None)
    assert out["error_type"] is None or out["error_type"] in ERROR_TYPES


@settings(max_examples=100, deadline=None, derandomize=True)
@given(inside=st.text(alphabet="0123456789,._ -+e<>/answer", max_size=80), value=st.integers(-10**30, 10**30))
def test_answer_shaped_noise_never_raises(inside, value):
    out = numeric_em(f"<answer>{inside}</answer>", str(value))
    assert out["error_type"] is None or out["error_type"] in ERROR_TYPES


def test_verl_entry():
    spec = importlib.util.spec_from_file_location("numeric_em_entry", REPO / "reward_fns" / "numeric_em.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.compute_score("retool_arith", "<answer>40,626</answer>", "40626", {})
    assert out["score"] == 1.0 and out["error_type"] is None
    assert module.compute_score("retool_arith", "\x00" * 5, "40626", {})["error_type"] == "numeric:missing_answer"


def test_docstring_examples():
    import doctest

    import agentic_verl.rewards.numeric as module

    result = doctest.testmod(module)
    assert result.attempted >= 5 and result.failed == 0
