"""What a preflight checks: the run's settings (from flags and the verl overrides a recipe launches with) and
the report of findings."""

from __future__ import annotations

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
    mode: str | None = None  # the run-level mode (RAG_MODE); None: the data's
    device: str = "cuda"  # cpu skips the GPU memory budget
    n_gpus: int = 1  # per node
    nnodes: int = 1
    gpu_memory_gb: float | None = None  # per GPU; None: nvidia-smi
    gpu_memory_utilization: float = 0.5  # verl's default
    param_offload: bool = False
    optimizer_offload: bool = False
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
    "trainer.device": "device",
    "trainer.n_gpus_per_node": "n_gpus",
    "trainer.nnodes": "nnodes",
    "actor_rollout_ref.rollout.gpu_memory_utilization": "gpu_memory_utilization",
    "actor_rollout_ref.actor.fsdp_config.param_offload": "param_offload",
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload": "optimizer_offload",
    "engine.param_offload": "param_offload",
    "engine.optimizer_offload": "optimizer_offload",
    "actor_rollout_ref.actor.use_kl_loss": "use_kl_loss",
    "algorithm.use_kl_in_reward": "use_kl_in_reward",
}


def settings_from_overrides(settings: RagR1Settings, overrides: list[str]) -> RagR1Settings:
    """`settings` updated from verl's `key=value` overrides (later ones win, as in hydra); other keys are ignored.

    >>> s = settings_from_overrides(RagR1Settings("grpo"), ["data.train_files=a.parquet", "+trainer.nnodes=2",
    ...                                                     "actor_rollout_ref.actor.use_kl_loss=True", "x=1"])
    >>> s.train, s.nnodes, s.use_kl_loss
    ('a.parquet', 2, True)
    """
    types = {f: type(getattr(settings, f)) for f in ("n_gpus", "nnodes", "gpu_memory_utilization")}
    updates: dict[str, Any] = {}
    for item in overrides:
        key, sep, value = item.lstrip("+").partition("=")
        name = OVERRIDE_FIELDS.get(key)
        if not sep or name is None:
            continue
        value = value.strip().strip("'\"")
        if name in ("param_offload", "optimizer_offload", "use_kl_loss", "use_kl_in_reward"):
            updates[name] = value.lower() == "true"
        elif name in types:
            updates[name] = types[name](float(value)) if types[name] is int else float(value)
        else:
            updates[name] = None if value in ("", "null", "None") else value
    return replace(settings, **updates)


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
