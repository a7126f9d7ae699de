"""V2P SFT samples for verl's SFT trainer: verl's own `MultiTurnSFTDataset` (chat template, images through the
processor, Qwen2.5-VL's 3-D rope positions, loss mask on the assistant turn) plus each sample's pointer label.

Rows are `agentic-verl data gui` parquet rows: `messages` (system, user `<image>` + instruction, assistant
`pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)`), `images` ([{"bytes": ...}]) and the box in
original-screenshot pixels at `reward_model.ground_truth.bbox`. The label (`gui.labels.pointer_label`, docs/methods.md
"V2P", "Labels") is computed on the patch grid the processor produced for this sample (`image_grid_thw`), so it always
matches the patches the model sees, and is added as `pointer_labels`: a 1-D float tensor over the image's merged
28x28 patches in row-major order (the collator makes it a jagged tensor, one row per sample).

Config keys (under `data:`, next to verl's own): `pointer_sigma_factor` (sigma = box size / factor; the paper's
scripts pass 1).
"""

from __future__ import annotations

import io

import torch
from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

from agentic_verl.v2p.actions import POINTER_PAD
from agentic_verl.v2p.labels import pointer_label

POINTER_LABELS_KEY = "pointer_labels"


class V2PSFTDataset(MultiTurnSFTDataset):
    """verl's multi-turn SFT dataset over `data gui` rows (one screenshot, one click each) + `pointer_labels`."""

    def __init__(self, parquet_files, tokenizer, config, processor=None, max_samples: int = -1):
        if processor is None:
            raise ValueError("V2P SFT needs the model's processor: model.path must be a V2P folder with its processor "
                             "(python -m agentic_verl.v2p.model --base ... --out ...)")
        super().__init__(parquet_files, tokenizer, config, processor=processor, max_samples=max_samples)
        self.sigma_factor = float(config.get("pointer_sigma_factor", 1.0))
        self.merge = int(getattr(processor.image_processor, "merge_size", 2))
        self.pad_id = tokenizer.convert_tokens_to_ids(POINTER_PAD)
        if self.pad_id is None or self.pad_id == tokenizer.unk_token_id:
            raise ValueError(f"the tokenizer has no {POINTER_PAD} token: model.path must be a V2P folder "
                             "(python -m agentic_verl.v2p.model --base ... --out ...)")
        missing = {self.image_key, "reward_model"} - set(self.dataframe.columns)
        if missing:
            raise ValueError(f"{parquet_files}: no column(s) {sorted(missing)}; write V2P SFT data with "
                             "`agentic-verl data gui`")

    def __getitem__(self, item):
        sample = super().__getitem__(item)
        row = self.dataframe.iloc[item]
        where = f"{self.parquet_files} row {item}"
        images = list(row[self.image_key])
        grids = sample.get("multi_modal_inputs", {}).get("image_grid_thw")
        if len(images) != 1 or grids is None or len(grids) != 1:
            raise ValueError(f"{where}: V2P SFT needs exactly one screenshot per sample, got {len(images)}")
        pads = sample["input_ids"] == self.pad_id
        if int(pads.sum()) != 1 or not bool(sample["loss_mask"][pads].all()):
            raise ValueError(f"{where}: the assistant target must hold exactly one {POINTER_PAD} "
                             f"(found {int(pads.sum())} in the sample)")
        bbox = _ground_truth_box(row["reward_model"], where)
        _, grid_h, grid_w = (int(v) for v in grids[0])
        label = pointer_label(bbox, _image_size(images[0], where), (grid_h // self.merge, grid_w // self.merge),
                              sigma_factor=self.sigma_factor)
        sample[POINTER_LABELS_KEY] = torch.tensor(label.ravel(), dtype=torch.float32)
        return sample


def _ground_truth_box(reward_model, where: str) -> list[float]:
    truth = (reward_model or {}).get("ground_truth") or {}
    box = truth.get("bbox") if isinstance(truth, dict) else None
    if box is None or len(box) != 4:
        raise ValueError(f"{where}: no reward_model.ground_truth.bbox [x1, y1, x2, y2] (original pixels); write V2P "
                         "SFT data with `agentic-verl data gui`")
    return [float(v) for v in box]


def _image_size(image, where: str) -> tuple[int, int]:
    """(width, height) of the original screenshot: a {"bytes"} / {"path"} / {"image"} entry or a PIL image."""
    from PIL import Image

    if isinstance(image, Image.Image):
        return image.size
    if isinstance(image, dict) and image.get("bytes") is not None:
        source = io.BytesIO(image["bytes"])
    elif isinstance(image, dict) and image.get("path"):
        source = image["path"]
    elif isinstance(image, dict) and isinstance(image.get("image"), Image.Image):
        return image["image"].size
    else:
        raise ValueError(f"{where}: cannot read the screenshot's size from {type(image).__name__}")
    with Image.open(source) as opened:
        return opened.size
