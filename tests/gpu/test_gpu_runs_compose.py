"""The GPU recipe runs' overrides (tests/gpu/test_recipes_gpu.py), composed with verl's own hydra configs on any
machine: a typo in what the GPU tests pass fails here in `make test`, not on a lent GPU. The recipes run for real
with a stand-in `python3`/`torchrun` that records the command line, in the environment the GPU runs use."""

from __future__ import annotations

import os

import pytest
from gpu_recipe_runner import grpo_args, ppo_args, recorded_overrides, sft_args


def _compose(config_name: str, launch: list[str]):
    """A recorded launch composed as hydra's main does: a leading `--config-path DIR --config-name NAME` (the RL
    recipes' YAML) picks the primary config, else verl's `config_name`."""
    import verl
    from hydra import compose, initialize_config_dir

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    launch = list(launch)
    while launch and launch[0] in ("--config-path", "--config-name"):
        flag, value = launch.pop(0), launch.pop(0)
        config_dir, config_name = (value, config_name) if flag == "--config-path" else (config_dir, value)
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name=config_name, overrides=launch)


@pytest.mark.parametrize("recipe, args", [("rag_r1/grpo.sh", grpo_args), ("rag_r1/ppo.sh", ppo_args)])
def test_rl_runs_compose_as_one_gpu_vllm_runs(recipe, args, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")  # a CPU switch in the caller's shell must not reach the run
    env, overrides = args(tmp_path / "model", (tmp_path / "train.parquet", tmp_path / "test.parquet"),
                          "http://127.0.0.1:8123", tmp_path, "/tmp/avray_x")
    config = _compose("ppo_trainer", recorded_overrides(recipe, tmp_path, env, overrides))
    assert config.trainer.device == "cuda" and config.trainer.n_gpus_per_node == 1
    assert config.trainer.total_training_steps == 2 and config.data.train_batch_size == 2
    rollout = config.actor_rollout_ref.rollout
    assert rollout.name == "vllm" and rollout.tensor_model_parallel_size == 1
    assert rollout.gpu_memory_utilization == 0.3 and rollout.enforce_eager is True
    assert "enable_sleep_mode" not in rollout  # verl's GPU default, as a user's run has it
    assert rollout.agent.default_agent_loop == "rag_r1"
    assert rollout.custom.rag_r1.retrieval_url == "http://127.0.0.1:8123"
    assert config.actor_rollout_ref.actor.optim.lr == pytest.approx(5e-3)
    assert config.reward.custom_reward_function.path.endswith("tests/cpu/varied_reward.py")
    assert config.ray_kwargs.ray_init._temp_dir == "/tmp/avray_x"
    if recipe == "rag_r1/ppo.sh":
        assert config.algorithm.adv_estimator == "gae" and config.critic.optim.lr == pytest.approx(1e-3)
        assert rollout.n == 1
    else:
        assert config.algorithm.adv_estimator == "grpo" and rollout.n == 2


def test_sft_run_composes_as_a_one_gpu_run(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")
    env, overrides = sft_args(tmp_path / "model", tmp_path / "train.parquet", tmp_path)
    config = _compose("sft_trainer_engine", recorded_overrides("rag_r1/sft.sh", tmp_path, env, overrides))
    assert config.trainer.device == "cuda" and config.trainer.n_gpus_per_node == 1
    assert config.trainer.total_training_steps == 2 and config.data.train_batch_size == 4
    assert config.data.custom_cls.name == "PretokenizedSFTDataset"  # the recipe's default dataset
