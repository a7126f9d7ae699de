"""V2P inference: pointer distribution -> one click, mapped back to the original screenshot's pixels.

docs/methods.md (V2P, "Inference"): keep the patches whose probability is at least 0.3 x the maximum, group them into
4-connected regions, take the region holding the highest peak and click its attention-weighted centroid.

Coordinates: the processor resizes the screenshot with Qwen2.5-VL's `smart_resize` (sides multiples of 28, area
within min/max pixels) and the pointer distribution lives on that image's grid of 28x28 patches
(`image_grid_thw` / 2). A patch (row r, col c) covers input pixels [28c, 28c+28) x [28r, 28r+28); the centroid in
patch units is turned into input pixels at patch centres and scaled by original / input size per axis.

>>> import numpy as np
>>> heat = np.array([[0.0, 0.1, 0.0], [0.0, 0.5, 0.3], [0.1, 0.0, 0.0]])
>>> click_from_heatmap(heat)  # region {(1, 1), (1, 2)}: weighted centroid col 1.375, row 1 -> pixels
(52.5, 42.0)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from agentic_verl.v2p.actions import POINTER_ACTION, grounding_messages
from agentic_verl.v2p.labels import PATCH

THRESHOLD = 0.3


@dataclass
class PointerClick:
    point: tuple[float, float]  # original-screenshot pixels
    input_point: tuple[float, float]  # pixels of the resized image the model saw
    input_size: tuple[int, int]  # (width, height) of that image
    heatmap: np.ndarray = field(repr=False)  # (rows, cols) pointer probabilities
    region_mass: float = 0.0  # probability mass of the chosen region


def select_region(probs: np.ndarray, threshold: float = THRESHOLD) -> np.ndarray:
    """Boolean mask of the 4-connected region (patches >= threshold x max) that holds the global maximum."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or probs.size == 0:
        raise ValueError(f"expected a non-empty 2-D heatmap, got shape {probs.shape}")
    keep = probs >= threshold * probs.max()
    start = np.unravel_index(int(np.argmax(probs)), probs.shape)  # the highest peak's region is the one we want
    region = np.zeros_like(keep)
    region[start] = True
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= nr < probs.shape[0] and 0 <= nc < probs.shape[1] and keep[nr, nc] and not region[nr, nc]:
                region[nr, nc] = True
                queue.append((nr, nc))
    return region


def click_from_heatmap(probs: np.ndarray, threshold: float = THRESHOLD, patch: int = PATCH) -> tuple[float, float]:
    """(x, y) in input pixels: the attention-weighted centroid of the highest-peak region, at patch centres."""
    probs = np.asarray(probs, dtype=np.float64)
    region = select_region(probs, threshold)
    weights = np.where(region, probs, 0.0)
    total = weights.sum()
    rows, cols = np.indices(probs.shape)
    if total <= 0:  # an all-zero map: every patch is the "region"; click its centre
        weights, total = region.astype(np.float64), float(region.sum())
    col = float((weights * cols).sum() / total)
    row = float((weights * rows).sum() / total)
    return (col + 0.5) * patch, (row + 0.5) * patch


def to_original(point, input_size, original_size) -> tuple[float, float]:
    """Input-image pixels -> original-screenshot pixels (per-axis scale, as the processor's resize)."""
    return (point[0] * original_size[0] / input_size[0], point[1] * original_size[1] / input_size[1])


def pointer_inputs(processor, image, instruction: str):
    """Processor tensors for one grounding sample: the chat prompt plus the action with the pointer tokens (the
    hidden state at `<|pointer_pad|>` only sees what comes before it, so giving the action text is exact)."""
    messages = grounding_messages(instruction, image=image)
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + POINTER_ACTION
    return processor(text=[text], images=[image], return_tensors="pt")


def predict_click(model, processor, image, instruction: str, threshold: float | None = None) -> PointerClick:
    """One forward pass of a V2P model on (screenshot, instruction) -> the click in original pixels."""
    import torch

    image = image.convert("RGB")
    inputs = pointer_inputs(processor, image, instruction).to(model.device)
    if "pixel_values" in inputs:
        inputs["pixel_values"] = inputs["pixel_values"].to(model.dtype)
    with torch.no_grad():
        out = model(**inputs, logits_to_keep=1)
    _, grid_h, grid_w = (int(v) for v in inputs["image_grid_thw"][0])
    merge = int(getattr(processor.image_processor, "merge_size", 2))
    rows, cols = grid_h // merge, grid_w // merge
    probs = torch.softmax(out.pointer_logits[0].double(), dim=-1).reshape(rows, cols).cpu().numpy()
    probs = probs / probs.sum()
    threshold = model.config.click_threshold if threshold is None else threshold
    region = select_region(probs, threshold)
    input_point = click_from_heatmap(probs, threshold)
    input_size = (cols * PATCH, rows * PATCH)
    return PointerClick(point=to_original(input_point, input_size, image.size), input_point=input_point,
                        input_size=input_size, heatmap=probs, region_mass=float(probs[region].sum()))
