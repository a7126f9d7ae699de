"""Every shipped rag_r1 training recipe on a CUDA GPU, as a GPU user runs it (no AGENTIC_VERL_DEVICE switch):
GRPO and PPO through `python -m verl.trainer.main_ppo` with verl's own vLLM rollout (vllm 0.24.0 on CUDA, the
rag_r1 loop, the live retrieval server), SFT through `torchrun verl.trainer.sft_trainer`; 2 steps each on the
tiny random Qwen2, on one GPU with vLLM at 30% of its memory.

Run on a GPU machine: `make test-gpu` (= `pytest -m gpu tests/gpu` after installing verl[vllm]==0.9.1).
The CPU counterparts are tests/cpu/test_e2e_vllm.py and tests/cpu/test_sft.py."""

from __future__ import annotations

import math

import pytest
from cpu.cpu_backend_helpers import pretokenized_sft_parquet  # tests/ is on sys.path
from gpu_recipe_runner import (
    GPU_RUN_MARKS,
    GpuRun,
    assert_rl_trained,
    assert_sft_trained,
    cuda_available,
    grpo_args,
    ppo_args,
    run_recipe_on_gpu,
    sft_args,
    short_ray_dir,
)


def _flash_attn_available() -> bool:
    from transformers.utils import is_flash_attn_2_available

    return is_flash_attn_2_available()


pytestmark = GPU_RUN_MARKS


def _assert_trained(run: GpuRun) -> list[dict]:
    steps = assert_rl_trained(run)
    for m in steps:
        assert m["num_turns/min"] >= 2, m  # the rag_r1 loop's turns: a search and the answer
    return steps


def test_grpo_recipe_two_steps_on_cuda(tiny_model_dir, retrieval_server, rag_r1_data, tmp_path):
    run = run_recipe_on_gpu("rag_r1/grpo.sh", tmp_path,
                            *grpo_args(tiny_model_dir, rag_r1_data, retrieval_server.url, tmp_path, short_ray_dir()))
    print(f"grpo on cuda: {run.seconds:.1f}s; step times {run.step_times()}")
    _assert_trained(run)


CRITIC_NEEDS_FLASH_ATTN = ("verl 0.9.1 builds the PPO critic (a value-head model) with attn_implementation="
                           "'flash_attention_2' hard-coded (verl/utils/model.py load_valuehead_model): install flash-attn")


@pytest.mark.skipif(cuda_available() and not _flash_attn_available(), reason=CRITIC_NEEDS_FLASH_ATTN)
def test_ppo_recipe_with_critic_two_steps_on_cuda(tiny_model_dir, retrieval_server, rag_r1_data, tmp_path):
    run = run_recipe_on_gpu("rag_r1/ppo.sh", tmp_path,
                            *ppo_args(tiny_model_dir, rag_r1_data, retrieval_server.url, tmp_path, short_ray_dir()))
    print(f"ppo on cuda: {run.seconds:.1f}s; step times {run.step_times()}")
    for m in _assert_trained(run):
        assert "critic/vf_loss" in m and math.isfinite(m["critic/vf_loss"]), m


def test_sft_recipe_two_steps_on_cuda(tiny_model_dir, tmp_path):
    train = pretokenized_sft_parquet(tmp_path / "train.parquet", tiny_model_dir)
    run = run_recipe_on_gpu("rag_r1/sft.sh", tmp_path, *sft_args(tiny_model_dir, train, tmp_path))
    print(f"sft on cuda: {run.seconds:.1f}s")
    assert_sft_trained(run)
