"""The tiny Qwen2.5-VL with a cut vocabulary (v2p/tiny.py `vocab=`; the V2P miniature trains with 8192 tokens): the
cut tokenizer is Qwen's BPE stopped at its first N tokens (same ids for them, every text round-trips, special tokens
renumbered after them), the model's image/video ids follow, it runs forward and generate on a screenshot, its pointer
version is built from it, and `cpu-model tiny-vl` rebuilds a folder only when its settings change. Also: the text a
text-click model is evaluated on is token for token the prompt verl trains it on."""

from __future__ import annotations

import json

import pytest

TEXTS = ["You are a GUI agent. The screenshot above is 224x168 pixels.", "pyautogui.click(x=124, y=100)",
         "Click the Poushe button", "Ünïcode — 漢字 and emoji 🙂 survive", "<|im_start|>assistant\n<|image_pad|>"]


@pytest.fixture(scope="module")
def tokenizers():
    from agentic_verl.v2p.tiny import qwen_tokenizer

    return qwen_tokenizer(), qwen_tokenizer(1000)


def test_a_cut_tokenizer_is_the_bpe_stopped_early(tokenizers):
    full, cut = tokenizers
    assert len(cut) == 1000 + 26  # the 26 added (special) tokens after the kept ones
    for text in TEXTS:
        ids = cut(text)["input_ids"]
        assert cut.decode(ids) == text and max(ids) < len(cut)
        # the kept BPE tokens keep their ids; only rarer words fall apart into more, smaller pieces
        assert all(i == j for i, j in zip(cut.convert_tokens_to_ids(cut.convert_ids_to_tokens(ids)), ids, strict=True))
        assert len(ids) >= len(full(text)["input_ids"])
    assert cut("in")["input_ids"] == full("in")["input_ids"] == [258]  # the third merge: the same id
    for token in ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|image_pad|>"):
        assert cut.convert_tokens_to_ids(token) - 1000 == full.convert_tokens_to_ids(token) - 151643
    assert cut.eos_token == full.eos_token == "<|im_end|>" and cut.pad_token == full.pad_token
    with pytest.raises(ValueError, match="vocab must be in"):
        from agentic_verl.v2p.tiny import qwen_tokenizer

        qwen_tokenizer(100)


def test_the_tiny_model_with_a_cut_vocabulary_sees_and_generates(tmp_path, screens):
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from agentic_verl.v2p.model import V2PForConditionalGeneration, make_pointer_model
    from agentic_verl.v2p.tiny import make_tiny_qwen2_5_vl

    folder = make_tiny_qwen2_5_vl(tmp_path / "tiny", vocab=1000, seed=3)
    processor = AutoProcessor.from_pretrained(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder).eval()
    tokenizer = processor.tokenizer
    assert model.config.text_config.vocab_size == len(tokenizer) == 1026
    assert model.config.image_token_id == tokenizer.convert_tokens_to_ids("<|image_pad|>") == 1012
    assert model.config.vision_start_token_id == tokenizer.convert_tokens_to_ids("<|vision_start|>")
    image = screens[0].image
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Click"}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[text], images=[image], return_tensors="pt")
    merged = int(inputs["image_grid_thw"][0].prod()) // 4
    assert int((inputs["input_ids"] == model.config.image_token_id).sum()) == merged
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=4, do_sample=False)
    assert out.shape[1] == inputs["input_ids"].shape[1] + 4 and int(out.max()) < 1026
    marker = json.loads((folder / "agentic_verl_tiny.json").read_text())
    assert marker == {"arch": "qwen2_5_vl", "seed": 3, "vocab": 1000, "hidden_size": 64, "num_layers": 2,
                      "vision_hidden": 32}

    pointer = make_pointer_model(folder, tmp_path / "v2p")
    config = json.loads((pointer / "config.json").read_text())
    assert [config[f"pointer_{k}_token_id"] for k in ("start", "pad", "end")] == [1026, 1027, 1028]
    assert type(V2PForConditionalGeneration.from_pretrained(pointer)).__name__ == "V2PForConditionalGeneration"


def test_cpu_model_tiny_vl_rebuilds_only_on_new_settings(tmp_path):
    from agentic_verl.commands.cpu_model import _tiny_vl

    folder = _tiny_vl(tmp_path / "m", "float32", False, vocab=1000, seed=1)
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert _tiny_vl(tmp_path / "m", "float32", False, vocab=1000, seed=1) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp  # reused
    _tiny_vl(tmp_path / "m", "float32", False, vocab=1000, seed=2)
    assert json.loads((folder / "agentic_verl_tiny.json").read_text())["seed"] == 2  # rebuilt for the new seed
    _tiny_vl(tmp_path / "m", "float32", False, vocab=1000, seed=2, vision_hidden=64)  # rebuilt: a wider vision tower
    assert json.loads((folder / "config.json").read_text())["vision_config"]["hidden_size"] == 64


def test_the_eval_prompt_is_the_one_verl_trains_on(tiny_vl_dir, screens):
    """`eval screenspot`'s text-click prompt and the `data gui --target text-click` row that verl's datasets turn into
    chat messages (split at `<image>`) render to the same text."""
    import re

    from transformers import AutoProcessor

    from agentic_verl.agent_loops.prompts import gui_grounding_messages
    from agentic_verl.v2p.predictors import _prompt_after_image

    processor = AutoProcessor.from_pretrained(tiny_vl_dir)
    image = screens[0].image
    ours = [{"role": "user", "content": [{"type": "image", "image": image},
                                         {"type": "text", "text": _prompt_after_image("Click the OK button",
                                                                                      image.size)}]}]
    row = gui_grounding_messages("Click the OK button", *image.size)[0]["content"]
    parts = [p for p in re.split("(<image>)", row) if p]  # what verl's RLHFDataset / MultiTurnSFTDataset do
    verls = [{"role": "user", "content": [{"type": "image", "image": image} if p == "<image>" else
                                          {"type": "text", "text": p} for p in parts]}]
    render = (lambda m: processor.apply_chat_template(m, tokenize=False, add_generation_prompt=True))  # noqa: E731
    assert render(ours) == render(verls) and "<|vision_end|>\nYou are a GUI agent." in render(ours)
