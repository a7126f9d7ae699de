"""V2P inference: region selection and centroid on hand-made heatmaps, the mapping back to original pixels, and one
forward pass of the tiny pointer model on a screenshot (grid = the processor's smart_resize)."""

from __future__ import annotations

import numpy as np
import pytest

from agentic_verl.v2p.inference import click_from_heatmap, select_region, to_original


def _grid(*cells, shape=(4, 5)):
    probs = np.zeros(shape)
    for (r, c), value in cells:
        probs[r, c] = value
    return probs / probs.sum()


@pytest.mark.parametrize("probs, expected", [
    # a single peak: the centre of its patch
    (_grid(((2, 3), 1.0)), (3.5 * 28, 2.5 * 28)),
    # two regions: the one with the highest peak wins even though the other holds more mass
    (_grid(((0, 0), 0.30), ((0, 1), 0.25), ((1, 0), 0.25), ((3, 4), 0.35)), (4.5 * 28, 3.5 * 28)),
    # diagonal neighbours are not 4-connected: the lone 0.4 peak wins alone
    (_grid(((1, 1), 0.4), ((2, 2), 0.35), ((3, 3), 0.25)), (1.5 * 28, 1.5 * 28)),
    # a region of two patches: the attention-weighted centroid (0.6 at col 1, 0.4 at col 2 -> col 1.4)
    (_grid(((1, 1), 0.6), ((1, 2), 0.4)), (1.9 * 28, 1.5 * 28)),
    # below 0.3 x max is dropped from the region (0.1 < 0.3 * 0.5)
    (_grid(((2, 0), 0.5), ((2, 1), 0.1)), (0.5 * 28, 2.5 * 28)),
])
def test_click_from_heatmap(probs, expected):
    assert click_from_heatmap(probs) == pytest.approx(expected)


def test_region_threshold_is_relative_to_the_maximum():
    probs = _grid(((0, 0), 0.5), ((0, 1), 0.16), ((0, 2), 0.14), ((3, 4), 0.2))
    assert select_region(probs).sum() == 2  # 0.16 >= 0.3 x 0.5 joins, 0.14 does not
    assert select_region(probs, threshold=0.35).sum() == 1


def test_to_original_scales_each_axis():
    assert to_original((56, 28), input_size=(224, 112), original_size=(448, 336)) == (112.0, 84.0)


def test_predict_click_with_the_tiny_pointer_model(pointer_dir, screens):
    from transformers import AutoProcessor

    from agentic_verl.rewards.gui import smart_resize
    from agentic_verl.v2p.inference import predict_click
    from agentic_verl.v2p.model import V2PForConditionalGeneration

    model = V2PForConditionalGeneration.from_pretrained(pointer_dir).eval()
    processor = AutoProcessor.from_pretrained(pointer_dir)
    image = screens[1].image  # 280x196
    click = predict_click(model, processor, image, "Click the Save button")
    h, w = smart_resize(image.size[1], image.size[0])
    assert click.input_size == (w, h)
    assert click.heatmap.shape == (h // 28, w // 28) and click.heatmap.sum() == pytest.approx(1.0, abs=1e-5)
    assert 0 <= click.point[0] <= image.size[0] and 0 <= click.point[1] <= image.size[1]
    # the click is the heatmap's own answer, scaled from the input grid to the screenshot
    expected = to_original(click_from_heatmap(click.heatmap), (w, h), image.size)
    assert click.point == pytest.approx(expected)
    assert 0 < click.region_mass <= 1 + 1e-9
