"""GUI grounding rewards: click parsing, coordinate systems, smart_resize, the scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentic_verl.rewards import REWARDS
from agentic_verl.rewards.gui import (
    ParsedClick,
    gaussian_coverage_score,
    gaussian_point_score,
    gui_click_in_box,
    gui_gaussian_coverage,
    gui_gaussian_point,
    parse_click,
    smart_resize,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("pyautogui.click(x=12, y=34)", ParsedClick((12.0, 34.0))),  # keywords
        ("pyautogui.click(y=34, x=12)", ParsedClick((12.0, 34.0))),  # keywords in any order
        ("pyautogui.click(12, 34)", ParsedClick((12.0, 34.0))),  # positional
        ("click(x=0.25, y=0.5, clicks=2)", ParsedClick((0.25, 0.5))),  # extra arguments ignored
        ("(12, 34)", ParsedClick((12.0, 34.0))),  # a tuple
        ("[12.5, 34]", ParsedClick((12.5, 34.0))),  # a list
        ("[10, 20, 30, 40]", ParsedClick((20.0, 30.0), (10.0, 20.0, 30.0, 40.0))),  # a box -> its centre
        ("[30, 40, 10, 20]", ParsedClick((20.0, 30.0), (10.0, 20.0, 30.0, 40.0))),  # corners in any order
        ('{"point": [5, 6]}', ParsedClick((5.0, 6.0))),  # JSON point
        ('{"bbox_2d": [0, 0, 10, 20]}', ParsedClick((5.0, 10.0), (0.0, 0.0, 10.0, 20.0))),  # JSON box
        ("first (1, 2) then (3, 4)", ParsedClick((3.0, 4.0))),  # the last candidate wins
        ("<think>(1, 2)</think><answer>(3, 4)</answer> (5, 6)", ParsedClick((3.0, 4.0))),  # answer block first
        ("(1e2, -5)", ParsedClick((100.0, -5.0))),  # exponents and signs
        ("click(x=1_000_000, y=2_5.5)", ParsedClick((1_000_000.0, 25.5))),  # Python's digit groups, not x=1
        ("[1_2, 3_4]", ParsedClick((12.0, 34.0))),  # digit groups in a list
        ("no numbers here", None),  # nothing to parse
        ("(1, 2, 3)", None),  # three numbers are neither a point nor a box
        ("(1e999, 2)", None),  # infinity is not a coordinate
        ("[abc, 2]", None),  # not numbers
    ],
)
def test_parse_click(text, expected):
    assert parse_click(text) == expected


@pytest.mark.parametrize(
    "height, width",
    [
        (1080, 1920),  # a full-HD screenshot
        (28, 28),  # exactly one patch: grown to min_pixels
        (10, 2000),  # a thin strip (aspect 200, the limit)
        (4000, 3000),  # a large photo: shrunk below max_pixels
        (57, 85),  # sides that round differently
        (1, 150),  # one pixel high: rounds to 0, then the min_pixels branch
    ],
)
@pytest.mark.parametrize("max_pixels", [28 * 28 * 1280, 16384 * 28 * 28])  # transformers' default, Qwen2.5-VL's
def test_smart_resize_matches_transformers(height, width, max_pixels):
    # the Qwen2-VL/2.5-VL image processor in transformers is the reference implementation
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize as reference

    assert smart_resize(height, width, max_pixels=max_pixels) == reference(
        height, width, factor=28, min_pixels=4 * 28 * 28, max_pixels=max_pixels
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8000), st.integers(1, 8000))
def test_smart_resize_property(height, width):
    if max(height, width) / min(height, width) > 200:
        with pytest.raises(ValueError):
            smart_resize(height, width)
        return
    h, w = smart_resize(height, width)
    assert h % 28 == 0 and w % 28 == 0 and h >= 28 and w >= 28
    assert 4 * 28 * 28 <= h * w <= 16384 * 28 * 28


@pytest.mark.parametrize(
    "solution, extra_info, options, score, error_type",
    [
        ("click(15, 25)", None, {}, 1.0, None),  # absolute, no resize
        ("click(10, 20)", None, {}, 1.0, None),  # the box edge counts as inside
        ("click(31, 25)", None, {}, 0.0, "gui:outside_box"),  # just outside
        ("(0.2, 0.3)", {"image_size": [100, 100]}, {"coord_system": "normalized"}, 1.0, None),  # 0-1
        ("(200, 300)", {"image_size": [100, 100]}, {"coord_system": "thousandths"}, 1.0, None),  # 0-1000
        ("(0.2, 0.3)", {"image_width": 100, "image_height": 100}, {"coord_system": "auto"}, 1.0, None),
        # ^ auto: all values in [0, 1] -> normalized; sizes as separate keys
        ("(15, 25)", {"image_size": [100, 100]}, {"coord_system": "auto"}, 1.0, None),  # auto: else absolute
        ("(30, 50)", {"image_size": [100, 100], "input_size": [200, 200]}, {}, 1.0, None),
        # ^ the model saw a 2x image: (30, 50) -> (15, 25)
        ("(30, 50)", {"image_size": [100, 100]}, {}, 0.0, "gui:outside_box"),  # same click, no resize info
        ("(0.2, 0.3)", None, {"coord_system": "normalized"}, 0.0, "gui:missing_image_size"),  # cannot scale
        ("(30, 50)", {"input_size": [200, 200]}, {}, 0.0, "gui:missing_image_size"),  # resized, original unknown
        ("no click", None, {}, 0.0, "gui:no_click"),  # nothing parseable
        ("(1e308, 1e308)", {"image_size": [4000, 4000]}, {"coord_system": "thousandths"}, 0.0, "gui:bad_coordinates"),
        # ^ finite but overflows when scaled
    ],
)
def test_click_in_box(solution, extra_info, options, score, error_type):
    result = gui_click_in_box(solution, [10, 20, 30, 40], extra_info, **options)
    assert (result["score"], result["error_type"]) == (score, error_type)
    assert result["in_box"] == score


def test_smart_resize_option_maps_model_coordinates_back():
    # a 1920x1080 screenshot seen at smart_resize size (1932x1092): the model's pixel (966, 546) is the centre
    h, w = smart_resize(1080, 1920)
    extra = {"image_size": [1920, 1080]}
    solution = f"pyautogui.click(x={w / 2}, y={h / 2})"
    box = [950, 530, 970, 550]
    assert gui_click_in_box(solution, box, extra, use_smart_resize=True)["score"] == 1.0
    assert gui_click_in_box(solution, [955, 535, 965, 545], extra)["score"] == 0.0  # unscaled (966, 546) misses


@pytest.mark.parametrize(
    "ground_truth, error_type",
    [
        ({"bbox": [10, 20, 30, 40]}, None),  # a dict
        ('{"bbox": [10, 20, 30, 40]}', None),  # a JSON string
        ("[10, 20, 30, 40]", None),  # a JSON list
        (np.array([10, 20, 30, 40]), None),  # a numpy array
        ([30, 40, 10, 20], None),  # corners in any order
        ([10, 20, 30], "gui:bad_ground_truth"),  # three numbers
        ("box", "gui:bad_ground_truth"),  # not a box
        (None, "gui:bad_ground_truth"),  # missing
        ([float("nan"), 0, 1, 1], "gui:bad_ground_truth"),  # NaN
    ],
)
def test_ground_truth_forms(ground_truth, error_type):
    assert gui_click_in_box("(20, 30)", ground_truth)["error_type"] == error_type


@pytest.mark.parametrize(
    "point, expected",
    [
        ((20, 30), 1.0),  # the centre
        ((30, 30), math.exp(-0.5)),  # one sigma (half the width = 10 px) off in x
        ((20, 20), math.exp(-0.5)),  # one sigma off in y
        ((30, 40), math.exp(-1.0)),  # one sigma off in both
        ((40, 30), math.exp(-2.0)),  # two sigmas off in x
    ],
)
def test_gaussian_point_score(point, expected):
    assert gaussian_point_score(point, (10, 20, 30, 40)) == pytest.approx(expected)


def _bhattacharyya_coverage(pred, gt):
    """An independent computation: exp(-D_B) with full 2x2 covariance matrices (numpy)."""

    def gaussian(box):
        mu = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
        return mu, np.diag([(0.5 * (box[2] - box[0])) ** 2, (0.5 * (box[3] - box[1])) ** 2])

    (m1, c1), (m2, c2) = gaussian(pred), gaussian(gt)
    c = (c1 + c2) / 2
    d = m1 - m2
    db = d @ np.linalg.inv(c) @ d / 8 + 0.5 * np.log(np.linalg.det(c) / np.sqrt(np.linalg.det(c1) * np.linalg.det(c2)))
    return float(np.exp(-db))


@pytest.mark.parametrize(
    "pred",
    [
        (10, 20, 30, 40),  # identical
        (12, 20, 32, 40),  # shifted
        (0, 0, 100, 100),  # much larger
        (19, 29, 21, 31),  # much smaller, same centre
        (200, 200, 220, 220),  # far away
    ],
)
def test_gaussian_coverage_score_matches_bhattacharyya(pred):
    assert gaussian_coverage_score(pred, (10, 20, 30, 40)) == pytest.approx(
        _bhattacharyya_coverage(pred, (10, 20, 30, 40)), rel=1e-9, abs=1e-300
    )


def test_gaussian_coverage_needs_a_box():
    assert gui_gaussian_coverage("(20, 30)", [10, 20, 30, 40]) == {
        "score": 0.0,
        "error_type": "gui:point_not_box",
        "in_box": 1.0,
    }
    assert gui_gaussian_coverage("[0, 0, 1, 1]", [10, 20, 30, 40])["error_type"] == "gui:outside_box"


@pytest.mark.parametrize("name", ["gui_click_in_box", "gui_gaussian_point", "gui_gaussian_coverage"])
@pytest.mark.parametrize(
    "template, extra_info, options",
    [
        ("[{x1}, {y1}, {x2}, {y2}]", None, {}),  # absolute, original size
        ("[{x1}, {y1}, {x2}, {y2}]", {"image_size": [400, 300], "input_size": [800, 600]}, {"scale": 2}),
        ('{{"bbox_2d": [{x1}, {y1}, {x2}, {y2}]}}', {"image_size": [400, 300]}, {"coord_system": "thousandths"}),
    ],
)
def test_gold_gets_the_maximum(name, template, extra_info, options):
    gt = [100, 50, 140, 90]
    options = dict(options)
    scale = options.pop("scale", 1)
    if options.get("coord_system") == "thousandths":
        size = extra_info["image_size"]
        values = [gt[0] / size[0] * 1000, gt[1] / size[1] * 1000, gt[2] / size[0] * 1000, gt[3] / size[1] * 1000]
    else:
        values = [v * scale for v in gt]
    solution = "<answer>" + template.format(x1=values[0], y1=values[1], x2=values[2], y2=values[3]) + "</answer>"
    result = REWARDS.get(name)(solution, {"bbox": gt}, extra_info, **options)
    assert result["score"] == pytest.approx(1.0)
    assert result["error_type"] is None


@pytest.mark.parametrize(
    "options, message",
    [
        ({"coord_system": "pixels"}, "thousandths"),  # unknown coordinate system, known ones listed
        ({"use_smart_resize": "yes"}, "true or false"),  # not a bool
        ({"factor": 0}, "positive integer"),  # no patch size
        ({"max_pixels": 1.5e6}, "positive integer"),  # a float where the processor takes an int
        ({"min_pixels": 10, "max_pixels": 5}, "must not exceed"),  # an empty range
    ],
)
def test_bad_options_are_config_errors(options, message):
    with pytest.raises(ValueError, match=message):
        gui_gaussian_point("(1, 2)", [0, 0, 5, 5], **options)


def test_gaussian_point_reward_prefers_closer_clicks():
    gt = [100, 100, 200, 200]
    scores = [gui_gaussian_point(f"click({x}, 150)", gt)["score"] for x in (150, 170, 200, 260)]
    assert scores == sorted(scores, reverse=True) and scores[0] == 1.0 and scores[-1] < scores[-2]
