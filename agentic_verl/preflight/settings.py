"""What a preflight checks: the run's settings (from flags and the verl overrides a recipe launches with) and
the report of findings."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field, replace
from typing import Any

STAGES = ("sft", "ppo", "grpo")


@dataclass
class RagR1Settings:
    stage: str  # sft | ppo | grpo
    train: str | None = None
    val: str | None = None
    model: str | None = None
    critic_model: str | None = None  # ppo; default: the policy model
    retrieval_url: str | None = None
    env_url: str | None = None  # the BFCL environment server (recipes/funreason_mt)
    mode: str | None = None  # the run-level mode (rollout.custom.rag_r1.mode); None: the data's
    device: str = "cuda"  # cpu skips the GPU memory budget
    n_gpus: int = 1  # per node
    nnodes: int = 1
    gpu_memory_gb: float | None = None  # per GPU; None: nvidia-smi
    gpu_memory_utilization: float = 0.5  # verl's default
    param_offload: bool = False
    optimizer_offload: bool = False
    engine: str = "fsdp"  # verl's training engine: fsdp | megatron (recipes/_common/engine.sh)
    tensor_parallel: int = 1  # Megatron's model-parallel sizes (recipes/_common/engine/megatron_*.yaml)
    pipeline_parallel: int = 1
    context_parallel: int = 1
    use_kl_loss: bool = False  # verl's defaults; the recipes set theirs
    use_kl_in_reward: bool = False


# verl override key -> RagR1Settings field (leading + / ++ are ignored)
OVERRIDE_FIELDS = {
    "data.train_files": "train",
    "data.val_files": "val",
    "actor_rollout_ref.model.path": "model",
    "model.path": "model",  # the SFT trainer
    "critic.model.path": "critic_model",
    "actor_rollout_ref.rollout.custom.rag_r1.retrieval_url": "retrieval_url",
    "actor_rollout_ref.rollout.custom.rag_r1.mode": "mode",
    "actor_rollout_ref.rollout.custom.bfcl_multi_turn.env_url": "env_url",
    "trainer.device": "device",
    "trainer.n_gpus_per_node": "n_gpus",
    "trainer.nnodes": "nnodes",
    "actor_rollout_ref.rollout.gpu_memory_utilization": "gpu_memory_utilization",
    "actor_rollout_ref.actor.fsdp_config.param_offload": "param_offload",
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload": "optimizer_offload",
    "engine.param_offload": "param_offload",  # the SFT trainer, either engine
    "engine.optimizer_offload": "optimizer_offload",
    "actor_rollout_ref.actor.megatron.param_offload": "param_offload",
    "actor_rollout_ref.actor.megatron.optimizer_offload": "optimizer_offload",
    "model_engine": "engine",  # main_ppo: dp (FSDP) | megatron
    "engine": "engine",  # the SFT trainer's engine group: fsdp | megatron
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size": "tensor_parallel",
    "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size": "pipeline_parallel",
    "actor_rollout_ref.actor.megatron.context_parallel_size": "context_parallel",
    "engine.tensor_model_parallel_size": "tensor_parallel",
    "engine.pipeline_model_parallel_size": "pipeline_parallel",
    "engine.context_parallel_size": "context_parallel",
    "actor_rollout_ref.actor.use_kl_loss": "use_kl_loss",
    "algorithm.use_kl_in_reward": "use_kl_in_reward",
}


def settings_from_overrides(settings: RagR1Settings, overrides: list[str]) -> RagR1Settings:
    """`settings` updated from verl's `key=value` overrides (later ones win, as in hydra); other keys are ignored.
    A launch that starts with hydra's `--config-path DIR --config-name NAME` (the RL recipes: their settings live in
    YAML) is composed first, as verl's main composes it, and the fields come from that config.

    >>> s = settings_from_overrides(RagR1Settings("grpo"), ["data.train_files=a.parquet", "+trainer.nnodes=2",
    ...                                                     "actor_rollout_ref.actor.use_kl_loss=True", "x=1"])
    >>> s.train, s.nnodes, s.use_kl_loss
    ('a.parquet', 2, True)
    """
    if overrides and overrides[0] in ("--config-path", "--config-name"):
        overrides = _composed_overrides(overrides)
    types = {f: type(getattr(settings, f)) for f in ("n_gpus", "nnodes", "gpu_memory_utilization", "tensor_parallel",
                                                      "pipeline_parallel", "context_parallel")}
    updates: dict[str, Any] = {}
    for item in overrides:
        key, sep, value = item.lstrip("+").partition("=")
        name = OVERRIDE_FIELDS.get(key)
        if not sep or name is None:
            continue
        value = value.strip().strip("'\"")
        if name in ("param_offload", "optimizer_offload", "use_kl_loss", "use_kl_in_reward"):
            updates[name] = value.lower() == "true"
        elif name == "engine":
            updates[name] = "megatron" if value == "megatron" else "fsdp"  # main_ppo's FSDP is `dp`
        elif name in types:
            updates[name] = types[name](float(value)) if types[name] is int else float(value)
        else:
            updates[name] = None if value in ("", "null", "None") else value
    return replace(settings, **updates)


def _composed_overrides(launch: list[str]) -> list[str]:
    """`key=value` for each OVERRIDE_FIELDS key of the config hydra composes from `launch` (`--config-path DIR
    --config-name NAME overrides...`, as main_ppo gets it)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    options, rest = {}, list(launch)
    while rest and rest[0] in ("--config-path", "--config-name"):
        if len(rest) < 2:
            raise ValueError(f"{rest[0]} needs a value")
        options[rest[0]] = rest[1]
        rest = rest[2:]
    if set(options) != {"--config-path", "--config-name"}:
        raise ValueError(f"a launch with a recipe config needs both --config-path and --config-name, got {launch[:4]}")
    # The recipes' YAML finds verl's configs as pkg://verl.trainer.config (and the SFT recipes our loss group as
    # pkg://agentic_verl.training.config), which imports verl (~10 s); the same folders as file paths give the same
    # config without the import (they replace the YAML's search path list, which names only these two).
    verl_configs = os.path.join(os.path.dirname(importlib.util.find_spec("verl").origin), "trainer", "config")
    our_configs = os.path.join(os.path.dirname(__file__), os.pardir, "training", "config")
    with initialize_config_dir(config_dir=os.path.abspath(options["--config-path"]), version_base=None):
        config = compose(config_name=options["--config-name"], overrides=[
            f"hydra.searchpath=[file://{verl_configs},file://{os.path.abspath(our_configs)}]", *rest])
    items = []
    for key in OVERRIDE_FIELDS:
        value = OmegaConf.select(config, key, default=None)
        if value is not None and not OmegaConf.is_config(value):
            items.append(f"{key}={value}")
    # the SFT trainer's engine is a config group, told apart by its dataclass (McoreEngineConfig: Megatron)
    target = OmegaConf.select(config, "engine._target_", default=None)
    if isinstance(target, str):
        items.append(f"engine={'megatron' if target.endswith('McoreEngineConfig') else 'fsdp'}")
    return items


@dataclass
class Report:
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # (level, topic, message)

    def ok(self, topic: str, message: str) -> None:
        self.findings.append(("ok", topic, message))

    def note(self, topic: str, message: str) -> None:
        self.findings.append(("note", topic, message))

    def problem(self, topic: str, message: str) -> None:
        self.findings.append(("FAIL", topic, message))

    @property
    def problems(self) -> list[str]:
        return [f"{topic}: {message}" for level, topic, message in self.findings if level == "FAIL"]

    def render(self) -> str:
        lines = [f"{level:4s}  {topic}: {message}" for level, topic, message in self.findings]
        return "\n".join(lines)
