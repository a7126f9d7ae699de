"""The GPU recipe runs' overrides (tests/gpu/test_*_gpu.py), composed with verl's own hydra configs on any machine
and checked as verl's trainers check them before they start (tests/cpu/verl_validation.py): a typo in what the GPU
tests pass, or a setting verl refuses, fails here in `make test`, not on a lent GPU. The recipes run for real with
a stand-in `python3`/`torchrun` that records the command line, in the environment the GPU runs use."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cpu.verl_validation import validate_as_main_ppo, validate_as_sft_trainer
from gpu_recipe_runner import (
    VARIED_CLICK_REWARD,
    click_sft_args,
    funreason_sft_args,
    grpo_args,
    grpo_ast_args,
    grpo_click_args,
    on_megatron,
    ppo_args,
    recorded_launch,
    recorded_overrides,
    sft_args,
    v2p_sft_args,
)


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


def _compose_sft(module: str, launch: list[str]):
    """A recorded SFT launch composed as its trainer's hydra main does: verl's `sft_trainer_engine` for
    verl.trainer.sft_trainer; our trainer's config folder (its `sft_trainer`, or `--config-name NAME`) for
    agentic_verl.training.sft_trainer."""
    if module == "verl.trainer.sft_trainer":
        return _compose("sft_trainer_engine", launch)
    assert module == "agentic_verl.training.sft_trainer", module
    import agentic_verl.training

    config_dir = os.path.join(os.path.dirname(agentic_verl.training.__file__), "config")
    return _compose("sft_trainer", ["--config-path", config_dir, *launch])


def _one_gpu_rl(config) -> None:
    """What every main_ppo run on the lent GPU has, and verl's own checks before it starts."""
    assert config.trainer.device == "cuda" and config.trainer.n_gpus_per_node == 1
    assert config.trainer.total_training_steps == 2 and config.trainer.val_before_train is False
    rollout = config.actor_rollout_ref.rollout
    assert rollout.name == "vllm" and rollout.tensor_model_parallel_size == 1
    assert rollout.gpu_memory_utilization == 0.3 and rollout.enforce_eager is True
    assert "enable_sleep_mode" not in rollout  # verl's GPU default, as a user's run has it
    assert config.actor_rollout_ref.actor.optim.lr == pytest.approx(5e-3)
    validate_as_main_ppo(config)


def _one_gpu_sft(config, model: Path, batch: int) -> None:
    assert config.trainer.device == "cuda" and config.trainer.n_gpus_per_node == 1
    assert config.trainer.total_training_steps == 2 and config.data.train_batch_size == batch
    assert config.model.path == str(model)
    validate_as_sft_trainer(config)


@pytest.mark.parametrize("recipe, args", [("rag_r1/grpo.sh", grpo_args), ("rag_r1/ppo.sh", ppo_args)])
def test_rl_runs_compose_as_one_gpu_vllm_runs(recipe, args, tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")  # a CPU switch in the caller's shell must not reach the run
    env, overrides = args(tiny_model_dir, (tmp_path / "train.parquet", tmp_path / "test.parquet"),
                          "http://127.0.0.1:8123", tmp_path, "/tmp/avray_x")
    config = _compose("ppo_trainer", recorded_overrides(recipe, tmp_path, env, overrides))
    validate_as_main_ppo(config)  # verl reads the PPO critic's model config: a real (tiny) model folder
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


def test_sft_run_composes_as_a_one_gpu_run(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")
    env, overrides = sft_args(tiny_model_dir, tmp_path / "train.parquet", tmp_path)
    config = _compose_sft(*recorded_launch("rag_r1/sft.sh", tmp_path, env, overrides))
    _one_gpu_sft(config, tiny_model_dir, batch=4)
    assert config.data.custom_cls.name == "PretokenizedSFTDataset"  # the recipe's default dataset


# ---------------------------------------------------------------- Megatron (test_megatron_gpu.py)


def test_megatron_grpo_run_composes_as_a_one_gpu_megatron_run(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")
    env, overrides = on_megatron(grpo_args(tiny_model_dir, (tmp_path / "train.parquet", tmp_path / "test.parquet"),
                                           "http://127.0.0.1:8123", tmp_path, "/tmp/avray_x"))
    launch = recorded_overrides("rag_r1/grpo.sh", tmp_path, env, overrides)
    assert "model_engine=megatron" in launch
    config = _compose("ppo_trainer", launch)
    _one_gpu_rl(config)
    for role in (config.actor_rollout_ref.actor, config.actor_rollout_ref.ref):
        assert role.strategy == "megatron", role.strategy
        sizes = (role.megatron.tensor_model_parallel_size, role.megatron.pipeline_model_parallel_size,
                 role.megatron.context_parallel_size)
        assert sizes == (1, 1, 1), sizes
    assert config.actor_rollout_ref.rollout.agent.default_agent_loop == "rag_r1"


def test_megatron_sft_run_composes_as_a_one_gpu_megatron_run(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")
    env, overrides = on_megatron(sft_args(tiny_model_dir, tmp_path / "train.parquet", tmp_path))
    module, launch = recorded_launch("rag_r1/sft.sh", tmp_path, env, overrides)
    config = _compose_sft(module, launch)
    _one_gpu_sft(config, tiny_model_dir, batch=4)
    assert config.engine._target_ == "verl.workers.config.McoreEngineConfig", config.engine._target_
    assert config.optim._target_ == "verl.workers.config.McoreOptimizerConfig", config.optim._target_
    assert (config.engine.tensor_model_parallel_size, config.engine.pipeline_model_parallel_size) == (1, 1)


# ---------------------------------------------------------------- FunReason (test_funreason_gpu.py)


@pytest.mark.parametrize("recipe, loss", [("funreason/sft_srml.sh", "srml"), ("funreason/sft_plain.sh", "sft")])
def test_funreason_sft_runs_compose_as_one_gpu_runs(recipe, loss, tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")
    env, overrides = funreason_sft_args(tiny_model_dir, tmp_path / "sft_train.parquet", tmp_path)
    module, launch = recorded_launch(recipe, tmp_path, env, overrides)
    assert launch[2:4] == ["--config-name", "funreason/sft"]
    config = _compose_sft(module, launch)
    _one_gpu_sft(config, tiny_model_dir, batch=4)
    assert config.loss.name == loss and config.data.custom_cls.name == "FunctionCallSFTDataset"
    assert config.data.micro_batch_size_per_gpu == 2 and config.data.max_length == 1024
    assert config.optim.lr == pytest.approx(1e-3) and config.trainer.default_local_dir == str(tmp_path / "ckpt")


def test_grpo_ast_run_composes_as_a_one_gpu_vllm_run(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")
    env, overrides = grpo_ast_args(tiny_model_dir, tmp_path / "train.parquet", tmp_path, "/tmp/avray_x")
    config = _compose("ppo_trainer", recorded_overrides("funreason/grpo_ast.sh", tmp_path, env, overrides))
    _one_gpu_rl(config)
    assert config.algorithm.adv_estimator == "grpo" and config.actor_rollout_ref.rollout.n == 4
    assert config.actor_rollout_ref.rollout.agent.default_agent_loop == "function_call"
    assert (config.data.train_batch_size, config.data.max_prompt_length, config.data.max_response_length) == (4, 128,
                                                                                                             8)
    reward = config.reward.custom_reward_function  # the recipe's own reward, not a test one
    assert (reward.path, reward.reward_kwargs.config) == ("reward_fns/composed.py",
                                                          "reward_fns/configs/funreason_ast_format.yaml")


# ---------------------------------------------------------------- V2P (test_v2p_gpu.py)


@pytest.fixture
def warmup_checkpoint(tiny_pointer_dir, tmp_path):
    """A folder laid out as sft_warmup.sh's checkpoints (verl's tracker file + global_step_2/huggingface)."""
    folder = tmp_path / "warmup_ckpt"
    (folder / "global_step_2").mkdir(parents=True)
    (folder / "global_step_2" / "huggingface").symlink_to(tiny_pointer_dir)
    (folder / "latest_checkpointed_iteration.txt").write_text("2")
    return folder


@pytest.mark.parametrize("stage", ["warmup", "full"])
def test_v2p_pointer_sft_runs_compose_as_one_gpu_runs(stage, tiny_pointer_dir, warmup_checkpoint, tmp_path,
                                                       monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")
    monkeypatch.delenv("MODEL_PATH", raising=False)
    model = {"MODEL_PATH": tiny_pointer_dir} if stage == "warmup" else {"WARMUP_DIR": warmup_checkpoint}
    env, overrides = v2p_sft_args(tmp_path / "pointer.parquet", tmp_path, "1e-2", **model)
    module, launch = recorded_launch(f"v2p/sft_{stage}.sh", tmp_path, env, overrides)
    assert launch[2:4] == ["--config-name", f"v2p/sft_{stage}"]
    config = _compose_sft(module, launch)
    # the full stage starts from the warm-up's last checkpoint, found by the recipe
    _one_gpu_sft(config, tiny_pointer_dir if stage == "warmup" else warmup_checkpoint / "global_step_2" /
                 "huggingface", batch=8)
    assert config.loss.name == "v2p" and config.loss.kwargs.stage == stage
    assert config.data.micro_batch_size_per_gpu == 4 and list(config.checkpoint.save_contents) == ["hf_model"]


def test_click_sft_run_composes_as_a_one_gpu_run(tiny_vl_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")
    env, overrides = click_sft_args(tiny_vl_dir, tmp_path / "click.parquet", tmp_path)
    config = _compose_sft(*recorded_launch("v2p/sft_click.sh", tmp_path, env, overrides))
    _one_gpu_sft(config, tiny_vl_dir, batch=4)
    assert config.loss.name == "sft" and config.optim.lr_scheduler_type == "cosine"
    from transformers.utils import is_flash_attn_2_available

    assert config.model.use_remove_padding is is_flash_attn_2_available()  # verl's VL varlen path needs flash-attn


def test_grpo_click_run_composes_as_a_one_gpu_vllm_run(tiny_vl_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTIC_VERL_DEVICE", "cpu")
    env, overrides = grpo_click_args(tiny_vl_dir, tmp_path / "train.parquet", tmp_path, "/tmp/avray_x")
    config = _compose("ppo_trainer", recorded_overrides("v2p/grpo_click.sh", tmp_path, env, overrides))
    _one_gpu_rl(config)
    rollout = config.actor_rollout_ref.rollout
    assert rollout.agent.default_agent_loop == "gui_grounding" and rollout.n == 2
    assert rollout.custom.gui_grounding.max_tokens == config.data.max_response_length == 16
    assert not config.data.mm_processor_kwargs  # MAX_PIXELS= : the processor's own bounds for tiny screenshots
    assert config.reward.custom_reward_function.path == str(VARIED_CLICK_REWARD) and VARIED_CLICK_REWARD.is_file()


def test_the_varied_click_reward_is_the_click_score_plus_a_spread():
    import importlib.util

    spec = importlib.util.spec_from_file_location("varied_click_reward", VARIED_CLICK_REWARD)
    reward = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reward)
    box, info = [10, 10, 50, 50], {"image_size": [100, 100]}
    inside, outside = "pyautogui.click(x=20, y=30)", "pyautogui.click(x=80, y=90)"
    for text, click in [(inside, 1.0), (outside, 0.0), ("no click", 0.0)]:
        scored = reward.compute_score("gui", text, box, info)
        assert scored["click_in_box"] == click, (text, scored)
        assert scored["score"] == pytest.approx(click + (sum(map(ord, text)) % 11) / 10.0)
    assert json.dumps(reward.compute_score("gui", inside, box, info))  # plain numbers, as verl logs them
