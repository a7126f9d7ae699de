"""Run a shipped recipe on a CUDA GPU as a GPU user launches it: no AGENTIC_VERL_DEVICE switch, verl's own vLLM
rollout, one GPU, sized down through the recipe's knobs and overrides; read back verl's file-logger metrics.
(The CPU counterpart is tests/cpu/cpu_backend_helpers.run_recipe.)"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from cpu.cpu_backend_helpers import run_in_own_process_group  # tests/ is on sys.path

REPO = Path(__file__).resolve().parents[2]
# Test-only reward (exact match + a deterministic spread): a random tiny policy still gets different rewards
# within a GRPO group, so advantages and gradients are not all zero.
VARIED_REWARD = REPO / "tests" / "cpu" / "varied_reward.py"
# The tiny random model learns visibly at this rate in 2 steps (as in the CPU tests).
ACTOR_LR = "5e-3"
# Variables that would turn a run into a CPU run (recipes/_common/device.sh) or point verl at our CPU platform.
CPU_SWITCHES = ("AGENTIC_VERL_DEVICE", "VERL_PLATFORM")
LOGGER = "trainer.logger=['console','file']"  # verl's file logger: the metrics each run reads back
RUN_TIMEOUT_S = 1200  # a run is killed past this (Ray + vLLM start-up, 2 tiny steps: minutes on one GPU)


def cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # no torch, or a broken CUDA install: either way no GPU run
        return False


# verl's Megatron engine on the one lent GPU: no model parallelism (the engine YAML's sizes are for 8 GPUs)
SIZES = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")


def on_megatron(args: tuple[dict[str, str], list[str]]) -> tuple[dict[str, str], list[str]]:
    """A run's (env, overrides) under ENGINE=megatron on one GPU (the recipe adds verl's switch itself), sizes 1."""
    env, overrides = args
    rl = any(o.startswith("actor_rollout_ref.") for o in overrides)
    prefix = "actor_rollout_ref.actor.megatron" if rl else "engine"  # the reference and critic follow the actor
    return {**env, "ENGINE": "megatron"}, [*overrides, *(f"{prefix}.{size}=1" for size in SIZES)]


# The marks of every run on a GPU (tests/gpu/test_*_gpu.py): skipped without CUDA, `make test-gpu` runs them
GPU_RUN_MARKS = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU (verl's trainers with vLLM on CUDA)"),
    pytest.mark.timeout(RUN_TIMEOUT_S + 300),  # fixtures + the run; pyproject's default (900 s) is per test
]

# verl's comparison of vLLM's log-probs with the trainer's on the same tokens. Both compute in bf16 on a GPU, so
# they differ by rounding only: the largest probability gap stays far below 0.1. On the tiny random model every
# probability is ~1e-5 (151k-token vocabulary), so that bound alone cannot tell synced from stale weights; the
# Pearson correlation across tokens can: 1.0 synced vs 0.11 at step 2 with the sync skipped (fp32, CPU e2e test).
# bf16 noise on these logits is ~1% of their spread across tokens, so synced weights should stay above 0.9
# (an estimate: not yet measured on a GPU).
BF16_DIFF_MAX = 0.1
SYNCED_MIN_CORR = 0.9


@dataclass
class GpuRun:
    returncode: int
    seconds: float
    log: str
    metrics: list[dict]  # verl's FileLogger lines: {"step": n, "data": {...}}, in step order

    def tail(self, n: int = 6000) -> str:
        return self.log[-n:]

    def step_metrics(self) -> list[dict]:
        return [line["data"] for line in self.metrics]

    def step_times(self) -> list[float]:
        return [round(m.get("timing_s/step", math.nan), 1) for m in self.step_metrics()]


def assert_rl_trained(run: GpuRun) -> list[dict]:
    """A main_ppo run's 2 steps trained, with vLLM generating from the trainer's weights; its step metrics."""
    assert run.returncode == 0, run.tail()
    steps = run.step_metrics()
    assert [m["training/global_step"] for m in steps] == [1, 2], run.tail()
    for m in steps:
        assert m["actor/grad_norm"] > 0, m  # the actor learned
        assert m["training/rollout_probs_diff_valid"] == 1.0, m
        # vLLM generated with the trainer's weights (verl's weight sync through CUDA IPC)
        assert m["training/rollout_probs_diff_max"] < BF16_DIFF_MAX, m["training/rollout_probs_diff_max"]
        assert m["training/rollout_actor_probs_pearson_corr"] > SYNCED_MIN_CORR, m
        assert "critic/score/mean" in m, m  # rewards
    return steps


def assert_sft_trained(run: GpuRun) -> list[dict]:
    """A SFT run's 2 steps trained (finite positive loss, non-zero gradient); its step metrics."""
    assert run.returncode == 0, run.tail()
    train_steps = [line for line in run.metrics if "train/loss" in line["data"]]
    assert [line["step"] for line in train_steps] == [1, 2], run.metrics
    for line in train_steps:
        assert 0 < line["data"]["train/loss"] < 20 and line["data"]["train/grad_norm"] > 0, line
    return [line["data"] for line in train_steps]


def sdpa_unless_flash_attn(*model_keys: str) -> list[str]:
    """verl asks transformers for flash_attention_2 by default; without flash-attn installed use sdpa instead."""
    from transformers.utils import is_flash_attn_2_available

    if is_flash_attn_2_available():
        return []
    return [f"+{key}.override_config.attn_implementation=sdpa" for key in model_keys]


# 2 questions x 2 samples, one search turn + the final answer turn (as the CPU end-to-end tests)
SMALL_RL = [
    "actor_rollout_ref.rollout.custom.rag_r1.max_turns=1", "++actor_rollout_ref.rollout.custom.rag_r1.mode=sq",
    *(f"{key}={value}" for key, value in (("data.max_prompt_length", 512), ("data.max_response_length", 96)))]


def rl_sizes(batch: int, micro: int, samples: int, steps: int = 2) -> list[str]:
    """Hydra overrides of an RL run's batch, mini-batch (= batch), micro-batch, group size and steps."""
    return [f"data.train_batch_size={batch}", f"actor_rollout_ref.actor.ppo_mini_batch_size={batch}",
            f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={micro}", f"actor_rollout_ref.rollout.n={samples}",
            f"trainer.total_training_steps={steps}"]


def sft_sizes(batch: int, micro: int, lr: str, max_length: int | None = None, steps: int = 2) -> list[str]:
    """Hydra overrides of an SFT run's batch, micro-batch, lr, length and steps."""
    return [f"data.train_batch_size={batch}", f"data.micro_batch_size_per_gpu={micro}", f"optim.lr={lr}",
            f"trainer.total_training_steps={steps}", *([f"data.max_length={max_length}"] if max_length else [])]


def padded_unless_flash_attn(*model_keys: str) -> list[str]:
    """verl's remove-padding path for Qwen2-VL models is flash-attention's varlen kernel (verl/models/transformers/
    qwen2_vl.py): without flash-attn the VL runs take transformers' padded path (as on CPU)."""
    from transformers.utils import is_flash_attn_2_available

    if is_flash_attn_2_available():
        return []
    return [f"{key}.use_remove_padding=False" for key in model_keys]


def rl_overrides(work: Path, ray_dir: str) -> list[str]:
    """What every main_ppo run here passes: tiny scale on one GPU, no validation or checkpoints."""
    return [
        "trainer.val_before_train=False",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
        f"trainer.default_local_dir={work / 'checkpoints'}",
        f"+ray_kwargs.ray_init._temp_dir={ray_dir}",
        f"actor_rollout_ref.actor.optim.lr={ACTOR_LR}",
        "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0",  # ppo.sh warms up: lr would be ~0 for 2 steps
        "critic.optim.lr_warmup_steps_ratio=0",
        # verl's vLLM rollout, small: one GPU, a third of its memory, no CUDA-graph capture
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1",  # verl's default is 2
        "actor_rollout_ref.rollout.gpu_memory_utilization=0.3",
        "actor_rollout_ref.rollout.enforce_eager=True",
        "actor_rollout_ref.rollout.max_model_len=1024",
        "actor_rollout_ref.rollout.agent.num_workers=1",  # verl starts 8 agent-loop and reward workers by default
        "reward.num_workers=1",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
        *sdpa_unless_flash_attn("actor_rollout_ref.model", "critic.model"),
    ]


def ppo_overrides(work: Path, ray_dir: str) -> list[str]:
    """The rag_r1 runs' overrides: `rl_overrides`, short turns of the rag_r1 loop, the test-only varied reward."""
    return [
        *rl_overrides(work, ray_dir),
        "+actor_rollout_ref.rollout.custom.rag_r1.max_tokens_per_turn=24",
        "+actor_rollout_ref.rollout.custom.rag_r1.max_obs_length=64",
        f"reward.custom_reward_function.path={VARIED_REWARD}",
    ]


def grpo_args(model_dir: Path, data: tuple[Path, Path], retrieval_url: str, work: Path,
              ray_dir: str) -> tuple[dict[str, str], list[str]]:
    """(env, overrides) of the GRPO run: `run_recipe_on_gpu("rag_r1/grpo.sh", work, *grpo_args(...))`."""
    train, test = data
    env = {"MODEL_PATH": str(model_dir), "TRAIN_FILE": str(train), "VAL_FILE": str(test),
           "RETRIEVAL_URL": retrieval_url}
    return env, [*rl_sizes(batch=2, micro=2, samples=2), *SMALL_RL, *ppo_overrides(work, ray_dir)]


def ppo_args(model_dir: Path, data: tuple[Path, Path], retrieval_url: str, work: Path,
             ray_dir: str) -> tuple[dict[str, str], list[str]]:
    """(env, overrides) of the PPO run (GAE critic, one sample per question)."""
    env, overrides = grpo_args(model_dir, data, retrieval_url, work, ray_dir)
    return env, [*overrides, "actor_rollout_ref.rollout.n=1", "critic.optim.lr=1e-3"]


def sft_args(model_dir: Path, train: Path, work: Path) -> tuple[dict[str, str], list[str]]:
    """(env, overrides) of the SFT run: 2 steps of 4 pretokenized sequences."""
    env = {"MODEL_PATH": str(model_dir), "TRAIN_FILE": str(train)}
    overrides = [*sft_sizes(batch=4, micro=2, lr="1e-3", max_length=128), f"trainer.default_local_dir={work / 'ckpt'}",
                 "trainer.save_freq=-1", *sdpa_unless_flash_attn("model")]
    return env, overrides


# FunReason and V2P (tests/gpu/test_funreason_gpu.py, test_v2p_gpu.py)

def grpo_ast_args(model_dir: Path, train: Path, work: Path, ray_dir: str) -> tuple[dict[str, str], list[str]]:
    """(env, overrides) of funreason/grpo_ast.sh: 4 questions x 4 samples of the learning task
    (agentic_verl/demo/learning.py; its SFT start is right about 5/8 of the time, so rewards differ within a group),
    the recipe's own reward (BFCL AST + 0.1 x FunReason format)."""
    env = {"MODEL_PATH": str(model_dir), "TRAIN_FILE": str(train), "VAL_FILE": str(train)}
    return env, [*rl_sizes(batch=4, micro=4, samples=4), "data.max_prompt_length=128", "data.max_response_length=8",
                 *rl_overrides(work, ray_dir)]


def funreason_sft_args(model_dir: Path, train: Path, work: Path) -> tuple[dict[str, str], list[str]]:
    """(env, overrides) of funreason/sft_srml.sh and sft_plain.sh: 2 steps of the 4 samples of `train`."""
    env = {"MODEL_PATH": str(model_dir), "TRAIN_FILE": str(train), "VAL_FILE": "null",
           "SFT_CHECKPOINT_DIR": str(work / "ckpt")}
    return env, [*sft_sizes(batch=4, micro=2, lr="1e-3", max_length=1024), "trainer.save_freq=-1",
                 *sdpa_unless_flash_attn("model")]


def v2p_sft_args(train: Path, work: Path, lr: str, **model) -> tuple[dict[str, str], list[str]]:
    """(env, overrides) of v2p/sft_warmup.sh and sft_full.sh: 2 steps of the 8 samples of `train` in two
    micro-batches; `model`: MODEL_PATH= (the warm-up's pointer model) or WARMUP_DIR= (the full stage finds the
    warm-up's last checkpoint there). The last step saves the HF folder (the next stage's model)."""
    env = {"TRAIN_FILE": str(train), "SFT_CHECKPOINT_DIR": str(work / "ckpt"),
           **{key: str(value) for key, value in model.items()}}
    return env, [*sft_sizes(batch=8, micro=4, lr=lr), "trainer.save_freq=-1", "checkpoint.save_contents=[hf_model]",
                 *sdpa_unless_flash_attn("model")]


def click_sft_args(model_dir: Path, train: Path, work: Path) -> tuple[dict[str, str], list[str]]:
    """(env, overrides) of v2p/sft_click.sh: 2 steps of 4 text-click samples on the tiny Qwen2.5-VL."""
    env = {"MODEL_PATH": str(model_dir), "TRAIN_FILE": str(train), "SFT_CHECKPOINT_DIR": str(work / "ckpt")}
    return env, [*sft_sizes(batch=4, micro=2, lr="1e-3", max_length=1024), "trainer.save_freq=-1",
                 *sdpa_unless_flash_attn("model"), *padded_unless_flash_attn("model")]


# Test-only click reward: the recipe's click-in-box score plus a deterministic spread (a random tiny VL model
# never clicks inside the box; without the spread every advantage is 0 and no weight would change).
VARIED_CLICK_REWARD = REPO / "tests" / "gpu" / "varied_click_reward.py"


def grpo_click_args(model_dir: Path, data: Path, work: Path, ray_dir: str) -> tuple[dict[str, str], list[str]]:
    """(env, overrides) of v2p/grpo_click.sh: 2 screenshots x 2 samples of 16 tokens per step, the processor's
    own resize bounds (tiny screenshots), the varied click reward."""
    env = {"MODEL_PATH": str(model_dir), "TRAIN_FILE": str(data), "VAL_FILE": str(data)}
    return env, [*rl_sizes(batch=2, micro=2, samples=2), "data.max_prompt_length=512", "data.max_response_length=16",
                 "~data.mm_processor_kwargs.size",  # the processor's own resize bounds
                 *rl_overrides(work, ray_dir), f"reward.custom_reward_function.path={VARIED_CLICK_REWARD}",
                 *padded_unless_flash_attn("actor_rollout_ref.model")]


def gpu_env(work: Path, env: dict[str, str]) -> dict[str, str]:
    """The caller's environment without the CPU switch, plus one GPU, verl's file logger, vLLM's cache under `work`
    and no vLLM telemetry."""
    full_env = {key: value for key, value in os.environ.items() if key not in CPU_SWITCHES}
    full_env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "N_GPUS": "1",
        "VERL_FILE_LOGGER_PATH": str(work / "metrics.jsonl"),
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_DO_NOT_TRACK": "1",
        "VLLM_CACHE_ROOT": str(work / "vllm_cache"),  # not the home folder
        **env,
    })
    return full_env


def run_recipe_on_gpu(recipe: str, work: Path, env: dict[str, str], overrides: list[str],
                      timeout_s: int = RUN_TIMEOUT_S) -> GpuRun:
    """`bash recipes/<recipe> <overrides>` in `gpu_env`, logs under `work`.

    The run is its own process group, killed past `timeout_s`; Ray's processes of the run's session folder (given
    by `ray_dir` in `ppo_overrides`) are stopped afterwards either way."""
    from agentic_verl.cpu.cleanup import cleanup_after_run

    work.mkdir(parents=True, exist_ok=True)
    metrics_path, log_path = work / "metrics.jsonl", work / "run.log"
    ray_dir = next((o.split("=", 1)[1] for o in overrides if o.startswith("+ray_kwargs.ray_init._temp_dir=")), None)
    start = time.monotonic()
    returncode = run_in_own_process_group(["bash", str(REPO / "recipes" / recipe), LOGGER, *overrides], gpu_env(work, env),
                                          log_path, timeout_s)
    seconds = time.monotonic() - start
    if ray_dir:
        cleanup_after_run(ray_dir=ray_dir)
        shutil.rmtree(ray_dir, ignore_errors=True)
    metrics = [json.loads(line) for line in metrics_path.read_text().splitlines()] if metrics_path.exists() else []
    return GpuRun(returncode, seconds, log_path.read_text(errors="replace"), metrics)


# The recipes' checkpoint lookup (recipes/_common/sft_handoff.sh) runs in the real interpreter; the rest is recorded.
_RECORDER = """#!/usr/bin/env bash
if [[ "$1 $2" == "-m agentic_verl.training.checkpoints" ]]; then exec "{python}" "$@"; fi
printf '%s\\n' "$@" > "$RECORD_FILE"
"""


def recorded_overrides(recipe: str, work: Path, env: dict[str, str], overrides: list[str]) -> list[str]:
    """The verl overrides `run_recipe_on_gpu` would launch (`recorded_launch` without the module)."""
    return recorded_launch(recipe, work, env, overrides)[1]


def recorded_launch(recipe: str, work: Path, env: dict[str, str], overrides: list[str]) -> tuple[str, list[str]]:
    """(module, overrides) of what `run_recipe_on_gpu` would launch, recorded by a stand-in `python3`/`torchrun` on
    PATH (so a CPU machine can compose them with verl's hydra configs)."""
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("python3", "torchrun"):
        (bin_dir / name).write_text(_RECORDER.format(python=sys.executable))
        (bin_dir / name).chmod(0o755)
    record = work / "argv.txt"
    full_env = gpu_env(work, env)
    full_env.update({"PATH": f"{bin_dir}{os.pathsep}{full_env['PATH']}", "RECORD_FILE": str(record)})
    subprocess.run(["bash", str(REPO / "recipes" / recipe), LOGGER, *overrides], cwd=REPO, env=full_env, check=True,
                   timeout=60)
    argv = record.read_text().splitlines()  # the last launch: the trainer (a preflight before it is recorded over)
    module_at = argv.index("-m")
    return argv[module_at + 1], argv[module_at + 2:]  # [--config-path P --config-name N] overrides


def short_ray_dir() -> str:
    return tempfile.mkdtemp(prefix="avray", dir="/tmp")  # Ray's socket paths must fit in 107 bytes
