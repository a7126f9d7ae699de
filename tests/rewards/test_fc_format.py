"""The `fc_format` reward (FunReason's `<think>...</think>\\n\\n[calls]` target): every verdict from a table, the
documented options, the docstring examples, the gold target, and no exception on any input."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentic_verl.rewards.fc_format as fc_format_module
from agentic_verl.agent_loops.prompts import funreason_target
from agentic_verl.rewards import REWARDS
from agentic_verl.rewards.fc_format import FC_FORMAT_ERRORS, check_fc_format, fc_format

GOOD = "<think>The user wants 1 + 2, so add.</think>\n\n[add(a=1, b=2)]"


@pytest.mark.parametrize("text,error", [
    (GOOD, None),  # the target
    ("  \n" + GOOD, None),  # leading whitespace
    ("<think>t</think>\n\n[add(a=1), sub(b=2)]", None),  # parallel calls
    ("<think>t</think>\n\n[add(a=1)]\n", None),  # a trailing newline
    (None, "fc_format:not_text"),  # not a string
    ("[add(a=1)]", "fc_format:missing_think"),  # no reasoning
    ("Sure. <think>t</think>\n\n[add(a=1)]", "fc_format:missing_think"),  # text before the reasoning
    ("<think>t\n\n[add(a=1)]", "fc_format:unclosed_think"),
    ("<think>a</think>\n\n<think>b</think>\n\n[add(a=1)]", "fc_format:multiple_think"),
    ("<think>a <think>b</think>\n\n[add(a=1)]", "fc_format:multiple_think"),  # nested
    ("<think> \n </think>\n\n[add(a=1)]", "fc_format:empty_think"),
    ("<think>t</think>", "fc_format:missing_output"),
    ("<think>t</think>[add(a=1)]", "fc_format:separator"),  # SRML splits at </think>\n\n
    ("<think>t</think>\n[add(a=1)]", "fc_format:separator"),
    ("<think>t</think>\n\n [add(a=1)]", "fc_format:separator"),  # a space after the blank line
    ("<think>t</think>\n\n[add(a=1", "fc_format:undecodable_call"),  # cut off
    ('<think>t</think>\n\n{"name": "add", "arguments": {"a": 1}}', "fc_format:undecodable_call"),  # JSON call
    ("<think>t</think>\n\nadd(a=", "fc_format:undecodable_call"),
    ("<think>t</think>\n\nThe sum is 3.", "fc_format:no_call"),  # prose
    ("<think>t</think>\n\n[]", "fc_format:no_call"),  # an empty call list
])
def test_verdicts(text, error):
    assert check_fc_format(text).error_type == error
    assert fc_format(text)["score"] == (1.0 if error is None else 0.0)


def test_every_error_type_is_documented_and_reachable():
    assert set(FC_FORMAT_ERRORS) == {e for e in (check_fc_format(t).error_type for t in (
        None, "x", "<think>t", "<think>a</think><think>b</think>", "<think></think>\n\nx", "<think>t</think>",
        "<think>t</think>[f(a=1)]", "<think>t</think>\n\n[f(", "<think>t</think>\n\nno")) if e is not None}


@pytest.mark.parametrize("extra_info,require_call,score", [
    ({"category": "irrelevance"}, "auto", 1.0),  # no call is the right answer there
    ({"category": "live_irrelevance"}, "auto", 1.0),
    ({"category": "simple_python"}, "auto", 0.0),
    (None, "auto", 0.0),
    ({"category": "simple_python"}, False, 1.0),
    ({"category": "irrelevance"}, True, 0.0),
])
def test_require_call(extra_info, require_call, score):
    assert fc_format("<think>none fits</think>\n\nI cannot help.", None, extra_info,
                     require_call=require_call)["score"] == score


def test_options():
    assert fc_format(GOOD, weight=0.25)["score"] == 0.25
    assert fc_format("<think>t</think> [add(a=1)]", strict_separator=False)["error_type"] is None
    java = "<think>t</think>\n\n[Calc.add(a=1)]"
    assert fc_format(java, extra_info={"language": "java"})["num_calls"] == 1.0
    for bad in ({"weight": "1"}, {"weight": True}, {"require_call": "sometimes"}):
        with pytest.raises(ValueError):
            fc_format(GOOD, **bad)


def test_gold_target_scores_the_maximum():
    """What `data fc` writes as the SFT target (prompts.funreason_target) is well formed."""
    assert fc_format(funreason_target("The user wants the weather.", "[get_weather(city='Paris')]")) == {
        "score": 1.0, "error_type": None, "num_calls": 1.0}
    assert REWARDS.get("fc_format") is fc_format


def test_docstring_examples():
    result = doctest.testmod(fc_format_module)
    assert result.attempted > 0 and result.failed == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.text(max_size=200), st.lists(st.sampled_from(
    ["<think>", "</think>", "\n\n", "[", "]", "(", ")", "f", "a=1", ",", " ", "'", "{", "}"]), max_size=40).map("".join)),
       extra_info=st.one_of(st.none(), st.integers(), st.dictionaries(st.sampled_from(["category", "language"]),
                                                                      st.one_of(st.text(max_size=12), st.integers()))))
def test_any_input_gets_a_well_formed_verdict(text, extra_info):
    result = fc_format(text, None, extra_info)
    assert result["score"] in (0.0, 1.0) and result["error_type"] in (None, *FC_FORMAT_ERRORS)
    assert isinstance(result["num_calls"], float)
