"""The RL recipes take verl's trainer mode and the `gigpo` estimator as settings: each composes with verl's config
and passes main_ppo's checks with `trainer.v1.trainer_mode=colocate_async` (which runs on this CPU: docs/async.md)
and with `separate_async` as a GPU cluster sets it (a standalone rollout pool and an NCCL weight transport, which
no CPU has), and with `algorithm.adv_estimator=gigpo`; our replay buffer is the one verl picks for the mode."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf
from test_recipe_configs import RL_RECIPES, recipe_config
from verl_validation import validate_as_main_ppo

from agentic_verl.training.gigpo import GigpoSettings

SEPARATE = ("trainer.v1.trainer_mode=separate_async", "actor_rollout_ref.rollout.checkpoint_engine.backend=nccl",
            "actor_rollout_ref.rollout.nnodes=1", "actor_rollout_ref.rollout.n_gpus_per_node=4")


@pytest.mark.parametrize("recipe", RL_RECIPES)
@pytest.mark.parametrize("mode", ["colocate_async", "separate_async"])
def test_rl_recipes_compose_in_the_asynchronous_modes(recipe, mode, tiny_model_dir, tmp_path, monkeypatch):
    from verl.trainer.ppo.v1 import get_trainer_cls
    from verl.trainer.ppo.v1.replay_buffer import ReplayBufferAsync

    from agentic_verl.agent_loops.trace_sampler import AgentMetricsReplayBuffer

    monkeypatch.setenv("MODEL_PATH", str(tiny_model_dir))  # verl's checks read the model's config
    args = SEPARATE if mode == "separate_async" else (f"trainer.v1.trainer_mode={mode}",)
    config = recipe_config(recipe, "gpu", tmp_path, args, keep={"MODEL_PATH"})
    validate_as_main_ppo(config)
    assert config.trainer.v1.trainer_mode == mode and get_trainer_cls(mode).__name__.endswith("Async")
    sampler = config.trainer.v1.sampler.custom_sampler
    assert (sampler.path, sampler.name) == ("pkg://agentic_verl.agent_loops.trace_sampler", "AgentMetricsReplayBuffer")
    buffer = AgentMetricsReplayBuffer(trainer_mode=mode, trainer_config=config.trainer.v1.get(mode, {}),
                                      max_off_policy_threshold=config.trainer.v1.sampler.max_off_policy_threshold,
                                      max_off_policy_strategy=config.trainer.v1.sampler.max_off_policy_strategy,
                                      sampler_kwargs=config.trainer.v1.sampler.sampler_kwargs,
                                      refill_fn=lambda n: None)
    assert isinstance(buffer, ReplayBufferAsync)


@pytest.mark.parametrize("recipe", ["funreason_mt/grpo.sh", "rag_r1/grpo.sh"])
def test_gigpo_is_a_setting_of_the_multi_turn_recipes(recipe, tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("MODEL_PATH", str(tiny_model_dir))
    config = recipe_config(recipe, "gpu", tmp_path, ("algorithm.adv_estimator=gigpo", "+algorithm.gigpo.omega=0.5"),
                           keep={"MODEL_PATH"})
    validate_as_main_ppo(config)
    settings = GigpoSettings.from_config(config.algorithm)
    assert config.algorithm.adv_estimator == "gigpo" and settings.omega == 0.5
    assert settings.step_norm == ("std" if config.algorithm.get("norm_adv_by_std_in_grpo", True) else "none")
    OmegaConf.to_container(config, resolve=True)  # every interpolation resolves
