"""What verl's trainers check in a composed config before they start anything, run on a CPU: a recipe whose settings
verl would refuse fails `make test`, not a GPU job minutes after its launch."""

from __future__ import annotations


def validate_as_main_ppo(config) -> None:
    """`python -m verl.trainer.main_ppo`'s checks before Ray starts (verl/trainer/main_ppo.py `main`): verl's
    `validate_config` (batch sizes against GPUs and, for Megatron, TP x PP x CP; the actor's and critic's dataclass
    configs built and validated; micro-batch settings; sampling). Raises what verl raises."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))


def validate_as_sft_trainer(config) -> None:
    """What verl's SFT trainer builds from the config before its engine (verl/trainer/sft_trainer.py
    `SFTTrainer._build_config`): the model, engine, optimizer, checkpoint and profiler dataclasses, each checked by
    its `__post_init__` (a key the engine's dataclass lacks fails here; verl's `HFModelConfig` reads the model
    folder's config and tokenizer, so `model.path` must be one). With a `loss` section (our trainer, agentic_verl.training.sft_trainer),
    the loss is built and checks the optimizer settings, as `LossSFTTrainer._build_engine` does."""
    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass

    built = {key: omega_conf_to_dataclass(config[key]) for key in ("model", "engine", "optim", "checkpoint", "profiler")}
    if "loss" in config:
        from agentic_verl.training.sft_losses import build_sft_loss

        loss_config = OmegaConf.to_container(config.loss, resolve=True)
        loss = build_sft_loss(loss_config["name"], loss_config.get("kwargs"))
        if hasattr(loss, "check_optimizer"):
            loss.check_optimizer(built["optim"])
