"""A verl SFT dataset over pretokenized rows: `input_ids` + `loss_mask` columns, used as they are.

Why: the `rag_r1` agent loop appends retrieved documents *inside* the assistant response as plain text, and RL masks
them out (response_mask 0). verl 0.9.1's `MultiTurnSFTDataset` can only mask whole chat messages, and splitting the
response into chat turns would add role headers the policy never sees at rollout time. So SFT rows are tokenized
up front in the rollout's exact layout (`agentic_verl.data.sft_trajectories`) and this class hands them to verl's
SFT trainer through its public hook for custom datasets:

    data.custom_cls.path=pkg://agentic_verl.training.sft_dataset data.custom_cls.name=PretokenizedSFTDataset

It honours the same data options as verl's dataset (`pad_mode` no_padding|right, `max_length`, `truncation`
error|left|right) and returns the same keys (input_ids, position_ids, loss_mask, and attention_mask when padded).
`loss_mask[t] = 1` means token t is a target (verl's SFT loss shifts it by one to align with the log-probs).
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

INPUT_IDS_KEY = "input_ids"
LOSS_MASK_KEY = "loss_mask"


class PretokenizedSFTDataset(Dataset):
    def __init__(self, parquet_files, tokenizer, config=None, processor=None, max_samples: int = -1):
        import pandas as pd

        config = config or {}
        self.pad_mode = config.get("pad_mode", "no_padding")
        self.max_length = int(config.get("max_length", 1024))
        self.truncation = config.get("truncation", "error")
        if self.pad_mode not in ("no_padding", "right"):
            raise ValueError(f"pad_mode must be 'no_padding' or 'right', got {self.pad_mode!r}")
        if self.truncation not in ("error", "left", "right"):
            raise ValueError(f"truncation must be 'error', 'left' or 'right', got {self.truncation!r}")
        self.pad_token_id = getattr(tokenizer, "pad_token_id", None) or 0
        files = [parquet_files] if isinstance(parquet_files, str) else list(parquet_files)
        frame = pd.concat([pd.read_parquet(f, columns=[INPUT_IDS_KEY, LOSS_MASK_KEY]) for f in files])
        if max_samples is not None and 0 < max_samples < len(frame):
            seed = config.get("seed")
            rng = np.random.default_rng(seed) if config.get("shuffle", False) else None
            rows = rng.choice(len(frame), size=max_samples, replace=False) if rng is not None else range(max_samples)
            frame = frame.iloc[list(rows)]
        self.input_ids = [np.asarray(x, dtype=np.int64) for x in frame[INPUT_IDS_KEY]]
        self.loss_mask = [np.asarray(x, dtype=np.int64) for x in frame[LOSS_MASK_KEY]]
        for i, (ids, mask) in enumerate(zip(self.input_ids, self.loss_mask, strict=True)):
            if len(ids) != len(mask):
                raise ValueError(f"row {i}: {len(ids)} input_ids but {len(mask)} loss_mask values")
            if not mask.any():
                raise ValueError(f"row {i}: loss_mask is all zero (nothing to learn)")

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, item: int) -> dict[str, torch.Tensor]:
        input_ids = torch.from_numpy(self.input_ids[item].copy())
        loss_mask = torch.from_numpy(self.loss_mask[item].copy())
        n = input_ids.shape[0]
        if n > self.max_length:
            if self.truncation == "error":
                raise ValueError(f"sequence of {n} tokens is longer than data.max_length={self.max_length}")
            keep = slice(-self.max_length, None) if self.truncation == "left" else slice(0, self.max_length)
            input_ids, loss_mask, n = input_ids[keep], loss_mask[keep], self.max_length
        position_ids = torch.arange(n, dtype=torch.long)
        if self.pad_mode == "no_padding":
            return {"input_ids": input_ids, "position_ids": position_ids, "loss_mask": loss_mask}
        pad = self.max_length - n
        return {
            "input_ids": torch.cat([input_ids, torch.full((pad,), self.pad_token_id, dtype=input_ids.dtype)]),
            "attention_mask": torch.cat([torch.ones(n, dtype=torch.long), torch.zeros(pad, dtype=torch.long)]),
            "position_ids": torch.cat([position_ids, torch.zeros(pad, dtype=torch.long)]),
            "loss_mask": torch.cat([loss_mask, torch.zeros(pad, dtype=loss_mask.dtype)]),
        }
