"""recipes/retool/{sft,grpo}.sh: the launch each really builds (the stand-in launcher of test_recipes.py) composes
with verl's own configs and passes verl's config checks, on the GPU default and the CPU switch; the RL stage runs
`tool_agent_traced` with verl's hermes parser, the PythonTool YAML (whose opt-in is on) and the numeric reward, and
that tool YAML loads through verl's own loader."""

from __future__ import annotations

import pytest
from cpu_backend_helpers import REPO
from test_recipe_configs import recipe_config, sft_recipe_config
from verl_validation import validate_as_main_ppo, validate_as_sft_trainer


@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_grpo_composes_with_verls_config(device, tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("MODEL_PATH", str(tiny_model_dir))
    config = recipe_config("retool/grpo.sh", device, tmp_path, args=("trainer.total_training_steps=7",),
                           keep={"MODEL_PATH"})
    rollout = config.actor_rollout_ref.rollout
    assert rollout.agent.default_agent_loop == "tool_agent_traced"
    assert rollout.multi_turn.format == "hermes"
    assert rollout.multi_turn.tool_config_path == "configs/tools/python_tool.yaml"
    assert config.reward.custom_reward_function.path == "reward_fns/numeric_em.py"
    assert config.algorithm.adv_estimator == "grpo"
    assert config.trainer.total_training_steps == 7  # "$@" last
    assert config.data.train_files == "data/retool/train.parquet"
    assert config.trainer.device == ("cpu" if device == "cpu" else "cuda")
    if device == "gpu":
        validate_as_main_ppo(config)


@pytest.mark.parametrize("variant", ["gpu", "cpu"])
def test_sft_composes_with_verls_config(variant, tiny_model_dir, tmp_path, monkeypatch):
    config = sft_recipe_config("retool/sft.sh", variant, tmp_path, env={"MODEL_PATH": str(tiny_model_dir)})
    assert config.data.custom_cls.name == "PretokenizedSFTDataset"
    assert config.data.train_files == "data/retool/sft.parquet"
    assert config.trainer.experiment_name == "retool_sft"
    if variant == "gpu":
        validate_as_sft_trainer(config)


def test_the_recipes_tool_yaml_loads_through_verl_with_the_opt_in():
    from verl.tools.tool_registry import initialize_tools_from_config

    from agentic_verl.tools.code import PythonTool

    [tool] = initialize_tools_from_config(str(REPO / "configs/tools/python_tool.yaml"))
    assert isinstance(tool, PythonTool) and tool.name == "python"
    assert tool.settings.allow_code_execution is True
