"""Every reward, on any input: no exception, a finite score in its documented range, a bounded run time.

Arbitrary unicode, protocol-shaped fragments, nonsense ground truths and extra_info, and 1 MB adversarial
inputs (the shapes that make backtracking regexes quadratic) go to every registered reward component,
to a composition of all of them, and to the reward_fns/ entries.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentic_verl.rewards import REWARDS
from agentic_verl.rewards.compose import load_reward

REPO = Path(__file__).resolve().parents[2]

# name -> (min, max) score for default options (format's range is [0, weight], weight = 1).
RANGES = {
    "qa_em": (0.0, 1.0),
    "qa_f1": (0.0, 1.0),
    "qa_cover_em": (0.0, 1.0),
    "format": (0.0, 1.0),
    "gui_click_in_box": (0.0, 1.0),
    "gui_gaussian_point": (0.0, 1.0),
    "gui_gaussian_coverage": (0.0, 1.0),
}
OURS = sorted(RANGES)
ALL = load_reward([{"name": name, "weight": 1.0} for name in OURS])

FRAGMENTS = [
    "<think>",
    "</think>",
    "<search>",
    "</search>",
    "<information>",
    "</information>",
    "<answer>",
    "</answer>",
    "<ANSWER>",
    "<answer ",
    "Doc 1:",
    ",",
    ", ,",
    " ",
    "\n",
    "Paris",
    "the",
    "_",
    '"',
    "\u201c",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    '"point":',
    '"bbox_2d":',
    "pyautogui.click(",
    "click(",
    "x=",
    "y=",
    "0.5",
    "12",
    "-3",
    "1e400",
    "1e308",
    "nan",
    "inf",
    ".",
    "\x00",
    "\ud7ff",
    "🙂",
    "ǅ",
    "\u0130",
]
texts = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=60).map("".join),
)
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.binary(max_size=10),
    st.sampled_from(["[1, 2, 3, 4]", '{"bbox": [0, 0, 5, 5]}', "[[[[", "Paris"]),
)
KEYS = [
    "target",
    "golden_answers",
    "answers",
    "bbox",
    "bbox_2d",
    "image_size",
    "input_size",
    "image_width",
    "image_height",
    "input_width",
    "input_height",
    "x",
]
nonsense = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=4)), children, max_size=5),
        st.lists(st.floats(), max_size=5).map(lambda xs: np.array(xs, dtype=float)),
        st.lists(st.text(max_size=5), max_size=4).map(lambda xs: np.array(xs, dtype=object)),
    ),
    max_leaves=12,
)


def assert_well_formed(result, low, high):
    assert isinstance(result, dict)
    assert isinstance(result["score"], float) and math.isfinite(result["score"])
    assert low <= result["score"] <= high
    assert result["error_type"] is None or (isinstance(result["error_type"], str) and ":" in result["error_type"])


@pytest.mark.parametrize("name", OURS)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(solution=texts, ground_truth=nonsense, extra_info=nonsense)
def test_any_input_gets_a_finite_score_in_range(name, solution, ground_truth, extra_info):
    assert_well_formed(REWARDS.get(name)(solution, ground_truth, extra_info), *RANGES[name])


@pytest.mark.parametrize("coord_system", ["normalized", "thousandths", "auto"])
@settings(max_examples=60, deadline=None)
@given(solution=texts, ground_truth=nonsense, extra_info=nonsense, use_smart_resize=st.booleans())
def test_gui_options_on_any_input(coord_system, solution, ground_truth, extra_info, use_smart_resize):
    for name in ("gui_click_in_box", "gui_gaussian_point", "gui_gaussian_coverage"):
        result = REWARDS.get(name)(
            solution, ground_truth, extra_info, coord_system=coord_system, use_smart_resize=use_smart_resize
        )
        assert_well_formed(result, 0.0, 1.0)


@settings(max_examples=80, deadline=None)
@given(
    solution=texts,
    ground_truth=nonsense,
    mode=st.sampled_from(["single", "multi"]),
    weight=st.floats(-10, 10),
    allow_text=st.booleans(),
    require_think=st.booleans(),
)
def test_format_score_is_zero_or_weight(solution, ground_truth, mode, weight, allow_text, require_think):
    result = REWARDS.get("format")(
        solution,
        ground_truth,
        None,
        mode=mode,
        weight=weight,
        allow_text_outside_tags=allow_text,
        require_think=require_think,
    )
    assert result["score"] in (0.0, weight)
    if weight != 0.0:
        assert (result["error_type"] is None) == (result["score"] == weight)


@settings(max_examples=80, deadline=None)
@given(solution=texts, ground_truth=nonsense, extra_info=nonsense)
def test_composition_of_everything(solution, ground_truth, extra_info):
    result = ALL(solution, ground_truth, extra_info)
    assert_well_formed(result, 0.0, float(len(OURS)))
    assert result["score"] == pytest.approx(sum(result[name] for name in OURS))


def _entry(file: str, name: str = "compute_score"):
    spec = importlib.util.spec_from_file_location(f"_entry_{Path(file).stem}", REPO / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


ENTRIES = [
    (_entry("reward_fns/qa_em.py"), {}),
    (_entry("reward_fns/gui_click.py"), {}),
    (_entry("reward_fns/gui_click.py", "compute_score_gaussian_point"), {"coord_system": "auto"}),
    (_entry("reward_fns/gui_click.py", "compute_score_gaussian_coverage"), {}),
    (_entry("reward_fns/composed.py"), {"config": str(REPO / "reward_fns/configs/rag_r1_em_format.yaml")}),
]


@pytest.mark.parametrize("index", range(len(ENTRIES)))
@settings(max_examples=60, deadline=None)
@given(solution=texts, ground_truth=nonsense, extra_info=nonsense, data_source=nonsense)
def test_reward_fns_entries_on_any_input(index, solution, ground_truth, extra_info, data_source):
    fn, kwargs = ENTRIES[index]
    result = fn(
        data_source=data_source, solution_str=solution, ground_truth=ground_truth, extra_info=extra_info, **kwargs
    )
    assert_well_formed(result, 0.0, 1.1)


MB = 1 << 20
HUGE = {
    "letters": "a" * MB,
    "unicode": ("🙂ǅ\u0130ß\u200b" * MB)[:MB],
    "open_angles": "<" * MB,
    "open_answers": "<answer>" * (MB // 8),
    "closed_answers": "<answer>x</answer>" * (MB // 18),
    "open_information": "<information>" * (MB // 13),
    "open_think_then_answer": "<think>" * (MB // 7) + "<answer>a</answer>",
    "searches": ("<think>t</think><search>" + "q," * 50 + "</search><information>d</information>") * (MB // 200),
    "digits_after_bracket": "(" + "1" * MB,
    "brackets_and_digits": ("[1" + " " * 20) * (MB // 22),
    "almost_points": "(1, " * (MB // 4),
    "spaces_in_tuple": "(1" + " " * MB + ",",
    "clicks": "click(" * (MB // 6),
    "long_click_args": ("click(" + "x" * 300) * (MB // 306),
    "articles": "the a an " * (MB // 9),
    "punctuation": "!.,;:'\"_-" * (MB // 9),
    "valid_protocol_with_huge_doc": "<think>t</think><search>q</search><information>"
    + "doc " * (MB // 4)
    + "</information><think>t</think><answer>Paris</answer>",
}
HUGE_GOLDS = [["Paris"], {"target": np.array(["x" * MB], dtype=object)}, [10, 20, 30, 40]]


@pytest.mark.timeout(120)  # a catastrophic (quadratic) regex on 1 MB would take hours; linear scans take ms
@pytest.mark.parametrize("shape", sorted(HUGE))
def test_huge_inputs_finish(shape):
    text = HUGE[shape]
    for ground_truth in HUGE_GOLDS:
        result = ALL(text, ground_truth, {"image_size": [1920, 1080]})
        assert_well_formed(result, 0.0, float(len(OURS)))
        assert not any(
            value.startswith(tuple(f"{n}:exception" for n in OURS))
            for value in result.values()
            if isinstance(value, str)
        )


def test_huge_valid_protocol_still_scores():
    # a 1 MB retrieved document does not hide the policy's answer or break the format check
    result = ALL(HUGE["valid_protocol_with_huge_doc"], ["Paris"])
    assert result["qa_em"] == 1.0 and result["format"] == 1.0
