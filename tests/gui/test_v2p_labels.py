"""V2P pointer labels: closed-form cases, an independent numeric integration, properties (sum 1, zero outside the
box), and the scaling from original pixels onto a processor's patch grid."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentic_verl.v2p.labels import pointer_label, scale_box, v2p_heatmap


def _phi(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def _mass(a: float, b: float, mu: float, sigma: float) -> float:
    return _phi((b - mu) / sigma) - _phi((a - mu) / sigma)


# ---------------------------------------------------------------- closed-form cases


def test_box_covering_whole_patches():
    # three columns of row 0 exactly; sigma_x = 84 around x = 42: outer columns equal, the middle one heavier
    label = v2p_heatmap((0, 0, 84, 28), image_width=112, image_height=56)
    outer, middle = _mass(0, 28, 42, 84), _mass(28, 56, 42, 84)
    total = 2 * outer + middle
    np.testing.assert_allclose(label[0, :3], [outer / total, middle / total, outer / total], rtol=1e-12)
    assert label[0, 3] == 0 and label[1].sum() == 0


def test_box_inside_one_patch_is_one_hot():
    label = v2p_heatmap((33, 61, 50, 80), image_width=112, image_height=112)  # inside patch (row 2, col 1)
    expected = np.zeros((4, 4))
    expected[2, 1] = 1.0
    np.testing.assert_array_equal(label, expected)


def test_point_sized_box_is_one_hot_on_its_patch():
    label = v2p_heatmap((60, 5, 60, 5), image_width=84, image_height=56)
    assert label[0, 2] == 1.0 and label.sum() == 1.0


def test_box_at_the_image_edge_drops_the_mass_outside():
    # box x 70..126 on a 112-wide image: sigma 56 around 98; columns 2 (70..84) and 3 (84..112, clipped)
    label = v2p_heatmap((70, 0, 126, 28), image_width=112, image_height=28)
    col2, col3 = _mass(70, 84, 98, 56), _mass(84, 112, 98, 56)
    np.testing.assert_allclose(label[0], [0, 0, col2 / (col2 + col3), col3 / (col2 + col3)], rtol=1e-12)


def test_box_on_the_right_and_bottom_border_patches():
    label = v2p_heatmap((56, 28, 112, 56), image_width=112, image_height=56)  # the last two patches, symmetric
    np.testing.assert_allclose(label, [[0, 0, 0, 0], [0, 0, 0.5, 0.5]], atol=1e-12)


def test_non_multiple_image_size_uses_a_partial_last_patch():
    label = v2p_heatmap((80, 0, 100, 10), image_width=100, image_height=10)  # grid ceil(100/28) = 4 columns
    assert label.shape == (1, 4) and label[0, 3] > label[0, 2] > 0  # 84..100 holds the centre (90)


# ---------------------------------------------------------------- against numeric integration (moved from tests/rewards)


def _numeric_heatmap(bbox, width, height, patch, sigma_factor, n=60):
    """An independent computation: 2-D midpoint-rule integration of the density over each patch ∩ box."""
    x1, y1, x2, y2 = bbox
    cx, cy, sx, sy = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / sigma_factor, (y2 - y1) / sigma_factor
    label = np.zeros((math.ceil(height / patch), math.ceil(width / patch)))
    for row in range(label.shape[0]):
        for col in range(label.shape[1]):
            a, b = max(col * patch, x1), min((col + 1) * patch, x2)
            c, d = max(row * patch, y1), min((row + 1) * patch, y2)
            if b <= a or d <= c:
                continue
            xs = a + (np.arange(n) + 0.5) * (b - a) / n
            ys = c + (np.arange(n) + 0.5) * (d - c) / n
            density = np.exp(-0.5 * (((xs[None, :] - cx) / sx) ** 2 + ((ys[:, None] - cy) / sy) ** 2))
            label[row, col] = density.mean() * (b - a) * (d - c)
    return label / label.sum()


@pytest.mark.parametrize(
    "bbox, sigma_factor",
    [
        ((30, 10, 100, 60), 1.0),  # the scripts' sigma_factor
        ((30, 10, 100, 60), 3.0),  # a sharper peak
        ((0, 0, 56, 56), 1.0),  # aligned to the patch grid
        ((5.5, 7.25, 40.5, 90.75), 2.0),  # fractional pixels
    ],
)
def test_v2p_heatmap_matches_numeric_integration(bbox, sigma_factor):
    label = v2p_heatmap(bbox, image_width=112, image_height=112, patch_size=28, sigma_factor=sigma_factor)
    assert label.shape == (4, 4)
    assert label.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(label, _numeric_heatmap(bbox, 112, 112, 28, sigma_factor), atol=1e-5)


def test_v2p_heatmap_zero_outside_the_box_and_peak_at_the_centre():
    label = v2p_heatmap((60, 60, 100, 100), image_width=168, image_height=168)
    assert label[0].sum() == 0 and label[:, 0].sum() == 0 and label[5].sum() == 0  # patches outside the box
    assert np.unravel_index(label.argmax(), label.shape) == (2, 2)  # the centre (80, 80) is in patch (2, 2)


def test_v2p_heatmap_degenerate_and_bad_boxes():
    one_hot = v2p_heatmap((40, 40, 40, 40), image_width=84, image_height=84)  # a zero-area box
    assert one_hot[1, 1] == 1.0 and one_hot.sum() == 1.0
    with pytest.raises(ValueError):
        v2p_heatmap((200, 200, 300, 300), image_width=84, image_height=84)  # outside the image
    with pytest.raises(ValueError):
        v2p_heatmap((0, 0, 10, 10), image_width=0, image_height=84)  # no image


# ---------------------------------------------------------------- properties and scaling


@settings(max_examples=60, deadline=None)
@given(x1=st.floats(0, 200), y1=st.floats(0, 150), w=st.floats(0, 120), h=st.floats(0, 120),
       sigma_factor=st.sampled_from([0.5, 1.0, 2.0, 4.0]))
def test_label_sums_to_one_and_is_zero_outside_the_box(x1, y1, w, h, sigma_factor):
    width, height = 224, 168
    box = (x1, y1, x1 + w, y1 + h)
    label = v2p_heatmap(box, width, height, sigma_factor=sigma_factor)
    assert label.shape == (6, 8) and label.min() >= 0
    assert label.sum() == pytest.approx(1.0)
    rows, cols = np.nonzero(label)
    for r, c in zip(rows, cols, strict=True):  # every labelled patch touches the box (or holds a zero-size box)
        assert c * 28 <= box[2] and box[0] <= (c + 1) * 28 and r * 28 <= box[3] and box[1] <= (r + 1) * 28


def test_pointer_label_scales_the_box_onto_the_processor_grid():
    # a 400x200 screenshot seen as 8x4 patches (224x112 input): the box scales by 0.56 on both axes
    label = pointer_label((0, 0, 100, 100), original_size=(400, 200), grid=(4, 8))
    np.testing.assert_allclose(label, v2p_heatmap((0, 0, 56, 56), 224, 112))
    assert scale_box((0, 0, 100, 100), (400, 200), (224, 112)) == (0.0, 0.0, 56.0, 56.0)
