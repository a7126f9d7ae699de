"""Every V2P training recipe on a CUDA GPU, as a GPU user runs it (no AGENTIC_VERL_DEVICE switch), 2 steps each on
one GPU with tiny random Qwen2.5-VL models and synthetic screenshots (`agentic-verl data gui` rows):
- the pointer SFT, warm-up then full (`torchrun agentic_verl.training.sft_trainer`, loss v2p; the full stage starts
  from the warm-up's checkpoint, as the recipes chain them);
- the text-click SFT (same trainer, verl's own loss, verl's multi-turn dataset with the screenshot);
- GRPO with a text click through `python -m verl.trainer.main_ppo` (verl's vLLM rollout on CUDA, the gui_grounding
  loop; a test-only reward adds a deterministic spread to the click-in-box score, since a random model never clicks
  inside a box).

Run on a GPU machine: `make test-gpu`. The CPU counterparts: tests/cpu/test_v2p_sft.py, test_v2p_grpo.py."""

from __future__ import annotations

import pytest
from gpu_recipe_runner import (
    GPU_RUN_MARKS,
    assert_rl_trained,
    assert_sft_trained,
    click_sft_args,
    grpo_click_args,
    run_recipe_on_gpu,
    short_ray_dir,
    v2p_sft_args,
)

pytestmark = GPU_RUN_MARKS


@pytest.fixture(scope="module")
def warmup(tiny_pointer_dir, gui_data, tmp_path_factory):
    work = tmp_path_factory.mktemp("v2p_warmup_gpu")
    run = run_recipe_on_gpu("v2p/sft_warmup.sh", work,
                            *v2p_sft_args(gui_data["pointer"], work, "1e-2", MODEL_PATH=tiny_pointer_dir))
    print(f"v2p warm-up on cuda: {run.seconds:.1f}s")
    return run, work / "ckpt"


def test_pointer_warmup_two_steps_on_cuda(warmup):
    run, ckpt = warmup
    metrics = assert_sft_trained(run)
    for m in metrics:
        assert m["train/loss"] == pytest.approx(m["v2p/pointer_loss"], rel=1e-4)  # the LM loss is not trained
        assert m["v2p/samples"] == 8, m
    assert metrics[1]["v2p/pointer_loss"] < metrics[0]["v2p/pointer_loss"], metrics  # same 8 samples, lr 1e-2
    assert (ckpt / "global_step_2" / "huggingface" / "config.json").is_file()  # the full stage's model


def test_pointer_full_stage_two_steps_on_cuda(warmup, gui_data, tmp_path):
    assert warmup[0].returncode == 0, "the warm-up failed (see test_pointer_warmup_two_steps_on_cuda)"
    run = run_recipe_on_gpu("v2p/sft_full.sh", tmp_path,  # no MODEL_PATH: the warm-up's last checkpoint
                            *v2p_sft_args(gui_data["pointer"], tmp_path, "1e-3", WARMUP_DIR=warmup[1]))
    print(f"v2p full on cuda: {run.seconds:.1f}s")
    for m in assert_sft_trained(run):
        # w_lm = w_ptr = 1; rel 1e-2: room for bf16 rounding of the terms (fp32 on CPU: 1e-5 in test_v2p_sft.py)
        assert m["train/loss"] == pytest.approx(m["v2p/lm_loss"] + m["v2p/pointer_loss"], rel=1e-2)


def test_click_sft_two_steps_on_cuda(tiny_vl_dir, gui_data, tmp_path):
    run = run_recipe_on_gpu("v2p/sft_click.sh", tmp_path, *click_sft_args(tiny_vl_dir, gui_data["click"], tmp_path))
    print(f"click sft on cuda: {run.seconds:.1f}s")
    assert_sft_trained(run)


def test_grpo_click_two_steps_on_cuda(tiny_vl_dir, gui_data, tmp_path):
    run = run_recipe_on_gpu("v2p/grpo_click.sh", tmp_path,
                            *grpo_click_args(tiny_vl_dir, gui_data["grpo"], tmp_path, short_ray_dir()))
    print(f"grpo_click on cuda: {run.seconds:.1f}s; step times {run.step_times()}")
    for m in assert_rl_trained(run):
        assert m["agent/traced/mean"] == 1.0, m  # every sample went through the gui_grounding loop's trace
