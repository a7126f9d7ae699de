"""Preflight: does the per-GPU memory budget add up (FSDP actor, reference, critic, vLLM's share)?"""

from __future__ import annotations

import shutil
import subprocess

from agentic_verl.preflight.model_checks import count_parameters, model_folder
from agentic_verl.preflight.settings import RagR1Settings, Report

GiB = 1024**3


def gpu_memory_gib() -> float | None:
    """The smallest GPU's memory (GiB) from nvidia-smi; None without one."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        sizes = [float(line) for line in out.split() if line.strip()]
    except (subprocess.SubprocessError, ValueError, OSError):
        return None
    return min(sizes) / 1024 if sizes else None  # MiB -> GiB


def memory_budget(settings: RagR1Settings, params: int, critic_params: int | None,
                  gpu_gib: float) -> tuple[float, list[str]]:
    """(GiB per GPU, one line per term) of the estimate in the module docstring.

    >>> total, lines = memory_budget(RagR1Settings("grpo", n_gpus=8, use_kl_loss=True), 7_000_000_000, None, 80.0)
    >>> round(total, 1), len(lines)
    (54.7, 3)
    """
    gpus = max(1, settings.n_gpus * settings.nnodes)
    actor_bytes = (0 if settings.param_offload else 8) + (0 if settings.optimizer_offload else 8)
    terms = [(f"actor params+grads+Adam {actor_bytes} B x {params / 1e9:.2f}B params / {gpus} GPU(s)",
              actor_bytes * params / gpus)]
    if settings.stage != "sft" and (settings.use_kl_loss or settings.use_kl_in_reward):
        terms.append((f"reference model 2 B (bf16) x {params / 1e9:.2f}B / {gpus}", 2 * params / gpus))
    if settings.stage == "ppo" and critic_params:
        terms.append((f"critic 16 B x {critic_params / 1e9:.2f}B / {gpus}", 16 * critic_params / gpus))
    if settings.stage != "sft":
        terms.append((f"vLLM gpu_memory_utilization {settings.gpu_memory_utilization:g} x {gpu_gib:.0f} GiB",
                      settings.gpu_memory_utilization * gpu_gib * GiB))
    return sum(b for _, b in terms) / GiB, [f"{label} = {b / GiB:.1f} GiB" for label, b in terms]


def check_gpu_memory(report: Report, settings: RagR1Settings) -> None:
    if settings.device == "cpu":
        report.ok("gpu memory", "CPU run (AGENTIC_VERL_DEVICE=cpu): no GPU budget")
        return
    gpu_gib = settings.gpu_memory_gb or gpu_memory_gib()
    if gpu_gib is None:
        report.note("gpu memory", "per-GPU memory unknown (no nvidia-smi; set GPU_MEMORY_GB / --gpu-memory-gb): "
                                  "budget not checked")
        return
    counted = _count(settings.model)
    if counted is None:
        report.note("gpu memory", f"cannot count the parameters of {settings.model} (not on this machine): budget "
                                  "not checked")
        return
    params, how = counted
    critic = _count(settings.critic_model or settings.model) if settings.stage == "ppo" else None
    total, lines = memory_budget(settings, params, critic[0] if critic else None, gpu_gib)
    arithmetic = f"{params / 1e9:.2f}B params ({how}); per GPU: " + "; ".join(lines) + \
        f"; total {total:.1f} of {gpu_gib:.1f} GiB, activations on top"
    if total > gpu_gib:
        report.problem("gpu memory", f"{arithmetic}. Over by {total - gpu_gib:.1f} GiB: use more GPUs (N_GPUS, "
                                     "NNODES), lower actor_rollout_ref.rollout.gpu_memory_utilization, or offload "
                                     "(actor_rollout_ref.actor.fsdp_config.param_offload=True / optimizer_offload=True)")
    else:
        report.ok("gpu memory", arithmetic)


def _count(model: str | None) -> tuple[int, str] | None:
    folder = model_folder(model) if model else None
    return count_parameters(folder) if folder is not None else None
