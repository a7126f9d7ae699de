"""The tiny real Qwen2.5-VL and the V2P pointer model built on it: loading through the Auto classes, forward and
generate on an image, save/load round trip, the stage switch, and a few optimizer steps on synthetic screenshots."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module")
def pointer_model(pointer_dir):
    from agentic_verl.v2p.model import V2PForConditionalGeneration

    torch.manual_seed(0)
    return V2PForConditionalGeneration.from_pretrained(pointer_dir)


@pytest.fixture(scope="module")
def pointer_processor(pointer_dir):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(pointer_dir)


@pytest.fixture(scope="module")
def train_samples(screens):
    return [(screen.image, element["instruction"], element["bbox"]) for screen in screens[:2]
            for element in screen.elements[:2]]


def test_tiny_qwen2_5_vl_loads_and_runs_on_an_image(tiny_vl_dir, screens):
    from transformers import AutoModelForImageTextToText, AutoProcessor, Qwen2_5_VLForConditionalGeneration

    processor = AutoProcessor.from_pretrained(tiny_vl_dir)
    model = AutoModelForImageTextToText.from_pretrained(tiny_vl_dir).eval()
    assert type(model) is Qwen2_5_VLForConditionalGeneration and model.config.model_type == "qwen2_5_vl"
    assert type(processor.image_processor).__name__ == "Qwen2VLImageProcessor"
    image = screens[0].image  # 336x224: smart_resize keeps it, 12x8 merged patches
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Where?"}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert "<|vision_start|><|image_pad|><|vision_end|>Where?<|im_end|>\n<|im_start|>assistant\n" in text
    inputs = processor(text=[text], images=[image], return_tensors="pt")
    assert inputs["image_grid_thw"].tolist() == [[1, 16, 24]]
    assert int((inputs["input_ids"] == model.config.image_token_id).sum()) == 8 * 12
    with torch.no_grad():
        logits = model(**inputs).logits
        generated = model.generate(**inputs, max_new_tokens=4, do_sample=False)
    assert logits.shape == (1, inputs["input_ids"].shape[1], len(processor.tokenizer))
    assert torch.isfinite(logits).all()
    assert generated.shape[1] > inputs["input_ids"].shape[1]  # it generated (random weights: any tokens)


def test_pointer_model_round_trip(pointer_dir, pointer_model, pointer_processor, screens, tmp_path):
    from transformers import AutoModelForImageTextToText

    from agentic_verl.v2p.actions import POINTER_TOKENS
    from agentic_verl.v2p.inference import pointer_inputs
    from agentic_verl.v2p.model import V2PForConditionalGeneration

    ids = pointer_processor.tokenizer.convert_tokens_to_ids(list(POINTER_TOKENS))
    assert tuple(ids) == pointer_model.pointer_token_ids
    assert pointer_processor.tokenizer.decode(ids) == "".join(POINTER_TOKENS)  # each one token, kept whole
    loaded = AutoModelForImageTextToText.from_pretrained(pointer_dir).eval()
    assert type(loaded) is V2PForConditionalGeneration
    inputs = pointer_inputs(pointer_processor, screens[0].image, "Click the Save button")
    with torch.no_grad():
        before = loaded(**inputs).pointer_logits[0]
    loaded.save_pretrained(tmp_path / "again")
    again = V2PForConditionalGeneration.from_pretrained(tmp_path / "again").eval()
    with torch.no_grad():
        after = again(**inputs).pointer_logits[0]
    assert before.shape == (8 * 12,)
    torch.testing.assert_close(before, after)
    state, state_again = loaded.state_dict(), again.state_dict()
    assert any(k.startswith("pointer_head.") for k in state) and state.keys() == state_again.keys()


def test_pointer_model_keeps_the_base_weights(tiny_vl_dir, pointer_model):
    from transformers import Qwen2_5_VLForConditionalGeneration

    base = Qwen2_5_VLForConditionalGeneration.from_pretrained(tiny_vl_dir)
    base_state = base.state_dict()
    for name, value in pointer_model.state_dict().items():
        if name.startswith("pointer_head."):
            continue
        if name in ("model.language_model.embed_tokens.weight", "lm_head.weight"):
            torch.testing.assert_close(value[: base_state[name].shape[0]], base_state[name])
            new = value[list(pointer_model.pointer_token_ids)]
            torch.testing.assert_close(new, base_state[name].mean(0).expand_as(new))  # new rows: the mean
        else:
            torch.testing.assert_close(value, base_state[name])


def test_generation_without_pointer_tokens_is_qwen2_5_vl(pointer_model, pointer_processor, screens):
    image = screens[0].image
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Hi"}]}]
    text = pointer_processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    inputs = pointer_processor(text=[text], images=[image], return_tensors="pt")
    with torch.no_grad():
        out = pointer_model.generate(**inputs, max_new_tokens=3, do_sample=False)
    assert out.shape[1] == inputs["input_ids"].shape[1] + 3 or out[0, -1] == pointer_processor.tokenizer.eos_token_id


def test_batch_labels(pointer_processor, train_samples):
    from agentic_verl.v2p.batch import IGNORE_INDEX, build_batch
    from agentic_verl.v2p.labels import pointer_label

    batch = build_batch(pointer_processor, train_samples)
    answer = batch["input_ids"][0][batch["labels"][0] != IGNORE_INDEX]
    assert pointer_processor.tokenizer.decode(answer).startswith(
        "pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)<|im_end|>")
    assert batch["pointer_labels"].shape == (4, 8 * 12)
    image, _, bbox = train_samples[0]
    expected = torch.tensor(pointer_label(bbox, image.size, (8, 12)).ravel(), dtype=torch.float32)
    torch.testing.assert_close(batch["pointer_labels"][0], expected)
    assert torch.allclose(batch["pointer_labels"].sum(1), torch.ones(4))


def test_pointer_sims_precomputed_batches_equal_build_batch(pointer_processor, screens):
    """tests/cpu/v2p_pointer_sim.py --precompute pads one-sample batches together: its results hold only if that
    equals build_batch on the same samples (instructions of different lengths, so the padding is exercised)."""
    import sys
    from pathlib import Path

    from agentic_verl.v2p.batch import build_batch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cpu"))
    from v2p_pointer_sim import collate

    samples = [(screen.image, element["instruction"], element["bbox"]) for screen in screens for element in screen.elements]
    singles = [build_batch(pointer_processor, [sample]) for sample in samples]
    assert len({single["input_ids"].shape[1] for single in singles}) > 1
    expected, got = build_batch(pointer_processor, samples), collate(pointer_processor, singles)
    assert got.keys() == expected.keys()
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=0, atol=0, msg=key)


def test_warmup_steps_lower_the_pointer_loss_and_touch_only_the_head(pointer_dir, pointer_processor, train_samples):
    """Stage 1 on synthetic screenshots: a few AdamW steps (lr 3e-3) lower L_ptr; the LLM, the vision tower and
    every embedding row but the pointer tokens' stay exactly as they were."""
    from agentic_verl.v2p.batch import build_batch
    from agentic_verl.v2p.model import V2PForConditionalGeneration

    torch.manual_seed(0)
    model = V2PForConditionalGeneration.from_pretrained(pointer_dir)
    model.set_stage("warmup")
    model.train()
    frozen = {name: p.detach().clone() for name, p in model.named_parameters()
              if not name.startswith("pointer_head.")}
    batch = build_batch(pointer_processor, train_samples)
    optimizer = torch.optim.AdamW(model.optimizer_param_groups(weight_decay=0.01), lr=3e-3)
    losses = []
    for _ in range(8):
        out = model(**batch)
        assert out.lm_loss is None and torch.equal(out.loss, out.pointer_loss)  # LM loss off
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(out.loss.detach().item())
    assert losses[-1] < losses[0] - 0.05, losses
    assert losses[-1] == min(losses), losses
    embedding_name = "model.language_model.embed_tokens.weight"
    for name, before in frozen.items():
        after = dict(model.named_parameters())[name].detach()
        if name == embedding_name:
            changed = (after != before).any(1).nonzero().ravel().tolist()
            start, pad, _ = model.pointer_token_ids
            assert changed == [start, pad]  # <|pointer_end|> comes after the query token: no gradient reaches it
        else:
            assert torch.equal(after, before), name


def test_full_stage_trains_everything_on_both_losses(pointer_dir, pointer_processor, train_samples):
    from agentic_verl.v2p.batch import build_batch
    from agentic_verl.v2p.model import V2PForConditionalGeneration

    model = V2PForConditionalGeneration.from_pretrained(pointer_dir)
    model.set_stage("warmup")
    model.set_stage("full")  # the warm-up's embedding hook is gone
    batch = build_batch(pointer_processor, train_samples[:2])
    out = model(**batch)
    assert out.loss.item() == pytest.approx(out.lm_loss.item() + out.pointer_loss.item(), rel=1e-5)
    out.loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    assert grads["model.language_model.layers.0.mlp.up_proj.weight"].abs().sum() > 0
    assert grads["model.visual.blocks.0.mlp.up_proj.weight"].abs().sum() > 0
    assert (grads["model.language_model.embed_tokens.weight"].abs().sum(1) > 0).sum() > 3  # not just 3 rows
    with pytest.raises(ValueError, match="unknown stage"):
        model.set_stage("stage3")


def test_packed_samples_point_like_separate_ones(pointer_model, pointer_processor, screens):
    """verl's SFT engine packs a micro-batch into one row (no padding, 4-row rope positions: text + 3-D, no cache):
    each `<|pointer_pad|>` then queries the last image before it, and attention stays inside each sample."""
    from agentic_verl.v2p.inference import pointer_inputs

    samples = [pointer_inputs(pointer_processor, screen.image, element["instruction"])
               for screen, element in ((screens[0], screens[0].elements[0]), (screens[2], screens[2].elements[3]))]
    positions, separate = [], []
    with torch.no_grad():
        for inputs in samples:
            rope, _ = pointer_model.model.get_rope_index(inputs["input_ids"], inputs["mm_token_type_ids"],
                                                         image_grid_thw=inputs["image_grid_thw"])
            text = torch.arange(inputs["input_ids"].shape[1]).view(1, 1, -1)
            positions.append(torch.cat([text, rope]))  # (4, 1, L): what verl's dataset builds
            out = pointer_model(input_ids=inputs["input_ids"], position_ids=positions[-1], use_cache=False,
                                pixel_values=inputs["pixel_values"], image_grid_thw=inputs["image_grid_thw"])
            separate.append((out.pointer_logits[0], out.logits[0]))
        packed = pointer_model(input_ids=torch.cat([s["input_ids"] for s in samples], 1),
                               position_ids=torch.cat(positions, 2), use_cache=False,  # as verl calls it
                               pixel_values=torch.cat([s["pixel_values"] for s in samples]),
                               image_grid_thw=torch.cat([s["image_grid_thw"] for s in samples]))
    assert [len(p) for p in packed.pointer_logits] == [8 * 12, 9 * 14]  # each pad got its own image's patches
    for (logits, _), got in zip(separate, packed.pointer_logits, strict=True):
        torch.testing.assert_close(got, logits)
    first = samples[0]["input_ids"].shape[1]
    torch.testing.assert_close(packed.logits[0, first:], separate[1][1])  # the second sample never sees the first


def test_a_pointer_without_an_image_before_it_is_an_error(pointer_model, pointer_processor, screens):
    from agentic_verl.v2p.inference import pointer_inputs

    inputs = pointer_inputs(pointer_processor, screens[0].image, "Click the Save button")
    pad = pointer_model.config.pointer_pad_token_id
    ids = torch.cat([torch.tensor([[pad]]), inputs["input_ids"]], 1)
    with pytest.raises(ValueError, match="has no image before it"):
        pointer_model(input_ids=ids, pixel_values=inputs["pixel_values"], image_grid_thw=inputs["image_grid_thw"])
