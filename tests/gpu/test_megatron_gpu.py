"""The rag_r1 recipes on verl's Megatron engine (ENGINE=megatron, TP = PP = CP = 1) on one CUDA GPU, as a GPU user
runs them: GRPO through `main_ppo` with verl's vLLM rollout, the rag_r1 loop and the live retrieval server, and SFT
through verl's SFT trainer; 2 steps each on the tiny random Qwen2.

Run on a GPU machine with `make test-gpu-megatron` (install/megatron.txt + TransformerEngine: the recipes' bridge,
mbridge: vanilla_mbridge in recipes/_common/engine/megatron_*.yaml). Without them these tests fail (saying what is missing) rather than skip. They have never
run: no session had a GPU machine with these installed (docs/megatron.md, "Status"). Megatron does not run
on a CPU without patching megatron-core itself (docs/megatron.md, "Megatron on a CPU: where it stops"); on this repository's CPU CI
the same runs are composed with verl's configs and validated as verl's trainers validate them
(tests/gpu/test_gpu_runs_compose.py)."""

from __future__ import annotations

import pytest
from cpu.cpu_backend_helpers import pretokenized_sft_parquet  # tests/ is on sys.path
from gpu_recipe_runner import (
    GPU_RUN_MARKS,
    assert_rl_trained,
    assert_sft_trained,
    grpo_args,
    on_megatron,
    run_recipe_on_gpu,
    sft_args,
    short_ray_dir,
)

from agentic_verl.extras import megatron_missing

pytestmark = [*GPU_RUN_MARKS, pytest.mark.megatron]


@pytest.fixture(autouse=True)
def _megatron_installed():
    missing = megatron_missing("mbridge")  # the recipes' engine YAML: vanilla_mbridge True
    if missing:
        pytest.fail(missing)


def test_grpo_recipe_two_steps_on_megatron(tiny_model_dir, retrieval_server, rag_r1_data, tmp_path):
    args = grpo_args(tiny_model_dir, rag_r1_data, retrieval_server.url, tmp_path, short_ray_dir())
    run = run_recipe_on_gpu("rag_r1/grpo.sh", tmp_path, *on_megatron(args))
    print(f"grpo on megatron: {run.seconds:.1f}s; step times {run.step_times()}")
    for m in assert_rl_trained(run):
        assert m["num_turns/min"] >= 2, m  # the rag_r1 loop's turns: a search and the answer


def test_sft_recipe_two_steps_on_megatron(tiny_model_dir, tmp_path):
    train = pretokenized_sft_parquet(tmp_path / "train.parquet", tiny_model_dir)
    run = run_recipe_on_gpu("rag_r1/sft.sh", tmp_path, *on_megatron(sft_args(tiny_model_dir, train, tmp_path)))
    print(f"sft on megatron: {run.seconds:.1f}s")
    assert_sft_trained(run)
