"""GUI grounding rewards: parse a click, map it to original-image pixels, score it against a box.

Clicks are parsed (never executed) from the last ``<answer>`` block if there is one, else from the
whole text; the last candidate wins. Recognised forms: ``pyautogui.click(x=.., y=..)``,
``click(12, 34)``, ``(x, y)``, ``[x, y]``, ``[x1, y1, x2, y2]`` (the box's centre is the click) and
therefore JSON such as ``{"point": [x, y]}`` / ``{"bbox_2d": [x1, y1, x2, y2]}``.

Coordinates (``coord_system``): ``absolute`` pixels of the image the model saw, ``normalized`` (0-1),
``thousandths`` (0-1000), or ``auto`` (every value in [0, 1] -> normalized, else absolute; never
thousandths). Absolute coordinates are mapped back to the original image when the model-input size
is known (``extra_info["input_size"] = [w, h]`` or ``input_width``/``input_height``, or computed with
Qwen2.5-VL's :func:`smart_resize` when ``use_smart_resize=True``). The original size comes from
``extra_info["image_size"] = [w, h]`` or ``image_width``/``image_height`` (or the same keys in a dict
ground truth). Ground truth: ``[x1, y1, x2, y2]`` in original pixels, or a dict / JSON with ``"bbox"``.

>>> gui_click_in_box("pyautogui.click(x=15, y=25)", [10, 20, 30, 40])
{'score': 1.0, 'error_type': None, 'in_box': 1.0}
>>> gui_click_in_box('{"point": [0.5, 0.5]}', [90, 40, 110, 60], {"image_size": [200, 100]},
...                  coord_system="normalized")["score"]
1.0
>>> gui_gaussian_point("(20, 30)", [10, 20, 30, 40])["score"]
1.0
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from agentic_verl.rewards.qa import extract_answer
from agentic_verl.rewards.registry import REWARDS

__all__ = [
    "COORD_SYSTEMS",
    "ParsedClick",
    "gaussian_coverage_score",
    "gaussian_point_score",
    "gui_click_in_box",
    "gui_gaussian_coverage",
    "gui_gaussian_point",
    "parse_click",
    "point_in_box",
    "smart_resize",
]

COORD_SYSTEMS = ("absolute", "normalized", "thousandths", "auto")
# Qwen2.5-VL-7B-Instruct's preprocessor_config.json (transformers' class defaults are 3136 / 1003520).
QWEN25VL_MIN_PIXELS = 4 * 28 * 28
QWEN25VL_MAX_PIXELS = 16384 * 28 * 28

# digits may be grouped with underscores as in Python literals (`x=1_000_000` is 1e6, not 1); float() reads them
_DIGITS = r"\d+(?:_\d+)*"
_NUM = rf"[-+]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][-+]?{_DIGITS})?"
_SEQ_RE = re.compile(rf"[\[(]\s*({_NUM})\s*,\s*({_NUM})\s*(?:,\s*({_NUM})\s*,\s*({_NUM})\s*)?[\])]")
_CLICK_RE = re.compile(r"click\(([^()]{0,200})\)")
_KW_RE = re.compile(rf"\b([xy])\s*=\s*({_NUM})")
_NUM_RE = re.compile(_NUM)
_MIN_SIGMA = 1e-6


@dataclass(frozen=True)
class ParsedClick:
    point: tuple[float, float]
    box: tuple[float, float, float, float] | None = None  # set when the model gave a box


def parse_click(text: str) -> ParsedClick | None:
    """The last click in ``text`` (see the module docstring), in the model's coordinates, or None.

    >>> parse_click("I click pyautogui.click(12, 34.5)")
    ParsedClick(point=(12.0, 34.5), box=None)
    >>> parse_click('<answer>{"bbox_2d": [0, 0, 10, 20]}</answer>').point
    (5.0, 10.0)
    """
    if not isinstance(text, str):
        return None
    answer = extract_answer(text)
    region = answer if answer is not None else text
    best: tuple[int, ParsedClick] | None = None
    for match in _SEQ_RE.finditer(region):
        values = [float(v) for v in match.groups() if v is not None]
        click = _click_from_values(values)
        if click is not None and (best is None or match.start() >= best[0]):
            best = (match.start(), click)
    for match in _CLICK_RE.finditer(region):
        args = match.group(1)
        keywords = dict(_KW_RE.findall(args))
        if "x" in keywords and "y" in keywords:
            values = [float(keywords["x"]), float(keywords["y"])]
        else:
            values = [float(v) for v in _NUM_RE.findall(args)[:4]]
            if len(values) == 3:
                values = values[:2]
        click = _click_from_values(values)
        if click is not None and (best is None or match.start() > best[0]):
            best = (match.start(), click)
    return None if best is None else best[1]


def _click_from_values(values: list[float]) -> ParsedClick | None:
    if len(values) not in (2, 4) or not all(math.isfinite(v) for v in values):
        return None
    if len(values) == 2:
        return ParsedClick((values[0], values[1]))
    x1, y1, x2, y2 = values
    box = (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))
    centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
    if not all(math.isfinite(v) for v in centre):
        return None
    return ParsedClick(centre, box)


def smart_resize(
    height: int,
    width: int,
    factor: int = 28,
    min_pixels: int = QWEN25VL_MIN_PIXELS,
    max_pixels: int = QWEN25VL_MAX_PIXELS,
) -> tuple[int, int]:
    """The (height, width) Qwen2.5-VL's image processor resizes an image to.

    Both sides become multiples of ``factor``, the area lands in [min_pixels, max_pixels] and the
    aspect ratio is kept as closely as possible. Raises ValueError for an aspect ratio above 200 or a
    non-positive size, as the processor does.

    >>> smart_resize(1080, 1920)
    (1092, 1932)
    >>> smart_resize(1080, 1920, max_pixels=28 * 28 * 1280)
    (728, 1316)
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got height={height}, width={width}")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(
            f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}"
        )
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def point_in_box(point, box) -> bool:
    """Whether ``point`` lies in ``box`` = (x1, y1, x2, y2), edges included.

    >>> point_in_box((10, 20), (10, 20, 30, 40)), point_in_box((9.9, 20), (10, 20, 30, 40))
    (True, False)
    """
    x, y = point
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def gaussian_point_score(point, box) -> float:
    """GUI-G2 point reward: exp(-0.5 ((dx/sx)^2 + (dy/sy)^2)), centred on the box, sigma = half its size.

    >>> round(gaussian_point_score((30, 30), (10, 20, 30, 40)), 4)  # dx = one sigma
    0.6065
    """
    cx, cy, sx, sy = _gaussian(box)
    dx, dy = (point[0] - cx) / sx, (point[1] - cy) / sy
    value = math.exp(-0.5 * (dx * dx + dy * dy))  # products, not `** 2`: a far click overflows to inf, not an error
    return value if math.isfinite(value) else 0.0


def gaussian_coverage_score(pred_box, gt_box) -> float:
    """exp(-Bhattacharyya distance) between the two boxes' Gaussians (centre, sigma = half the size).

    Equals 1 only for identical boxes; a zero-size box gets sigma = 1e-6 px.

    >>> gaussian_coverage_score((0, 0, 10, 10), (0, 0, 10, 10))
    1.0
    """
    px, py, psx, psy = _gaussian(pred_box)
    gx, gy, gsx, gsy = _gaussian(gt_box)
    distance = 0.0
    for mu1, s1, mu2, s2 in ((px, psx, gx, gsx), (py, psy, gy, gsy)):
        var = (s1 * s1 + s2 * s2) / 2
        gap = mu1 - mu2
        distance += gap * gap / (8 * var) + 0.5 * math.log(var / (s1 * s2))  # inf, never OverflowError, when far
    value = math.exp(-distance) if math.isfinite(distance) else 0.0
    return min(1.0, value)


def _gaussian(box) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = box
    return (x1 + x2) / 2, (y1 + y2) / 2, max(0.5 * (x2 - x1), _MIN_SIGMA), max(0.5 * (y2 - y1), _MIN_SIGMA)


# ---------------------------------------------------------------- ground truth, sizes, the rewards


def _four_finite(value) -> tuple[float, float, float, float] | None:
    try:
        values = [float(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]
    except Exception:
        return None
    if len(values) != 4 or not all(math.isfinite(v) for v in values):
        return None
    x1, y1, x2, y2 = values
    return min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)


def _gt_box(ground_truth, depth: int = 0):
    if depth > 3:
        return None
    if isinstance(ground_truth, Mapping):
        for key in ("bbox", "bbox_2d", "box"):
            if key in ground_truth:
                return _gt_box(ground_truth[key], depth + 1)
        return None
    if isinstance(ground_truth, bytes):
        ground_truth = ground_truth.decode("utf-8", errors="replace")
    if isinstance(ground_truth, str):
        if len(ground_truth) > 10_000:
            return None
        try:
            return _gt_box(json.loads(ground_truth), depth + 1)
        except (ValueError, RecursionError):
            return None
    if isinstance(ground_truth, (str, int, float)) or ground_truth is None:
        return None
    return _four_finite(ground_truth)


def _size(sources, key: str) -> tuple[float, float] | None:
    """[w, h] under ``{key}_size`` or ``{key}_width``/``{key}_height`` in the first source that has it."""
    for source in sources:
        if not isinstance(source, Mapping):
            continue
        pair = source.get(f"{key}_size")
        if pair is None and f"{key}_width" in source and f"{key}_height" in source:
            pair = (source[f"{key}_width"], source[f"{key}_height"])
        if pair is None:
            continue
        if isinstance(pair, (str, bytes, Mapping)):
            return None
        try:
            w, h = (float(v) for v in (pair.tolist() if hasattr(pair, "tolist") else pair))
        except Exception:
            return None
        return (w, h) if math.isfinite(w) and math.isfinite(h) and w > 0 and h > 0 else None
    return None


def _validate(coord_system, use_smart_resize, factor, min_pixels, max_pixels) -> None:
    """Options are config: a bad one raises (before the model output is looked at)."""
    if coord_system not in COORD_SYSTEMS:
        raise ValueError(f"unknown coord_system {coord_system!r}; known: {', '.join(COORD_SYSTEMS)}")
    if not isinstance(use_smart_resize, bool):
        raise ValueError(f"use_smart_resize must be true or false, got {use_smart_resize!r}")
    for name, value in (("factor", factor), ("min_pixels", min_pixels), ("max_pixels", max_pixels)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if min_pixels > max_pixels:
        raise ValueError(f"min_pixels ({min_pixels}) must not exceed max_pixels ({max_pixels})")


def _prepare(solution_str, ground_truth, extra_info, coord_system, use_smart_resize, factor, min_pixels, max_pixels):
    """(click in original pixels, gt box) or an error type."""
    _validate(coord_system, use_smart_resize, factor, min_pixels, max_pixels)
    gt = _gt_box(ground_truth)
    if gt is None:
        return "gui:bad_ground_truth"
    click = parse_click(solution_str)
    if click is None:
        return "gui:no_click"
    sources = (extra_info, ground_truth)
    image = _size(sources, "image")
    values = list(click.point) + (list(click.box) if click.box else [])
    system = coord_system
    if system == "auto":
        system = "normalized" if all(0.0 <= v <= 1.0 for v in values) else "absolute"
    if system == "absolute":
        model_input = _size(sources, "input")
        if model_input is None and use_smart_resize and image is not None:
            try:
                h, w = smart_resize(int(image[1]), int(image[0]), factor, min_pixels, max_pixels)
            except (ValueError, ZeroDivisionError, OverflowError):
                return "gui:bad_image_size"
            model_input = (float(w), float(h))
        if model_input is not None and image is None:
            return "gui:missing_image_size"
        sx, sy = (image[0] / model_input[0], image[1] / model_input[1]) if model_input else (1.0, 1.0)
    else:
        if image is None:
            return "gui:missing_image_size"
        unit = 1.0 if system == "normalized" else 1000.0
        sx, sy = image[0] / unit, image[1] / unit
    scaled = [v * (sx if i % 2 == 0 else sy) for i, v in enumerate(values)]
    if not all(math.isfinite(v) for v in scaled):
        return "gui:bad_coordinates"
    box = tuple(scaled[2:]) if click.box else None
    return ParsedClick((scaled[0], scaled[1]), box), gt


def _gui_reward(score_fn, solution_str, ground_truth, extra_info, *options) -> dict:
    """options: coord_system, use_smart_resize, factor, min_pixels, max_pixels (see _prepare)."""
    prepared = _prepare(solution_str, ground_truth, extra_info, *options)
    if isinstance(prepared, str):
        return {"score": 0.0, "error_type": prepared, "in_box": 0.0}
    click, gt = prepared
    inside = point_in_box(click.point, gt)
    score, error = score_fn(click, gt)
    score = score if math.isfinite(score) else 0.0
    return {
        "score": float(score),
        "error_type": error or (None if inside else "gui:outside_box"),
        "in_box": float(inside),
    }


def _registered_gui_reward(name: str, score_fn, doc: str):
    """The reward `name`: `score_fn(click, gt) -> (score, error_type)` behind the shared click parsing.

    The options are named in the signature (not hidden in ``**kwargs``) so that a reward config's typo is
    caught by compose.check_kwargs; `__qualname__` is the module attribute so that the function pickles.
    """

    def reward(
        solution_str: str,
        ground_truth,
        extra_info: dict | None = None,
        *,
        coord_system: str = "absolute",
        use_smart_resize: bool = False,
        factor: int = 28,
        min_pixels: int = QWEN25VL_MIN_PIXELS,
        max_pixels: int = QWEN25VL_MAX_PIXELS,
        **kwargs,
    ) -> dict:
        options = (coord_system, use_smart_resize, factor, min_pixels, max_pixels)
        return _gui_reward(score_fn, solution_str, ground_truth, extra_info, *options)

    reward.__name__ = reward.__qualname__ = name
    reward.__doc__ = doc
    return REWARDS.register(name)(reward)


def _coverage_score(click: ParsedClick, gt):
    if click.box is None:
        return 0.0, "gui:point_not_box"
    return gaussian_coverage_score(click.box, gt), None


gui_click_in_box = _registered_gui_reward(
    "gui_click_in_box",
    lambda c, gt: (float(point_in_box(c.point, gt)), None),
    """1.0 if the parsed click falls in the ground-truth box (GUI-R1 accuracy), else 0.0.

    Error types: ``gui:no_click``, ``gui:outside_box``, ``gui:bad_ground_truth``,
    ``gui:missing_image_size``, ``gui:bad_image_size``, ``gui:bad_coordinates``.

    >>> gui_click_in_box("click(400, 300)", [150, 100, 250, 200],
    ...                  {"image_size": [400, 300], "input_size": [800, 600]})["score"]
    1.0
    """,
)

gui_gaussian_point = _registered_gui_reward(
    "gui_gaussian_point",
    lambda c, gt: (gaussian_point_score(c.point, gt), None),
    """GUI-G2 Gaussian point reward in [0, 1] at the click (or predicted box centre); 1 at the box centre.

    >>> round(gui_gaussian_point("[30, 30]", [10, 20, 30, 40])["score"], 4)  # one sigma off in x
    0.6065
    """,
)

gui_gaussian_coverage = _registered_gui_reward(
    "gui_gaussian_coverage",
    _coverage_score,
    """GUI-G2 coverage reward in [0, 1]: exp(-Bhattacharyya distance) of predicted and gt box Gaussians.

    Needs a predicted box; a bare point scores 0 with ``gui:point_not_box``.

    >>> gui_gaussian_coverage("[10, 20, 30, 40]", [10, 20, 30, 40])
    {'score': 1.0, 'error_type': None, 'in_box': 1.0}
    """,
)
