"""Training batches for the V2P model: chat text with the pointer action, LM labels on the answer only, and the
Gaussian pointer label of each sample on the patch grid the processor produced.

    batch = build_batch(processor, [(screenshot, "Open settings", (x1, y1, x2, y2)), ...])
    out = model(**batch)      # out.loss = w_lm * CE + w_ptr * (KL + valley), see gui.model / gui.loss

The label is computed after the processor's resize (from `image_grid_thw`), from the box in original pixels, so it
always matches the patches the model sees. `pointer_labels` is a (B, N_max) tensor, row i's first N_i entries
being sample i's patches in row-major order (the order of Qwen2.5-VL's merged image tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

from agentic_verl.v2p.actions import POINTER_ACTION, grounding_messages
from agentic_verl.v2p.labels import pointer_label

IGNORE_INDEX = -100


def build_batch(processor, samples: Sequence[tuple], sigma_factor: float = 1.0) -> dict:
    """`samples`: (PIL image, instruction, bbox in original pixels) triples -> model inputs with `labels` and
    `pointer_labels`."""
    import torch

    images = [image.convert("RGB") for image, _, _ in samples]
    texts = [processor.apply_chat_template(grounding_messages(instruction, image=image, answer=POINTER_ACTION),
                                           tokenize=False)
             for image, (_, instruction, _) in zip(images, samples, strict=True)]
    batch = processor(text=texts, images=images, padding=True, return_tensors="pt")
    tokenizer = processor.tokenizer
    im_start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    labels = batch["input_ids"].clone()
    labels[batch["attention_mask"] == 0] = IGNORE_INDEX
    for row in range(labels.shape[0]):
        starts = (batch["input_ids"][row] == im_start).nonzero()
        answer_from = int(starts[-1]) + 3  # "<|im_start|>", "assistant", "\n": the assistant header
        labels[row, :answer_from] = IGNORE_INDEX
    merge = int(getattr(processor.image_processor, "merge_size", 2))
    per_sample = []
    for image, (_, _, bbox), (_, grid_h, grid_w) in zip(images, samples, batch["image_grid_thw"].tolist(),
                                                        strict=True):
        grid = (grid_h // merge, grid_w // merge)
        per_sample.append(torch.tensor(pointer_label(bbox, image.size, grid, sigma_factor=sigma_factor).ravel(),
                                       dtype=torch.float32))
    pointer_labels = torch.zeros(len(per_sample), max(len(t) for t in per_sample))
    for row, label in enumerate(per_sample):
        pointer_labels[row, : len(label)] = label
    return {**batch, "labels": labels, "pointer_labels": pointer_labels}
