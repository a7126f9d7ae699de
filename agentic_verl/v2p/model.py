"""The V2P pointer model: Qwen2.5-VL plus three pointer tokens and a vision/text pointer head, as a transformers model.

docs/methods.md (V2P): the target action is `pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)`. A vision
head (self-attention + residual + LayerNorm over the input visual patch embeddings, i.e. the vision tower's merged
28x28-pixel tokens that enter the LLM, then an MLP) gives `enc` (N, d); an MLP over the LLM's last hidden state at
`<|pointer_pad|>` gives `dec` (d); pointer logits = enc . dec / sqrt(d), a softmax over the image's patches.

    folder = make_pointer_model("Qwen/Qwen2.5-VL-7B-Instruct", "outputs/v2p/init")   # adds tokens + head, saves
    model = V2PForConditionalGeneration.from_pretrained(folder)     # or AutoModelForImageTextToText (registered)
    model.set_stage("warmup")      # only the head + the three token embeddings train, LM loss off (stage 1)
    out = model(**batch)           # batch from gui.batch.build_batch: out.loss, out.pointer_loss, out.lm_loss
    model.set_stage("full")        # everything trains, w_lm * CE + w_ptr * L_ptr (stage 2)

The folder is an ordinary transformers checkpoint (`model_type` "v2p_qwen2_5_vl", the Qwen2.5-VL weights under their
usual names plus `pointer_head.*`); importing this module registers the config and the model with the Auto classes.
Every `<|pointer_pad|>` queries the last image before it in its row: one image and one click per row in a padded
batch, or several (image, click) samples packed into one row as verl's SFT engine feeds them
(`agentic_verl.training`, recipes/v2p/sft_*.sh).

    python -m agentic_verl.v2p.model --base Qwen/Qwen2.5-VL-7B-Instruct --out outputs/v2p/init   # make_pointer_model
    python -m agentic_verl.v2p.model --tiny --out /tmp/v2p_tiny     # the same on a tiny random Qwen2.5-VL (CPU runs)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import (
    AutoConfig,
    AutoModelForImageTextToText,
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
)
from transformers.conversion_mapping import get_checkpoint_conversion_mapping, register_checkpoint_conversion_mapping
from transformers.utils import ModelOutput

from agentic_verl.v2p.actions import POINTER_END, POINTER_PAD, POINTER_START, POINTER_TOKENS
from agentic_verl.v2p.loss import STAGES, pointer_loss, total_loss


@strict
class V2PConfig(Qwen2_5_VLConfig):
    """Qwen2.5-VL's config plus the pointer tokens' ids, the head's size and the loss weights."""

    model_type = "v2p_qwen2_5_vl"

    pointer_start_token_id: int | None = None
    pointer_pad_token_id: int | None = None
    pointer_end_token_id: int | None = None
    pointer_dim: int | None = None  # d of enc/dec; None: the LLM's hidden size
    pointer_attention_heads: int = 8  # heads of the vision head's self-attention (must divide the hidden size)
    lm_loss_weight: float = 1.0  # w_lm (stage 2); the warm-up stage turns the LM loss off
    pointer_loss_weight: float = 1.0  # w_ptr
    valley_weight: float = 1.0  # weight of the valley term inside L_ptr
    click_threshold: float = 0.3  # inference: keep patches above this fraction of the maximum


class V2PPointerHead(nn.Module):
    """Vision head over one image's patch embeddings and text head over the `<|pointer_pad|>` hidden state."""

    def __init__(self, hidden_size: int, dim: int, heads: int):
        super().__init__()
        self.dim = dim
        self.vision_attention = nn.MultiheadAttention(hidden_size, heads, batch_first=True)
        self.vision_norm = nn.LayerNorm(hidden_size)
        self.vision_mlp = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.GELU(), nn.Linear(hidden_size, dim))
        self.text_mlp = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.GELU(), nn.Linear(hidden_size, dim))

    def forward(self, patches: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """patches (N, hidden), query (hidden,) -> logits (N,)."""
        x = patches.unsqueeze(0)
        attended, _ = self.vision_attention(x, x, x, need_weights=False)
        enc = self.vision_mlp(self.vision_norm(x + attended))[0]
        dec = self.text_mlp(query)
        return enc @ dec / math.sqrt(self.dim)


@dataclass
class V2POutput(ModelOutput):
    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    past_key_values: object | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None
    rope_deltas: torch.LongTensor | None = None
    lm_loss: torch.FloatTensor | None = None
    pointer_loss: torch.FloatTensor | None = None
    pointer_kl: torch.FloatTensor | None = None
    pointer_valley: torch.FloatTensor | None = None
    pointer_logits: tuple | None = None  # per <|pointer_pad|> (row-major): (N_i,) logits over its image's patches


class V2PForConditionalGeneration(Qwen2_5_VLForConditionalGeneration):
    config_class = V2PConfig
    config: V2PConfig

    def __init__(self, config: V2PConfig):
        super().__init__(config)
        hidden = config.text_config.hidden_size
        self.pointer_head = V2PPointerHead(hidden, config.pointer_dim or hidden, config.pointer_attention_heads)
        self.stage = "full"
        self._stage_hooks: list = []
        self.post_init()

    # ------------------------------------------------------------------ stages

    def set_stage(self, stage: str) -> None:
        """"warmup": only the pointer head and the three pointer-token embedding rows train, LM loss off. "full":
        every weight trains, loss = w_lm * CE + w_ptr * L_ptr.

        The warm-up freezes by `requires_grad` (whole modules) plus a forward hook on the input-embedding module that
        detaches every position whose token is not a pointer token, so the embedding's gradient is exactly zero
        outside the three rows. The hook lives on the module, not on the weight: FSDP (verl's engine) replaces
        parameters by sharded ones and reduces their gradients itself, so a hook on the original weight would be lost,
        while module forward hooks survive wrapping. Use an optimizer without weight decay on the embedding
        (`optimizer_param_groups`, or verl's optim.weight_decay=0): decay would move the frozen rows."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; known: {', '.join(STAGES)}")
        for handle in self._stage_hooks:
            handle.remove()
        self._stage_hooks = []
        self.stage = stage
        for param in self.parameters():
            param.requires_grad_(stage == "full")
        if stage == "full":
            return
        for param in self.pointer_head.parameters():
            param.requires_grad_(True)
        embedding = self.get_input_embeddings()
        embedding.weight.requires_grad_(True)
        self._stage_hooks.append(
            embedding.register_forward_hook(_only_rows(self.pointer_token_ids), with_kwargs=True))

    def optimizer_param_groups(self, weight_decay: float = 0.0) -> list[dict]:
        """Trainable parameters for torch.optim; in the warm-up the embedding gets no weight decay (decay would move
        the frozen rows, whose gradient is zero)."""
        embedding = self.get_input_embeddings().weight
        params = [p for p in self.parameters() if p.requires_grad]
        if self.stage == "full":
            return [{"params": params, "weight_decay": weight_decay}]
        rest = [p for p in params if p is not embedding]
        return [{"params": rest, "weight_decay": weight_decay}, {"params": [embedding], "weight_decay": 0.0}]

    @property
    def pointer_token_ids(self) -> tuple[int, int, int]:
        ids = (self.config.pointer_start_token_id, self.config.pointer_pad_token_id, self.config.pointer_end_token_id)
        if any(i is None for i in ids):
            raise ValueError("the config has no pointer token ids; build the model with make_pointer_model")
        return ids

    # ------------------------------------------------------------------ forward

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, labels=None, use_cache=None, pixel_values=None, pixel_values_videos=None,
                image_grid_thw=None, video_grid_thw=None, rope_deltas=None, mm_token_type_ids=None,
                second_per_grid_ts=None, logits_to_keep=0, pointer_labels=None, **kwargs) -> V2POutput:
        """Qwen2.5-VL's forward plus, when the input holds images and `<|pointer_pad|>` tokens, the pointer logits of
        each pad over its image's patches and (with `pointer_labels`, one per pad, see gui.labels) the pointer loss.
        Generation steps without pixels take Qwen2.5-VL's path unchanged."""
        pad_id = self.config.pointer_pad_token_id
        if (pixel_values is None or input_ids is None or inputs_embeds is not None or pad_id is None
                or not bool((input_ids == pad_id).any())):
            if pointer_labels is not None:
                raise ValueError("pointer_labels need input_ids with a <|pointer_pad|> token and pixel_values")
            out = super().forward(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                  past_key_values=past_key_values, inputs_embeds=inputs_embeds, labels=labels,
                                  use_cache=use_cache, pixel_values=pixel_values,
                                  pixel_values_videos=pixel_values_videos, image_grid_thw=image_grid_thw,
                                  video_grid_thw=video_grid_thw, rope_deltas=rope_deltas,
                                  mm_token_type_ids=mm_token_type_ids, second_per_grid_ts=second_per_grid_ts,
                                  logits_to_keep=logits_to_keep, **kwargs)
            return V2POutput(loss=out.loss, logits=out.logits, past_key_values=out.past_key_values,
                             hidden_states=out.hidden_states, attentions=out.attentions, rope_deltas=out.rope_deltas,
                             lm_loss=out.loss)

        # the image embeddings once: scattered into the LLM input and kept for the vision head
        embeds = self.get_input_embeddings()(input_ids)
        per_image = [e.to(embeds.device, embeds.dtype)
                     for e in self.model.get_image_features(pixel_values, image_grid_thw).pooler_output]
        image_embeds = torch.cat(per_image)
        image_mask = input_ids == self.config.image_token_id
        if int(image_mask.sum()) != image_embeds.shape[0]:
            raise ValueError(f"{int(image_mask.sum())} image tokens but {image_embeds.shape[0]} image features")
        embeds = embeds.masked_scatter(image_mask.unsqueeze(-1).expand_as(embeds), image_embeds)
        if mm_token_type_ids is None:  # what the processor returns: 1 for image tokens, 2 for video tokens
            mm_token_type_ids = image_mask.int() + 2 * (input_ids == self.config.video_token_id).int()
        outputs = self.model(input_ids=input_ids, inputs_embeds=embeds, attention_mask=attention_mask,
                             position_ids=position_ids, past_key_values=past_key_values, use_cache=use_cache,
                             pixel_values_videos=pixel_values_videos, image_grid_thw=image_grid_thw,
                             video_grid_thw=video_grid_thw, mm_token_type_ids=mm_token_type_ids,
                             second_per_grid_ts=second_per_grid_ts, **kwargs)
        hidden = outputs.last_hidden_state
        ptr_logits = [self.pointer_head(per_image[image], hidden[row, pos])
                      for row, pos, image in _pointer_queries(input_ids, image_mask, per_image, pad_id)]

        lm_weight = self.config.lm_loss_weight if self.stage == "full" else 0.0
        lm_loss = None
        logits = None
        if labels is None or lm_weight != 0:  # no LM head pass for a loss that is switched off
            keep = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
            logits = self.lm_head(hidden[:, keep, :])
            if labels is not None:
                lm_loss = self.loss_function(logits=logits, labels=labels,
                                             vocab_size=self.config.text_config.vocab_size, **kwargs)
        ptr = None
        if pointer_labels is not None:
            ptr = pointer_loss(ptr_logits, pointer_labels, valley_weight=self.config.valley_weight)
        loss = total_loss(lm_loss, ptr["loss"] if ptr else None, lm_weight, self.config.pointer_loss_weight)
        return V2POutput(loss=loss, logits=logits, past_key_values=outputs.past_key_values,
                         hidden_states=outputs.hidden_states, attentions=outputs.attentions,
                         rope_deltas=outputs.rope_deltas, lm_loss=lm_loss, pointer_loss=ptr["loss"] if ptr else None,
                         pointer_kl=ptr["kl"] if ptr else None, pointer_valley=ptr["valley"] if ptr else None,
                         pointer_logits=tuple(ptr_logits))


def _only_rows(token_ids):
    """Forward hook for an embedding module: positions whose token is not in `token_ids` are detached, so only those
    rows of the weight get a gradient (exactly zero elsewhere)."""
    ids = torch.tensor(token_ids)

    def hook(module, args, kwargs, output):
        if not output.requires_grad:
            return None
        input_ids = args[0] if args else kwargs["input"]
        keep = torch.isin(input_ids, ids.to(input_ids.device)).unsqueeze(-1)
        return torch.where(keep, output, output.detach())

    return hook


def _pointer_queries(input_ids, image_mask, per_image, pad_id) -> list[tuple[int, int, int]]:
    """(row, position, image index) for every `<|pointer_pad|>` in row-major order: the image is the last one whose
    tokens come before the pad in the same row (images are numbered in the order of their tokens)."""
    counts = torch.tensor([e.shape[0] for e in per_image], device=input_ids.device)
    owner = torch.full(input_ids.shape, -1, dtype=torch.long, device=input_ids.device)
    owner[image_mask] = torch.repeat_interleave(torch.arange(len(per_image), device=input_ids.device), counts)
    queries = []
    for row, pos in (input_ids == pad_id).nonzero().tolist():
        before = owner[row, :pos]
        before = before[before >= 0]
        if before.numel() == 0:
            raise ValueError(f"the <|pointer_pad|> at row {row}, position {pos} has no image before it")
        queries.append((row, pos, int(before[-1])))
    return queries


AutoConfig.register(V2PConfig.model_type, V2PConfig, exist_ok=True)
AutoModelForImageTextToText.register(V2PConfig, V2PForConditionalGeneration, exist_ok=True)
# Checkpoints keep Qwen2.5-VL's on-disk key names (`model.layers.*`, `visual.*`): transformers renames them by class
# name, so our class gets Qwen2.5-VL's renaming too (loading a Qwen2.5-VL folder and saving a V2P one).
register_checkpoint_conversion_mapping(
    V2PForConditionalGeneration.__name__,
    get_checkpoint_conversion_mapping(Qwen2_5_VLForConditionalGeneration.__name__), overwrite=True)


def make_pointer_model(base: str | os.PathLike, out: str | os.PathLike, pointer_dim: int | None = None,
                       attention_heads: int | None = None, seed: int = 0, dtype: str = "float32") -> Path:
    """A Qwen2.5-VL folder -> a V2P folder: the three pointer tokens added to the tokenizer (special tokens; the
    embedding grows only if the vocabulary has no spare rows, new rows start at the mean embedding), a freshly
    initialised pointer head, the processor saved beside the weights."""
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(str(base))
    tokenizer = processor.tokenizer
    tokenizer.add_tokens(list(POINTER_TOKENS), special_tokens=True)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in POINTER_TOKENS}
    base_config = AutoConfig.from_pretrained(str(base))
    hidden = base_config.text_config.hidden_size
    heads = attention_heads or _largest_divisor(hidden, 8)
    config = V2PConfig(**{**base_config.to_dict(), "model_type": V2PConfig.model_type},
                       pointer_start_token_id=ids[POINTER_START], pointer_pad_token_id=ids[POINTER_PAD],
                       pointer_end_token_id=ids[POINTER_END], pointer_dim=pointer_dim,
                       pointer_attention_heads=heads)
    config.architectures = [V2PForConditionalGeneration.__name__]
    torch.manual_seed(seed)
    model = V2PForConditionalGeneration.from_pretrained(str(base), config=config, dtype=getattr(torch, dtype))
    old_rows = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > old_rows:
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    with torch.no_grad():  # input embedding and (when untied, as in Qwen2.5-VL-7B) the LM head's rows
        layers = (model.get_input_embeddings(), model.get_output_embeddings())
        for weight in {id(layer.weight): layer.weight for layer in layers if layer is not None}.values():
            mean = weight[: min(old_rows, min(ids.values()))].mean(0)
            for token_id in ids.values():
                weight[token_id] = mean
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def _largest_divisor(n: int, at_most: int) -> int:
    return max(d for d in range(1, at_most + 1) if n % d == 0)


def main(argv=None) -> int:
    """`python -m agentic_verl.v2p.model --base DIR_OR_HUB_ID --out DIR` (or `--tiny --out DIR`): prints the folder."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m agentic_verl.v2p.model", description=make_pointer_model.__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--base", help="a Qwen2.5-VL folder or hub id")
    source.add_argument("--tiny", action="store_true", help="a tiny random Qwen2.5-VL (v2p/tiny.py) as the base")
    parser.add_argument("--out", required=True, help="the V2P folder to write")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--seed", type=int, default=0, help="the pointer head's initialisation")
    args = parser.parse_args(argv)
    if args.base:
        print(make_pointer_model(args.base, args.out, seed=args.seed, dtype=args.dtype))
        return 0
    import tempfile

    from agentic_verl.v2p.tiny import make_tiny_qwen2_5_vl

    with tempfile.TemporaryDirectory(prefix="tiny_qwen2_5_vl_") as base:
        print(make_pointer_model(make_tiny_qwen2_5_vl(base, dtype=args.dtype), args.out, seed=args.seed,
                                 dtype=args.dtype))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
