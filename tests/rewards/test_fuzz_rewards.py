"""Fuzz every registered reward with hostile model outputs and odd ground truths (issue 38, item 1).

The outputs come from `tests/hostile_outputs.py` (out-of-range and non-finite numbers, NUL and control characters,
20,000-character strings, thousands of calls, unbalanced and 500-deep brackets and tags, tag imitation, outputs cut
mid-call), plus each reward's own protocol around them (`<think>...</think>\\n\\n[calls]`, `<answer>`, clicks).
The ground truths and extra_info are what a user's data might hold: the right shape with hostile values (a NaN box,
a 20,000-character gold answer, a BFCL schema without a type, options that are not lists), JSON strings, numpy
arrays from parquet, and plain nonsense.

For every reward, through the component and through the wrapper verl calls (`verl_compute_score`): no exception,
a finite score in the reward's range, a namespaced `error_type` whenever the score is 0 (and never the wrapper's
`<name>:exception:*`: a component that raised would be a bug), and `reward/<name>/bad_ground_truth` set exactly
when the component says the ground truth is unusable. `bfcl_multi_turn` gets hostile per-step call lists on a
well-formed entry, with the environment's checker faked at its client (tests/rewards/bfcl/test_bfcl_multi_turn_reward.py
runs it against the real server).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hostile_outputs import (
    argument_values,
    brackets,
    clicks,
    control_text,
    cut_anywhere,
    hostile_text,
    long_strings,
    many_calls,
    numbers,
    python_calls,
    tag_imitations,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentic_verl.rewards import REWARDS, load_reward
from agentic_verl.rewards.compose import verl_compute_score
from agentic_verl.rewards.failures import REWARD_EXCEPTIONS

EXAMPLES = 250  # per reward and test; the whole file runs ~3,000 outputs per reward family
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# name -> (min, max) score with default options; every registered reward is listed (a new one fails the test below)
RANGES = {
    "qa_em": (0.0, 1.0), "qa_f1": (0.0, 1.0), "qa_cover_em": (0.0, 1.0), "format": (0.0, 1.0),
    "gui_click_in_box": (0.0, 1.0), "gui_gaussian_point": (0.0, 1.0), "gui_gaussian_coverage": (0.0, 1.0),
    "bfcl_ast": (0.0, 1.0), "fc_format": (0.0, 1.0), "bfcl_multi_turn": (0.0, 1.0), "numeric_em": (0.0, 1.0),
}  # fmt: skip
SCORES_WITHOUT_ERROR = ("gui_gaussian_point", "gui_gaussian_coverage")  # graded: a far click scores ~0 validly


@pytest.fixture(autouse=True)
def _no_streaks_across_tests():
    """The per-process exception streaks (failures.py) start and end empty: bfcl_multi_turn's counted exceptions here
    must not trip another test's fail-fast."""
    REWARD_EXCEPTIONS.clear()
    yield
    REWARD_EXCEPTIONS.clear()


def test_every_registered_reward_is_fuzzed():
    assert set(REWARDS.names()) <= set(RANGES), "a new reward: add it to RANGES and give it hostile inputs here"


# -- hostile outputs in each reward's protocol -----------------------------------------------------------------------
outputs = hostile_text()
think = st.one_of(st.just("reasoning"), control_text(), tag_imitations(), long_strings())
calls = st.one_of(python_calls(), many_calls(), cut_anywhere(python_calls()), brackets(), numbers(),
                  st.sampled_from(["[cd(folder=1e999)]", "[f(a=float('nan'))]", "[f(a=10**10**10)]", "[f(a=-1e309)]",
                                   "[f(a='\x00\x01')]", "[f(**{'a': 1})]", "[f(a=[" * 300 + "]"]))
fc_outputs = st.builds(lambda t, sep, c: f"<think>{t}</think>{sep}{c}", think,
                       st.sampled_from(["\n\n", " ", "\n\n\n", ""]), calls)
rag_outputs = st.builds(lambda t, q, a: f"<think>{t}</think><search>{q}</search><information>d</information>"
                                        f"<think>t</think><answer>{a}</answer>",
                        think, outputs, st.one_of(outputs, control_text(), long_strings(), tag_imitations()))
pixels = st.floats(0, 4000)
near_clicks = st.builds(lambda x, y, form: form.format(x=x, y=y), pixels, pixels,
                        st.sampled_from(["pyautogui.click(x={x}, y={y})", "click({x}, {y})", "[{x}, {y}]",
                                         '{{"point": [{x}, {y}]}}', "({x}, {y})"]))
gui_outputs = st.one_of(near_clicks, near_clicks, clicks(), cut_anywhere(clicks()),
                        st.builds(lambda a, b: a + b, clicks(), outputs))
any_output = st.one_of(outputs, fc_outputs, rag_outputs, gui_outputs)

# -- ground truths and extra_info a user's data might hold -----------------------------------------------------------
odd_numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**400), 10**400),
                        st.sampled_from([0, -1, 1e308, -1e-308, 2**63, True]))
odd_strings = st.one_of(control_text(), long_strings(), st.text(max_size=30), numbers(), tag_imitations())
leaves = st.one_of(st.none(), st.booleans(), odd_numbers, odd_strings, st.binary(max_size=8))
nonsense = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(["target", "golden_answers", "bbox", "image_size", "input_size",
                                                   "functions", "category", "language", "ground_truth"]),
                                  st.text(max_size=4)), inner, max_size=4),
        st.lists(odd_numbers, max_size=4).map(lambda xs: np.array(xs, dtype=object)),
    ),
    max_leaves=10,
)
qa_truths = st.one_of(
    st.lists(odd_strings, max_size=4),
    st.builds(lambda golds: {"target": np.array(golds, dtype=object)}, st.lists(odd_strings, max_size=4)),
    st.lists(odd_numbers, max_size=3),
    nonsense,
)
good_boxes = st.tuples(pixels, pixels, pixels, pixels).map(lambda b: [min(b[0], b[2]), min(b[1], b[3]),
                                                                      max(b[0], b[2]), max(b[1], b[3])])
boxes = st.one_of(good_boxes, good_boxes, st.lists(odd_numbers, min_size=0, max_size=6))
good_sizes = st.tuples(st.integers(1, 8000), st.integers(1, 8000)).map(list)
sizes = st.one_of(good_sizes, good_sizes, st.lists(odd_numbers, min_size=2, max_size=2), nonsense)
gui_truths = st.one_of(good_boxes, good_boxes, good_boxes, boxes.map(lambda b: {"bbox": b}), boxes.map(json.dumps),
                       nonsense)
gui_infos = st.one_of(st.fixed_dictionaries({"image_size": sizes}, optional={"input_size": sizes}),
                      st.fixed_dictionaries({"image_size": sizes}), nonsense)

# BFCL: a question of the right shape whose schema and options are anything a dataset may hold
TYPES = ["integer", "string", "array", "dict", "tuple", "float", "boolean", "any", "HashMap", "Array", "ArrayList",
         "long", "String", "Boolean", "Bigint", "mystery", ""]  # fmt: skip
json_values = st.recursive(st.one_of(st.none(), st.booleans(), odd_numbers, odd_strings),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.sampled_from(["k", "a", ""]), inner, max_size=3)),
                           max_leaves=8)
typed = st.fixed_dictionaries({"type": st.sampled_from(TYPES)},
                              optional={"items": st.fixed_dictionaries({"type": st.sampled_from(TYPES)})})
schemas = st.one_of(typed, typed, typed, st.fixed_dictionaries({"type": st.sampled_from(TYPES)},
                                                               optional={"items": json_values}), json_values)
CATEGORIES = ["simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
              "live_simple", "irrelevance", "live_relevance", "no_such_category"]


@st.composite
def bfcl_rows(draw):
    """(ground_truth, extra_info): a question of the right shape with hostile schemas, options and encodings."""
    names = draw(st.lists(st.sampled_from(["f", "g.h", "cd", "x" * 300, "\x00"]), min_size=1, max_size=3, unique=True))
    functions = [{"name": name, "parameters": {"type": "dict", "required": draw(st.one_of(
        st.just(["a"]), st.just([]), st.just(["a", "b"]), st.lists(json_values, max_size=2), json_values)), "properties": {"a": draw(schemas),
                                                                                         "b": draw(schemas)}}}
                 for name in names]
    answer = [{name: {"a": draw(st.lists(json_values, max_size=3)), "b": draw(st.lists(json_values, max_size=2))}}
              for name in draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))]
    encode = draw(st.sampled_from(["plain", "json", "numpy", "wrapped"]))
    if encode == "json":
        answer, functions = json.dumps(answer, default=str), json.dumps(functions, default=str)
    elif encode == "numpy":
        answer, functions = np.array(answer, dtype=object), np.array(functions, dtype=object)
    elif encode == "wrapped":
        answer = {"ground_truth": answer}
    info = {"functions": functions, "category": draw(st.sampled_from(CATEGORIES)),
            "language": draw(st.sampled_from([None, "python", "java", "javascript", "cobol"]))}
    return answer, info


bfcl_truths = st.one_of(bfcl_rows(), bfcl_rows(), bfcl_rows(), st.tuples(nonsense, nonsense))


@st.composite
def bfcl_cases(draw):
    """(output, ground_truth, extra_info): mostly calls of the question's own functions with hostile arguments (so
    the checker, not only the decoder, sees them), else any hostile output."""
    ground_truth, extra_info = draw(bfcl_truths)
    functions = extra_info.get("functions") if isinstance(extra_info, dict) else None
    names = [f["name"] for f in functions if isinstance(f, dict)] if isinstance(functions, list) else []
    if names and draw(st.integers(0, 3)):
        values = st.one_of(argument_values(), json_values.map(repr))  # hostile source text, or literals that decode
        call = st.builds(lambda name, a, b: f"{name}(a={a}, b={b})", st.sampled_from(names), values, values)
        output = draw(st.builds(lambda calls, t: f"<think>{t}</think>\n\n[{', '.join(calls)}]",
                                st.lists(call, min_size=1, max_size=3), think))
    else:
        output = draw(st.one_of(fc_outputs, calls, outputs))
    return output, ground_truth, extra_info


# -- the checks ------------------------------------------------------------------------------------------------------
WRAPPED = {name: verl_compute_score(REWARDS.get(name)) for name in RANGES if name != "bfcl_multi_turn"}


def assert_scored(name: str, result: dict) -> None:
    low, high = RANGES[name]
    assert isinstance(result, dict)
    score = result["score"]
    assert isinstance(score, float) and math.isfinite(score) and low <= score <= high, (name, score)
    error_type = result["error_type"]
    assert error_type is None or (isinstance(error_type, str) and error_type.split(":", 1)[0] and ":" in error_type)
    if score == 0.0 and name not in SCORES_WITHOUT_ERROR:
        assert error_type is not None, (name, "a zero without a reason")


def check(name: str, output, ground_truth, extra_info) -> None:
    assert_scored(name, REWARDS.get(name)(output, ground_truth, extra_info))
    wrapped = WRAPPED[name]("data_source", output, ground_truth, extra_info)
    assert_scored(name, wrapped)
    key = REWARDS.get(name).__name__  # the wrapper's metrics are named after the function (format_reward)
    assert wrapped[f"reward/{key}/exceptions"] == 0.0, wrapped["error_type"]  # nothing raised inside
    unusable = str(wrapped["error_type"]).endswith(":bad_ground_truth")
    assert wrapped[f"reward/{key}/bad_ground_truth"] == (1.0 if unusable else 0.0)


@pytest.mark.parametrize("name", ["qa_em", "qa_f1", "qa_cover_em", "format"])
@SETTINGS
@given(output=st.one_of(rag_outputs, outputs), ground_truth=qa_truths, extra_info=nonsense)
def test_qa_and_format_rewards(name, output, ground_truth, extra_info):
    check(name, output, ground_truth, extra_info)


@pytest.mark.parametrize("name", ["gui_click_in_box", "gui_gaussian_point", "gui_gaussian_coverage"])
@SETTINGS
@given(output=gui_outputs | outputs, ground_truth=gui_truths, extra_info=gui_infos)
def test_gui_rewards(name, output, ground_truth, extra_info):
    check(name, output, ground_truth, extra_info)


@pytest.mark.parametrize("name", ["bfcl_ast", "fc_format"])
@SETTINGS
@given(case=bfcl_cases())
@example(case=("<think>r</think>\n\n[f(a=1)]", None, {"category": np.array([], dtype=object)}))  # parquet arrays
@example(case=("<think>r</think>\n\n[f(a=1)]", None, {"language": np.array(["java", "python"], dtype=object)}))
def test_function_calling_rewards(name, case):
    check(name, *case)


numeric_answers = st.one_of(numbers(), st.integers().map(str), control_text(), long_strings(), tag_imitations(),
                            st.sampled_from(["1,234", "-0", "1e999", "nan", "3635 * 225", "N", " 42 ", "0x1F"]))
numeric_outputs = st.builds(lambda before, answer: f"{before}<answer>{answer}</answer>",
                            st.one_of(st.just(""), outputs, tag_imitations()), numeric_answers)


@SETTINGS
@given(output=st.one_of(numeric_outputs, numeric_outputs, outputs),
       ground_truth=st.one_of(numeric_answers, st.integers(), st.floats(), nonsense), extra_info=nonsense)
def test_numeric_reward(output, ground_truth, extra_info):
    check("numeric_em", output, ground_truth, extra_info)


@pytest.mark.parametrize("option", ["accept_code_fences", "python_unary_operators", "optimal_parallel_matching"])
@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(output=st.one_of(fc_outputs, calls), row=bfcl_rows())
def test_bfcl_ast_lenient_options(option, output, row):
    ground_truth, extra_info = row
    assert_scored("bfcl_ast", REWARDS.get("bfcl_ast")(output, ground_truth, extra_info, **{option: True}))


COMPOSED = load_reward([{"name": name} for name in RANGES if name != "bfcl_multi_turn"])


@SETTINGS
@given(output=any_output, ground_truth=st.one_of(qa_truths, gui_truths, nonsense), extra_info=gui_infos)
def test_a_composition_of_every_reward(output, ground_truth, extra_info):
    result = COMPOSED(output, ground_truth, extra_info)
    assert math.isfinite(result["score"]) and result["score"] == pytest.approx(
        sum(result[c.key] for c in COMPOSED.components))
    assert all(result[f"reward/{c.key}/exceptions"] == 0.0 for c in COMPOSED.components)


# -- bfcl_multi_turn: hostile calls per step, the checker faked at its client -----------------------------------------
class _Checker:
    """BfclEnvClient.check's answer for any trajectory (the real server's verdicts: test_bfcl_multi_turn_reward.py)."""

    def __init__(self, answer):
        self.answer = answer

    async def check(self, *, entry, model_calls):
        json.dumps(model_calls)  # what the real client sends: the model's calls must still be JSON
        return self.answer


ENTRY = {"id": "multi_turn_base_0", "question": [[{"role": "user", "content": "go"}], [{"role": "user",
         "content": "again"}]], "initial_config": {}, "involved_classes": ["GorillaFileSystem"],
         "function": [{"name": "cd"}], "ground_truth": [["cd(folder='a')"], ["ls()"]]}  # fmt: skip
verdicts = st.one_of(
    st.just({"valid": True, "per_turn": [True, True]}),
    st.builds(lambda t, per: {"valid": False, "error_type": t, "per_turn": per},
              st.sampled_from(["multi_turn:instance_state_mismatch", "multi_turn:execution_response_mismatch",
                               "multi_turn:empty_turn_model_response"]),
              st.lists(st.booleans(), max_size=2)),
)
step_calls = st.lists(st.lists(st.one_of(python_calls(), control_text(), long_strings(), numbers(), brackets()),
                               max_size=4), max_size=3)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(output=outputs, turns=st.lists(step_calls, min_size=0, max_size=3), answer=verdicts,
       terminated=st.sampled_from([None, "max_tokens", "response_budget", "max_steps", "eos"]))
def test_bfcl_multi_turn_on_hostile_calls(monkeypatch, output, turns, answer, terminated):
    import agentic_verl.rewards.bfcl.multi_turn as multi_turn

    monkeypatch.setattr(multi_turn, "new_env_client", lambda url, key_env, timeout_s: _Checker(answer))
    monkeypatch.setattr(multi_turn, "_BACKGROUND", multi_turn._BackgroundLoop())
    record = {"model_calls": turns[:2], "terminated": terminated, "env_url": "http://127.0.0.1:1",
              "turns": [{"steps": len(t), "calls": sum(len(s) for s in t)} for t in turns[:2]]}
    extra_info = {**ENTRY, "bfcl_multi_turn": record}
    result = multi_turn.bfcl_multi_turn(output, None, extra_info)
    assert_scored("bfcl_multi_turn", result)
    assert result["bfcl_mt/calls"] == sum(len(s) for t in turns[:2] for s in t)


# -- the reward_fns/ entries verl loads by path ----------------------------------------------------------------------
def _entry(file: str, name: str = "compute_score"):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / file
    spec = importlib.util.spec_from_file_location(f"_fuzz_entry_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


ENTRIES = {
    "qa_em": _entry("reward_fns/qa_em.py"),
    "gui_click_in_box": _entry("reward_fns/gui_click.py"),
    "gui_gaussian_point": _entry("reward_fns/gui_click.py", "compute_score_gaussian_point"),
    "gui_gaussian_coverage": _entry("reward_fns/gui_click.py", "compute_score_gaussian_coverage"),
    "bfcl_ast": _entry("reward_fns/bfcl_ast.py"),
    "bfcl_multi_turn": _entry("reward_fns/bfcl_multi_turn.py"),
}


@pytest.mark.parametrize("name", sorted(ENTRIES))
@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(output=any_output, row=st.one_of(bfcl_truths, st.tuples(st.one_of(qa_truths, gui_truths), gui_infos)),
       data_source=nonsense)
def test_reward_fns_entries(name, output, row, data_source):
    ground_truth, extra_info = row
    # max_consecutive_exceptions=0: bfcl_multi_turn raises on every row without a trajectory (a data bug, counted);
    # here that must stay a counted 0, not stop the fuzz
    result = ENTRIES[name](data_source, output, ground_truth, extra_info, max_consecutive_exceptions=0,
                           reward_router_address=None)
    assert_scored(name, result)
    if name != "bfcl_multi_turn":
        assert result[f"reward/{name}/exceptions"] == 0.0, result["error_type"]
    elif result[f"reward/{name}/exceptions"]:
        assert result["error_type"].startswith("bfcl_multi_turn:exception:")


def test_composed_entry_on_hostile_input():
    config = str(__import__("pathlib").Path(__file__).resolve().parents[2] / "reward_fns/configs/rag_r1_em_format.yaml")
    compute_score = _entry("reward_fns/composed.py")

    @settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(output=any_output, ground_truth=qa_truths, extra_info=nonsense)
    def run(output, ground_truth, extra_info):
        result = compute_score("nq", output, ground_truth, extra_info, config=config)
        assert math.isfinite(result["score"]) and not any(
            value for key, value in result.items() if key.endswith("/exceptions"))

    run()
