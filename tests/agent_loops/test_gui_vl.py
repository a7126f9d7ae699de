"""gui_grounding with a real vision-language model: the tiny random Qwen2.5-VL (`agentic_verl.v2p.tiny`: real Qwen
tokenizer, real `Qwen2_5_VLProcessor`, real vision tower) behind verl's own `AgentLoopWorker`, fed rows that
`agentic-verl data gui` wrote for synthetic screenshots and that verl's `RLHFDataset` read back (qwen_vl_utils image
extraction, the `<image>` placeholder).

The generation server is the model itself through transformers (`generate` on the prompt ids plus the pixel features
of the images the loop sent): it computes its own M-RoPE positions while decoding, as vLLM does. vLLM itself serves
the same loop in tests/cpu/test_v2p_grpo.py (GRPO through main_ppo).

What is compared, per sample, on the batch the worker hands the trainer:
- image tokens: the prompt holds exactly one `<|image_pad|>` per merged 28x28 patch of the processor's grid for the
  screenshot (the trainer's re-run of the processor, `multi_modal_inputs`), and the loop's `input_size` is that grid
  in pixels;
- position ids: verl's (text row + transformers' `get_rope_index`, what the trainer trains with) equal verl's own
  independent implementation (`verl.models.transformers.qwen2_vl.get_rope_index`, used by its SFT dataset);
- log-probs: the trainer's forward on that batch (its position ids and pixel features) gives the log-probs the
  server reported while generating (to 1e-5); with 1-D positions instead they differ by ~1e-3 (the check can fail).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
import torch
from agent_loop_helpers import verl_config

RESPONSE_LENGTH = 12


@pytest.fixture(scope="module")
def tiny_vl_dir(tmp_path_factory) -> Path:
    from agentic_verl.v2p.tiny import make_tiny_qwen2_5_vl

    return make_tiny_qwen2_5_vl(tmp_path_factory.mktemp("tiny_qwen2_5_vl"))


@pytest.fixture(scope="module")
def tiny_vl_model(tiny_vl_dir):
    from transformers import AutoModelForImageTextToText

    torch.set_num_threads(1)
    return AutoModelForImageTextToText.from_pretrained(tiny_vl_dir, dtype=torch.float32,
                                                       attn_implementation="sdpa").eval()


class TransformersVLServer:
    """`server_manager.generate` over a Qwen2.5-VL with transformers: the prompt ids as the loop built them and the
    pixel features of `image_data` (the model refuses a prompt whose image tokens do not match the features).
    Sampling at the request's temperature with a seeded generator; returns the chosen tokens' log-probs."""

    def __init__(self, model, processor, seed: int = 0):
        self.model, self.processor = model, processor
        self.generator = torch.Generator().manual_seed(seed)
        self.calls: list[dict] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None, video_data=None,
                       mm_processor_kwargs=None, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        assert image_data, "the gui_grounding loop sends the screenshot with the prompt"
        features = self.processor.image_processor(images=image_data, return_tensors="pt",
                                                  **(mm_processor_kwargs or {}))
        temperature = float(sampling_params.get("temperature", 1.0))
        ids = torch.tensor([prompt_ids])
        # transformers >= 5 computes M-RoPE positions only when told which tokens are image tokens (as the
        # processor's output says); without mm_token_type_ids it silently falls back to 1-D positions
        image_pad = self.processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
        tokens, log_probs = [], []
        with torch.no_grad():
            out = self.model(input_ids=ids, pixel_values=features["pixel_values"],
                             image_grid_thw=features["image_grid_thw"], mm_token_type_ids=(ids == image_pad).int(),
                             use_cache=True)
            for _ in range(int(sampling_params["max_tokens"])):
                logits = out.logits[0, -1].float()
                logp = torch.log_softmax(logits / max(temperature, 1e-6), dim=-1)
                token = (int(torch.multinomial(logp.exp(), 1, generator=self.generator)) if temperature > 0
                         else int(logits.argmax()))
                tokens.append(token)
                log_probs.append(float(logp[token]))
                if token == self.processor.tokenizer.eos_token_id:
                    break
                # later steps: text only; the model continues its own M-RoPE positions from the cache
                out = self.model(input_ids=torch.tensor([[token]]), past_key_values=out.past_key_values,
                                 use_cache=True)
        self.calls.append({"prompt_ids": list(prompt_ids), "image_grid_thw": features["image_grid_thw"],
                           "temperature": temperature})
        return TokenOutput(token_ids=tokens, log_probs=log_probs, stop_reason="completed",
                           extra_fields={"global_steps": 1})


def _rows(tmp_path):
    """Two synthetic screenshots of different sizes, written by `data gui`'s writer and read by verl's RLHFDataset."""
    from agentic_verl.data.gui_grounding import GroundingSample, write_parquet
    from agentic_verl.v2p.synthetic import synthetic_screen

    samples = []
    for seed, size in [(0, (336, 224)), (1, (300, 180))]:
        screen = synthetic_screen(seed, size)
        path = tmp_path / f"screen_{seed}.png"
        screen.image.save(path)
        element = screen.elements[0]
        samples.append(GroundingSample(id=f"synthetic_{seed}", image_path=str(path), instruction=element["instruction"],
                                       bbox=tuple(float(v) for v in element["bbox"]), image_size=size,
                                       benchmark="synthetic", element_type=element["element_type"]))
    return write_parquet(samples, tmp_path / "train.parquet")


def _batch(parquet, config, tokenizer, processor):
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset

    dataset = RLHFDataset(str(parquet), tokenizer, config.data, processor)
    rows = [dataset[i] for i in range(len(dataset))]
    keys = ("raw_prompt", "agent_name", "extra_info", "reward_model", "data_source", "index")
    return DataProto.from_dict(non_tensors={k: np.array([row[k] for row in rows], dtype=object) for k in keys}), rows


def _trainer_log_probs(model, batch, row, position_ids):
    """What the actor computes on the batch (verl's Qwen2-VL forward hands transformers the 4-row position ids)."""
    inputs = batch.non_tensor_batch["multi_modal_inputs"][row]
    input_ids = batch.batch["input_ids"][row : row + 1]
    attention_mask = batch.batch["attention_mask"][row : row + 1]
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                       pixel_values=inputs["pixel_values"], image_grid_thw=inputs["image_grid_thw"]).logits[0].float()
    prompt_width = batch.batch["prompts"].shape[1]
    responses = batch.batch["responses"][row]
    n = int(batch.batch["response_mask"][row].sum())
    logp = torch.log_softmax(logits[prompt_width - 1 : prompt_width - 1 + n], dim=-1)
    return logp.gather(1, responses[:n, None])[:, 0]


def test_worker_batch_matches_what_the_trainer_recomputes(tiny_vl_dir, tiny_vl_model, tmp_path):
    from transformers import AutoProcessor, AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.models.transformers.qwen2_vl import get_rope_index
    from verl.utils import hf_processor

    config = verl_config(tiny_vl_dir, "data.return_raw_chat=True", prompt_length=512, response_length=RESPONSE_LENGTH)
    tokenizer = AutoTokenizer.from_pretrained(tiny_vl_dir)
    processor = hf_processor(str(tiny_vl_dir))  # what verl's HFModelConfig loads (get_rope_index bound to it)
    server = TransformersVLServer(tiny_vl_model, AutoProcessor.from_pretrained(tiny_vl_dir))
    batch, rows = _batch(_rows(tmp_path), config, tokenizer, processor)
    result = asyncio.run(AgentLoopWorker(config, server).generate_sequences(batch))

    image_pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert len(server.calls) == 2
    for row, source in enumerate(rows):
        inputs = result.non_tensor_batch["multi_modal_inputs"][row]
        grid = inputs["image_grid_thw"]
        assert grid.shape == (1, 3)
        t, h, w = (int(v) for v in grid[0])
        # image tokens: one pad per merged 2x2 patch of the trainer's grid; the server saw the same grid
        input_ids = result.batch["input_ids"][row]
        assert int((input_ids == image_pad).sum()) == t * h * w // 4 == inputs["pixel_values"].shape[0] // 4
        prompt = result.batch["prompts"][row]
        prompt_ids = prompt[result.batch["attention_mask"][row][: prompt.shape[0]].bool()].tolist()
        [call] = [c for c in server.calls if c["prompt_ids"] == prompt_ids]  # the loops run concurrently
        assert torch.equal(call["image_grid_thw"], grid)
        # the loop's model-input size is that grid in pixels; the original size is the screenshot's
        extra = result.non_tensor_batch
        assert list(extra["input_size"][row]) == [w * 14, h * 14]
        assert list(extra["image_size"][row]) == list(source["extra_info"]["image_size"])

        # position ids: (4, L) = text positions + M-RoPE (t, h, w); verl's independent implementation agrees
        position_ids = result.batch["position_ids"][row]
        attention_mask = result.batch["attention_mask"][row]
        assert position_ids.shape == (4, input_ids.shape[0])
        valid = attention_mask.bool()
        assert torch.equal(position_ids[0][valid], torch.arange(int(valid.sum())))
        independent = get_rope_index(processor, input_ids=input_ids, image_grid_thw=grid, attention_mask=attention_mask)
        assert torch.equal(position_ids[1:][:, valid], independent[:, valid])
        # not vacuous: over the image the h/w rows walk the grid, unlike 1-D positions
        on_image = input_ids == image_pad
        assert int(position_ids[2][on_image].max() - position_ids[2][on_image].min()) == h // 2 - 1
        assert int(position_ids[3][on_image].max() - position_ids[3][on_image].min()) == w // 2 - 1

        # log-probs: the trainer's forward on this batch reproduces what the server reported while generating
        n = int(result.batch["response_mask"][row].sum())
        assert n > 0
        rollout = result.batch["rollout_log_probs"][row][:n]
        trainer = _trainer_log_probs(tiny_vl_model, result, row, position_ids[None].transpose(0, 1))
        # measured: 9.5e-7 at most; with 1-D positions instead of M-RoPE 1.4e-3 to 1.6e-3
        assert torch.allclose(trainer, rollout, atol=1e-5), (trainer - rollout).abs().max()
        flat = position_ids[0][None, None].expand(4, 1, -1)
        assert not torch.allclose(_trainer_log_probs(tiny_vl_model, result, row, flat), rollout, atol=1e-4)
