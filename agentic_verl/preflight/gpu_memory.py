"""Preflight: does the per-GPU memory budget add up (actor, reference, critic on FSDP or Megatron, vLLM's share)?"""

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
    """(GiB per GPU, one line per term): the trained models' weights, gradients and optimizer state, the reference
    model and vLLM's share; activations come on top.

    FSDP shards everything over all GPUs: 16 B per parameter (fp32 params + grads 8 B, Adam 8 B). Megatron shards the
    weights over the model-parallel group (TP x PP): bf16 params + fp32 grads 6 B; its distributed optimizer (verl's
    default) also over the data-parallel ranks: fp32 master copy + Adam 12 B. Offloading drops the matching term.

    >>> total, lines = memory_budget(RagR1Settings("grpo", n_gpus=8, use_kl_loss=True), 7_000_000_000, None, 80.0)
    >>> round(total, 1), len(lines)
    (54.7, 3)
    >>> total, _ = memory_budget(RagR1Settings("grpo", n_gpus=8, engine="megatron", tensor_parallel=2,
    ...                                        pipeline_parallel=2, use_kl_loss=True), 7_000_000_000, None, 80.0)
    >>> round(total, 1)
    62.8
    """
    gpus = max(1, settings.n_gpus * settings.nnodes)
    terms = [_trained_model("actor", settings, params, gpus)]
    if settings.stage != "sft" and (settings.use_kl_loss or settings.use_kl_in_reward):
        shards = gpus if settings.engine != "megatron" else _model_parallel(settings)
        terms.append((f"reference model 2 B (bf16) x {params / 1e9:.2f}B / {shards}", 2 * params / shards))
    if settings.stage == "ppo" and critic_params:
        terms.append(_trained_model("critic", settings, critic_params, gpus, offload=False))
    if settings.stage != "sft":
        terms.append((f"vLLM gpu_memory_utilization {settings.gpu_memory_utilization:g} x {gpu_gib:.0f} GiB",
                      settings.gpu_memory_utilization * gpu_gib * GiB))
    return sum(b for _, b in terms) / GiB, [f"{label} = {b / GiB:.1f} GiB" for label, b in terms]


def _model_parallel(settings: RagR1Settings) -> int:
    return max(1, settings.tensor_parallel * settings.pipeline_parallel)


def _trained_model(role: str, settings: RagR1Settings, params: int, gpus: int,
                   offload: bool = True) -> tuple[str, float]:
    """(label, bytes per GPU) of a trained model's weights, gradients and optimizer state on the run's engine.
    `offload`: the run's offload settings apply (the actor's and the SFT model's; the critic has its own keys)."""
    param_offload, optimizer_offload = (settings.param_offload, settings.optimizer_offload) if offload else (False,
                                                                                                           False)
    if settings.engine != "megatron":
        per_param = (0 if param_offload else 8) + (0 if optimizer_offload else 8)
        return (f"{role} params+grads+Adam {per_param} B x {params / 1e9:.2f}B params / {gpus} GPU(s)",
                per_param * params / gpus)
    mp = _model_parallel(settings)
    dp = max(1, gpus // (mp * max(1, settings.context_parallel)))
    weights, optimizer = (0 if param_offload else 6), (0 if optimizer_offload else 12)
    return (f"{role} Megatron params+grads {weights} B x {params / 1e9:.2f}B / TP x PP {mp} + distributed Adam "
            f"{optimizer} B / (TP x PP x DP {mp * dp})", weights * params / mp + optimizer * params / (mp * dp))


def offload_advice(settings: RagR1Settings) -> str:
    """The overrides that lower the budget on the run's engine and stage (verl's keys)."""
    if settings.stage == "sft":
        offload = "engine.param_offload=True / engine.optimizer_offload=True"
    elif settings.engine == "megatron":
        offload = ("actor_rollout_ref.actor.megatron.param_offload=True / "
                   "actor_rollout_ref.actor.megatron.optimizer_offload=True")
    else:
        offload = ("actor_rollout_ref.actor.fsdp_config.param_offload=True / "
                   "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True")
    advice = "use more GPUs (N_GPUS, NNODES)"
    if settings.engine == "megatron":
        advice += (", larger model-parallel sizes (tensor_model_parallel_size, pipeline_model_parallel_size: "
                   "recipes/_common/engine/megatron_*.yaml)")
    if settings.stage != "sft":
        advice += ", lower actor_rollout_ref.rollout.gpu_memory_utilization"
    return f"{advice}, or offload ({offload})"


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
        report.problem("gpu memory", f"{arithmetic}. Over by {total - gpu_gib:.1f} GiB: {offload_advice(settings)}")
    else:
        report.ok("gpu memory", arithmetic)


def _count(model: str | None) -> tuple[int, str] | None:
    folder = model_folder(model) if model else None
    return count_parameters(folder) if folder is not None else None
