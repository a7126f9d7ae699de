"""recipes/funreason/grpo_ast.sh, with and without the CPU switch, yields overrides that verl's own ppo_trainer
config accepts (the recipe runs for real with a stand-in `python3` that records its command line, as in
test_recipes.py), and its reward config scores BFCL RL rows written by `agentic-verl data fc` through verl's own
reward entry. A CPU GRPO run of this recipe is not part of the suite (minutes on 2 cores)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cpu_backend_helpers import REPO
from test_recipes import _compose, _recorded_overrides  # the stand-in launcher and verl's hydra composition

RECIPE = "funreason/grpo_ast.sh"


def composed_grpo_config(recipe: str, tmp_path, device: str, model_path: str):
    """verl's ppo_trainer config composed from the overrides `recipe` launches with (a recording stand-in for
    `python3`), after what every GRPO recipe must give: the command line's overrides last, GRPO, the model."""
    overrides = _recorded_overrides(recipe, tmp_path, {"AGENTIC_VERL_DEVICE": device, "MODEL_PATH": model_path})
    assert overrides[-1] == "trainer.total_epochs=3"  # "$@" last
    config = _compose("ppo_trainer", overrides)
    assert config.algorithm.adv_estimator == "grpo"
    assert config.actor_rollout_ref.model.path == model_path
    return config


@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_grpo_ast_overrides_compose_with_verls_config(device, tmp_path):
    config = composed_grpo_config(RECIPE, tmp_path, device, "/models/m")
    assert config.actor_rollout_ref.rollout.agent.default_agent_loop == "function_call"
    assert config.actor_rollout_ref.rollout.name == "vllm"
    assert config.data.train_files.endswith("data/funreason/rl_train.parquet")
    reward = config.reward.custom_reward_function
    assert (reward.path, reward.name) == ("reward_fns/composed.py", "compute_score")
    assert reward.reward_kwargs.config == "reward_fns/configs/funreason_ast_format.yaml"
    assert (REPO / reward.path).is_file() and (REPO / reward.reward_kwargs.config).is_file()
    assert config.trainer.device == ("cpu" if device == "cpu" else "cuda")
    if device == "cpu":
        assert config.actor_rollout_ref.rollout.enforce_eager is True and config.trainer.n_gpus_per_node == 1


def test_grpo_ast_refuses_without_a_model(tmp_path):
    env = {**os.environ, "SFT_CHECKPOINT_DIR": str(tmp_path / "none"),
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])}
    env.pop("MODEL_PATH", None)
    env.pop("AGENTIC_VERL_DEVICE", None)
    proc = subprocess.run(["bash", str(REPO / "recipes" / RECIPE)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "holds no SFT checkpoint" in proc.stderr


def test_reward_config_scores_data_fc_rows_through_verls_entry(tmp_path):
    """Rows as `data fc` writes them (JSON strings in extra_info and ground truth) through reward_fns/composed.py."""
    import importlib.util

    from agentic_verl.data.fc_parquet import rl_row
    from agentic_verl.data.function_calling import xlam_record

    record = xlam_record({"id": 1, "query": "Add 1 and 2.",
                          "tools": [{"name": "add", "parameters": {"a": {"type": "int"}, "b": {"type": "int"}}}],
                          "answers": [{"name": "add", "arguments": {"a": 1, "b": 2}}]})
    row = rl_row(record, "train", 0)
    spec = importlib.util.spec_from_file_location("composed_entry", REPO / "reward_fns" / "composed.py")
    entry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entry)

    def score(text):
        return entry.compute_score(row["data_source"], text, row["reward_model"]["ground_truth"], row["extra_info"],
                                   config="reward_fns/configs/funreason_ast_format.yaml")

    cases = [  # (output, score, error_type)
        ("<think>Add them.</think>\n\n[add(a=1, b=2)]", 1.1, None),  # right call, FunReason format
        ("[add(a=1, b=2)]", 1.0, "fc_format:missing_think"),  # right call, no reasoning
        ("<think>Add them.</think>\n\n[add(a=1, b=3)]", 0.1, "bfcl:value_error"),  # wrong value, right format
        ("I would add them.", 0.0, "bfcl:decode_failed"),  # no call at all
    ]
    for text, expected, error in cases:
        result = score(text)
        assert result["score"] == pytest.approx(expected) and result["error_type"] == error, (text, result)
    assert json.loads(row["extra_info"]["functions"])[0]["name"] == "add"
