"""V2P pointer labels: a Gaussian over the ground-truth box, integrated over the 28x28 patch grid (no torch import).

docs/methods.md (V2P, "Labels"): for every patch overlapping the box, the probability mass of
N(box centre, diag(sx^2, sy^2)) over (patch ∩ box), with sx = w / sigma_factor and sy = h / sigma_factor (the paper's
scripts pass sigma_factor = 1); patches outside the box get 0; the label is normalised to sum 1. Mass that falls
outside the image (a box running past the edge) is dropped before normalising.

Coordinates: `v2p_heatmap` takes the box in the pixels of the image the model sees (after Qwen2.5-VL's resize);
`pointer_label` takes it in original-screenshot pixels and scales it onto a processor's patch grid.

>>> label = pointer_label([0, 0, 100, 50], original_size=(200, 100), grid=(2, 4))  # 2 rows x 4 cols of patches
>>> label.shape, round(float(label.sum()), 6), float(label[1].sum())
((2, 4), 1.0, 0.0)
"""

from __future__ import annotations

import math

import numpy as np

PATCH = 28  # Qwen2.5-VL: 14-pixel ViT patches merged 2x2 into one visual token


def v2p_heatmap(bbox, image_width: int, image_height: int, patch_size: int = PATCH, sigma_factor: float = 1.0):
    """V2P pointer label: Gaussian mass over patch ∩ box, normalised to sum 1; shape (rows, cols).

    The Gaussian is N(box centre, diag(sx^2, sy^2)) with sx = w / sigma_factor, sy = h / sigma_factor;
    patches outside the box get 0. ``bbox`` = (x1, y1, x2, y2) is in the pixels of the image the model sees (patch
    grid = ceil(size / patch_size)). A box of zero area gives a one-hot label on the patch holding its centre.
    Raises ValueError for a box outside the image or a bad size (labels are data, not model output).

    >>> label = v2p_heatmap([0, 0, 56, 28], image_width=84, image_height=56)
    >>> label.shape, float(label.sum()), float(label[0, 0]) == float(label[0, 1]), float(label[1, 0])
    ((2, 3), 1.0, True, 0.0)
    """
    if image_width <= 0 or image_height <= 0 or patch_size <= 0 or not sigma_factor > 0:
        raise ValueError("image size, patch_size and sigma_factor must be positive")
    x1, y1, x2, y2 = (float(v) for v in bbox)
    if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
        raise ValueError(f"bbox must be finite, got {bbox!r}")
    x1, x2 = sorted((x1, x2))
    y1, y2 = sorted((y1, y2))
    cols, rows = math.ceil(image_width / patch_size), math.ceil(image_height / patch_size)
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    if x2 < 0 or y2 < 0 or x1 > image_width or y1 > image_height:
        raise ValueError(f"bbox {bbox!r} lies outside the {image_width}x{image_height} image")
    col_mass = _axis_mass(x1, x2, cx, (x2 - x1) / sigma_factor, cols, patch_size, image_width)
    row_mass = _axis_mass(y1, y2, cy, (y2 - y1) / sigma_factor, rows, patch_size, image_height)
    label = np.outer(row_mass, col_mass)
    total = float(label.sum())
    if total <= 0.0 or not math.isfinite(total):
        label = np.zeros((rows, cols))
        row = min(max(int(cy // patch_size), 0), rows - 1)
        col = min(max(int(cx // patch_size), 0), cols - 1)
        label[row, col] = 1.0
        return label
    return label / total


def pointer_label(bbox, original_size, grid, patch_size: int = PATCH, sigma_factor: float = 1.0) -> np.ndarray:
    """The (rows, cols) label for ``bbox`` (x1, y1, x2, y2 in original pixels of an image of ``original_size`` =
    (width, height)) on a patch ``grid`` = (rows, cols), i.e. an input image of cols*patch x rows*patch pixels."""
    rows, cols = (int(v) for v in grid)
    box = scale_box(bbox, original_size, (cols * patch_size, rows * patch_size))
    return v2p_heatmap(box, cols * patch_size, rows * patch_size, patch_size, sigma_factor)


def scale_box(bbox, from_size, to_size) -> tuple[float, float, float, float]:
    """(x1, y1, x2, y2) in an image of ``from_size`` (w, h) -> the same box in an image of ``to_size``.

    >>> scale_box((10, 20, 30, 40), (100, 100), (200, 50))
    (20.0, 10.0, 60.0, 20.0)
    """
    sx, sy = to_size[0] / from_size[0], to_size[1] / from_size[1]
    x1, y1, x2, y2 = (float(v) for v in bbox)
    # rounded to 1e-6 px: 100 * 0.56 must land on the patch border 56, not 56.00000000000001 (a sliver of mass)
    return tuple(round(v, 6) for v in (x1 * sx, y1 * sy, x2 * sx, y2 * sy))


def _axis_mass(lo: float, hi: float, mu: float, sigma: float, n: int, patch: int, size: int) -> np.ndarray:
    mass = np.zeros(n)
    if sigma <= 0:
        return mass
    for i in range(max(0, int(lo // patch)), min(n, int(math.ceil(hi / patch)))):
        a, b = max(i * patch, lo, 0.0), min((i + 1) * patch, hi, float(size))
        if b > a:
            mass[i] = _interval_mass(a, b, mu, sigma)
    return mass


def _interval_mass(a: float, b: float, mu: float, sigma: float) -> float:
    """P(a < X < b) for X ~ N(mu, sigma^2), using erfc in the tails to avoid cancellation."""
    za, zb = (a - mu) / (sigma * math.sqrt(2)), (b - mu) / (sigma * math.sqrt(2))
    if za >= 0:
        return 0.5 * (math.erfc(za) - math.erfc(zb))
    if zb <= 0:
        return 0.5 * (math.erfc(-zb) - math.erfc(-za))
    return 0.5 * (math.erf(zb) - math.erf(za))
