"""Every FunReason training recipe on a CUDA GPU, as a GPU user runs it (no AGENTIC_VERL_DEVICE switch), 2 steps
each on one GPU: SRML and plain SFT through `torchrun agentic_verl.training.sft_trainer` (verl's SFT trainer with
our loss) on the tiny random Qwen2, and GRPO through `python -m verl.trainer.main_ppo` (verl's vLLM rollout on CUDA,
the function_call loop, the recipe's BFCL AST + format reward) from the learning test's SFT start.

Run on a GPU machine: `make test-gpu`. The CPU counterparts: tests/cpu/test_funreason_sft.py, test_learning.py."""

from __future__ import annotations

import pytest
from gpu_recipe_runner import (
    GPU_RUN_MARKS,
    assert_rl_trained,
    assert_sft_trained,
    funreason_sft_args,
    grpo_ast_args,
    run_recipe_on_gpu,
    short_ray_dir,
)

pytestmark = GPU_RUN_MARKS


def test_srml_sft_two_steps_on_cuda(tiny_model_dir, funreason_sft_data, tmp_path):
    run = run_recipe_on_gpu("funreason/sft_srml.sh", tmp_path,
                            *funreason_sft_args(tiny_model_dir, funreason_sft_data, tmp_path))
    print(f"srml sft on cuda: {run.seconds:.1f}s")
    for m in assert_sft_trained(run):
        assert m["srml/alpha"] == pytest.approx(0.7)  # funreason.yaml / loss/srml.yaml
        assert m["srml/think_tokens"] > 0 and m["srml/call_tokens"] > 0, m  # both spans found in every step
        # L = alpha * CE(reasoning) + (1 - alpha) * CE(call); rel 1e-2 leaves room for bf16 rounding (2^-8) of the
        # terms if verl hands the loss bf16 log-probs (fp32 on CPU: tests/cpu/test_funreason_sft.py holds 1e-5)
        assert m["train/loss"] == pytest.approx(0.7 * m["srml/loss_think"] + 0.3 * m["srml/loss_call"], rel=1e-2)


def test_plain_sft_two_steps_on_cuda(tiny_model_dir, funreason_sft_data, tmp_path):
    run = run_recipe_on_gpu("funreason/sft_plain.sh", tmp_path,
                            *funreason_sft_args(tiny_model_dir, funreason_sft_data, tmp_path))
    print(f"plain sft on cuda: {run.seconds:.1f}s")
    for m in assert_sft_trained(run):
        assert not any(key.startswith("srml/") for key in m), m  # verl's own loss


def test_grpo_ast_two_steps_on_cuda(choice_task_start, tmp_path):
    model, train = choice_task_start
    run = run_recipe_on_gpu("funreason/grpo_ast.sh", tmp_path, *grpo_ast_args(model, train, tmp_path,
                                                                              short_ray_dir()))
    print(f"grpo_ast on cuda: {run.seconds:.1f}s; step times {run.step_times()}")
    for m in assert_rl_trained(run):
        # the function_call loop: the SFT start writes a call in (nearly) every sample
        assert m["agent/num_tool_calls/mean"] > 0.5, m
