"""Widget size buckets: a box's share of its screenshot's area (no torch import).

Grounding accuracy falls with the target's size (ScreenSpot-Pro's targets are tiny), so results are broken down by
it. A box is "small" below 1% of the screenshot's area, "medium" below 4%, "large" from 4% on. On a 224x168
screenshot (Qwen2.5-VL's 28x28 patches: an 8x6 grid, one patch = 2.1% of the area) small boxes are under ~19x19
pixels, smaller than one patch.

>>> size_bucket([0, 0, 10, 10], (224, 168)), size_bucket([0, 0, 30, 30], (224, 168)), size_bucket([0, 0, 50, 50], (224, 168))
('small', 'medium', 'large')
"""

from __future__ import annotations

SIZE_BUCKETS = ("small", "medium", "large")
# upper bounds of the area share of "small" and "medium"
SMALL_BELOW = 0.01
MEDIUM_BELOW = 0.04


def area_share(bbox, image_size) -> float:
    """(x2 - x1) * (y2 - y1) / (width * height) for an (x1, y1, x2, y2) box in the image's pixels."""
    x1, y1, x2, y2 = (float(v) for v in bbox)
    width, height = (float(v) for v in image_size)
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {list(image_size)}")
    return abs(x2 - x1) * abs(y2 - y1) / (width * height)


def size_bucket(bbox, image_size) -> str:
    share = area_share(bbox, image_size)
    return "small" if share < SMALL_BELOW else "medium" if share < MEDIUM_BELOW else "large"
