"""verl SFT dataset for FunReason targets, with the per-token span mask the SRML loss needs.

Reads the `messages` parquet of `agentic-verl data fc` (system prompt, user turn(s), then the assistant target
`<think>...</think>\\n\\n[calls]`) and tokenizes each row as the model meets it at generation time: the chat
template renders the prompt (`add_generation_prompt=True`), the target follows as raw text, then EOS. Keys, as verl's
SFT datasets return them (so verl's own loss runs on it unchanged): input_ids, position_ids, loss_mask (1 on target
tokens), attention_mask when padded; plus `think_mask`, 1 on the reasoning span: every target token that starts
before the end of `</think>` and the whitespace after it (the blank line). The call span is every other target
token (the calls, EOS). A target without `</think>` is all call span. Token offsets decide the split, so the
target is tokenized once, as a whole (a token that straddles the boundary counts as reasoning).

    data.custom_cls.path=pkg://agentic_verl.training.fc_sft_dataset data.custom_cls.name=FunctionCallSFTDataset

Options (verl's `data` section): max_length, truncation (error | left | right), pad_mode (no_padding | right),
messages_key (default "messages"), apply_chat_template_kwargs.
"""

from __future__ import annotations

import re

import numpy as np
import torch
from torch.utils.data import Dataset

THINK_END = "</think>"
_BLANK = re.compile(r"\s*")


def reasoning_end(target: str) -> int:
    """Character index where the call span starts: after the first `</think>` and the whitespace after it; 0 when
    the target has no `</think>`.

    >>> t = "<think>add them</think>\\n\\n[add(a=1)]"
    >>> t[reasoning_end(t):]
    '[add(a=1)]'
    """
    at = target.find(THINK_END)
    if at < 0:
        return 0
    return _BLANK.match(target, at + len(THINK_END)).end()


def tokenize_example(tokenizer, messages: list[dict], chat_template_kwargs: dict | None = None) -> dict[str, list]:
    """input_ids, loss_mask, think_mask (lists) for prompt messages + the final assistant message as target."""
    if not messages or messages[-1].get("role") != "assistant":
        raise ValueError("the last message must be the assistant's target")
    prompt = tokenizer.apply_chat_template([dict(m) for m in messages[:-1]], add_generation_prompt=True, tokenize=False,
                                           **(chat_template_kwargs or {}))  # fmt: skip
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    target = str(messages[-1]["content"])
    boundary = reasoning_end(target)
    if getattr(tokenizer, "is_fast", False):
        encoded = tokenizer(target, add_special_tokens=False, return_offsets_mapping=True)
        target_ids = encoded["input_ids"]
        think = [int(start < boundary) for start, _ in encoded["offset_mapping"]]
    else:  # no offsets: the two spans tokenized apart
        head = tokenizer(target[:boundary], add_special_tokens=False)["input_ids"] if boundary else []
        tail = tokenizer(target[boundary:], add_special_tokens=False)["input_ids"]
        target_ids, think = head + tail, [1] * len(head) + [0] * len(tail)
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no eos_token_id to end the target with")
    target_ids, think = [*target_ids, tokenizer.eos_token_id], [*think, 0]
    return {"input_ids": prompt_ids + target_ids, "loss_mask": [0] * len(prompt_ids) + [1] * len(target_ids),
            "think_mask": [0] * len(prompt_ids) + think}  # fmt: skip


class FunctionCallSFTDataset(Dataset):
    def __init__(self, parquet_files, tokenizer, config=None, processor=None, max_samples: int = -1):
        import pandas as pd

        config = config or {}
        self.tokenizer = tokenizer
        self.pad_mode = config.get("pad_mode", "no_padding")
        self.max_length = int(config.get("max_length", 1024))
        self.truncation = config.get("truncation", "error")
        self.chat_template_kwargs = dict(config.get("apply_chat_template_kwargs") or {})
        if self.pad_mode not in ("no_padding", "right"):
            raise ValueError(f"pad_mode must be 'no_padding' or 'right', got {self.pad_mode!r}")
        if self.truncation not in ("error", "left", "right"):
            raise ValueError(f"truncation must be 'error', 'left' or 'right', got {self.truncation!r}")
        self.pad_token_id = getattr(tokenizer, "pad_token_id", None) or 0
        key = config.get("messages_key", "messages")
        files = [parquet_files] if isinstance(parquet_files, str) else list(parquet_files)
        frame = pd.concat([pd.read_parquet(f, columns=[key]) for f in files], ignore_index=True)
        if max_samples is not None and 0 < max_samples < len(frame):
            rng = np.random.default_rng(config.get("seed")) if config.get("shuffle", False) else None
            rows = rng.choice(len(frame), size=max_samples, replace=False) if rng is not None else range(max_samples)
            frame = frame.iloc[list(rows)]
        self.messages = [_plain_messages(m) for m in frame[key]]

    def __len__(self) -> int:
        return len(self.messages)

    def __getitem__(self, item: int) -> dict[str, torch.Tensor]:
        example = tokenize_example(self.tokenizer, self.messages[item], self.chat_template_kwargs)
        tensors = {k: torch.tensor(v, dtype=torch.long) for k, v in example.items()}
        n = tensors["input_ids"].shape[0]
        if n > self.max_length:
            if self.truncation == "error":
                raise ValueError(f"row {item}: {n} tokens, longer than data.max_length={self.max_length}")
            keep = slice(-self.max_length, None) if self.truncation == "left" else slice(0, self.max_length)
            tensors, n = {k: v[keep] for k, v in tensors.items()}, self.max_length
        tensors["position_ids"] = torch.arange(n, dtype=torch.long)
        if self.pad_mode == "no_padding":
            return tensors
        pad = self.max_length - n
        fill = {"input_ids": self.pad_token_id}
        padded = {k: torch.cat([v, torch.full((pad,), fill.get(k, 0), dtype=v.dtype)]) for k, v in tensors.items()}
        padded["attention_mask"] = torch.cat([torch.ones(n, dtype=torch.long), torch.zeros(pad, dtype=torch.long)])
        return padded


def _plain_messages(messages) -> list[dict]:
    """Parquet gives a numpy array of dicts; the chat template wants a list of plain dicts."""
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in list(messages)]
