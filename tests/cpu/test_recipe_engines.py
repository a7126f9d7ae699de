"""ENGINE=fsdp|megatron in every training recipe (recipes/_common/engine.sh): each recipe's full config, composed
with verl's own hydra configs from the command line the recipe really builds (the stand-in launcher of
test_recipes.py), passes the checks verl's trainer runs before it starts (tests/cpu/verl_validation.py), under both
engines.

- fsdp, the default, changes nothing: with ENGINE=fsdp set the config is the pinned snapshot
  (tests/cpu/recipe_configs/, which test_recipe_configs.py compares with ENGINE unset).
- megatron swaps verl's engine configs (model_engine=megatron for main_ppo; engine=megatron optim=megatron for the SFT
  trainer), which makes the recipe's YAML include its engine YAML (recipes/_common/engine/megatron_*.yaml: the
  parallel sizes, on every role, changed by Hydra overrides), and keeps every method setting of the recipe.
- The V2P pointer SFT refuses megatron before anything starts; a CPU run refuses megatron; an ENGINE that is not a
  training engine is refused.
Megatron itself is not run here: verl's `megatron` extra (megatron-core, TransformerEngine) is not installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cpu_backend_helpers import REPO
from test_recipe_configs import (
    _ABSENT,
    FIXED_ENV,
    RL_RECIPES,
    _snapshot_path,
    _verl_defaults,
    compose_sft_launch,
    recipe_config,
    recipe_settings,
    sft_knob_names,
)
from test_recipes import _recorded_overrides
from verl_validation import validate_as_main_ppo, validate_as_sft_trainer

ROLES = ("actor_rollout_ref.actor", "actor_rollout_ref.ref", "critic")
SIZES = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")
# The sizes each RL recipe sets at its top for 7-8B models on 8 GPUs (TP, PP, CP), from verl's Megatron examples
RL_MEGATRON_SIZES = (2, 2, 1)
# Settings of the FSDP configs that verl's Megatron configs do not have (the Megatron critic has no forward
# micro-batch size): the only recipe settings that ENGINE=megatron may drop
FSDP_ONLY = {"critic.forward_micro_batch_size_per_gpu"}


def _megatron(monkeypatch) -> set[str]:
    """ENGINE=megatron in this process's environment: the variables to keep."""
    monkeypatch.setenv("ENGINE", "megatron")
    return {"ENGINE"}


def _sizes(tp: int = 2, pp: int = 2, cp: int = 1) -> tuple[str, ...]:
    """The actor's parallel sizes as command-line overrides (the reference and the critic follow the actor)."""
    return tuple(f"actor_rollout_ref.actor.megatron.{size}={value}" for size, value in zip(SIZES, (tp, pp, cp), strict=True))


def _effective(settings: dict, key: str):
    return settings.get(key, _verl_defaults().get(key, _ABSENT))


@pytest.mark.parametrize("recipe", RL_RECIPES)
def test_fsdp_is_the_default_and_changes_nothing(recipe, tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINE", "fsdp")
    settings = json.loads(json.dumps(recipe_settings(recipe, "gpu", tmp_path, keep={"ENGINE"})))
    assert settings == json.loads(_snapshot_path(recipe, "gpu").read_text())


@pytest.mark.parametrize("recipe", RL_RECIPES)
def test_megatron_swaps_the_engine_and_keeps_the_method(recipe, tmp_path, monkeypatch):
    fsdp = json.loads(_snapshot_path(recipe, "gpu").read_text())
    settings = recipe_settings(recipe, "gpu", tmp_path, keep=_megatron(monkeypatch))
    assert settings["model_engine"] == "megatron"
    for role in ROLES:
        assert _effective(settings, f"{role}.strategy") == "megatron", role
        assert tuple(_effective(settings, f"{role}.megatron.{size}") for size in SIZES) == RL_MEGATRON_SIZES, role
    changed = {key: (value, _effective(settings, key)) for key, value in fsdp.items()
               if _effective(settings, key) != value}
    assert set(changed) <= FSDP_ONLY, changed
    assert all(now == _ABSENT for _, now in changed.values()), changed


def test_megatron_sizes_reach_every_role(tmp_path, monkeypatch):
    """Overrides of the actor's sizes (recipes/_common/engine/megatron_rl.yaml) reach the reference and the critic."""
    settings = recipe_settings("rag_r1/ppo.sh", "gpu", tmp_path, args=_sizes(4, 1, 2), keep=_megatron(monkeypatch))
    for role in ROLES:  # the reference reads the actor's sizes (verl's ref/megatron_ref.yaml)
        assert tuple(_effective(settings, f"{role}.megatron.{size}") for size in SIZES) == (4, 1, 2), role


@pytest.mark.parametrize("engine", ["fsdp", "megatron"])
@pytest.mark.parametrize("recipe", RL_RECIPES)
def test_verl_accepts_every_rl_recipe(recipe, engine, tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINE", engine)
    monkeypatch.setenv("MODEL_PATH", str(tiny_model_dir))  # verl reads the PPO critic's model config
    config = recipe_config(recipe, "gpu", tmp_path, keep={"ENGINE", "MODEL_PATH"})
    assert config.actor_rollout_ref.actor.strategy == engine
    validate_as_main_ppo(config)


def test_verls_checks_refuse_megatron_sizes_the_gpus_cannot_hold(tmp_path, monkeypatch):
    """The validation above can fail: TP 3 does not divide the recipe's 8 GPUs."""
    config = recipe_config("rag_r1/grpo.sh", "gpu", tmp_path, args=_sizes(tp=3), keep=_megatron(monkeypatch))
    with pytest.raises(AssertionError, match=r"n_gpus \(8\) must be divisible by model_parallel_size \(6\)"):
        validate_as_main_ppo(config)


# ---------------------------------------------------------------- SFT recipes

# recipe -> the trainer module it launches and the config that module starts from
SFT_RECIPES = {
    "rag_r1/sft.sh": "verl.trainer.sft_trainer",
    "funreason/sft_srml.sh": "agentic_verl.training.sft_trainer",
    "funreason/sft_plain.sh": "agentic_verl.training.sft_trainer",
    "v2p/sft_click.sh": "agentic_verl.training.sft_trainer",
    "funreason_mt/sft.sh": "agentic_verl.training.sft_trainer",
    "retool/sft.sh": "verl.trainer.sft_trainer",
}
SFT_MEGATRON_SIZES = {"rag_r1/sft.sh": (4, 1, 1), "funreason/sft_srml.sh": (4, 1, 1),
                      "funreason/sft_plain.sh": (4, 1, 1), "v2p/sft_click.sh": (2, 2, 1), "funreason_mt/sft.sh": (4, 1, 1),
                      "retool/sft.sh": (4, 1, 1)}
POINTER_RECIPES = ["v2p/sft_warmup.sh", "v2p/sft_full.sh"]
TRAINING_RECIPES = [*RL_RECIPES, *SFT_RECIPES, *POINTER_RECIPES]
# settings an engine's optimizer shares with the other (the lr schedule is named differently: compared apart)
SHARED_OPTIM = ("lr", "lr_warmup_steps_ratio", "weight_decay", "clip_grad", "betas", "total_training_steps")


def sft_config(recipe: str, engine: str, tmp_path: Path, model: Path, args: tuple[str, ...] = ()):
    """The config the recipe's SFT trainer would compose under ENGINE=`engine` (GPU default) for `model`, with `args`
    on the command line."""
    env = {"AGENTIC_VERL_DEVICE": "gpu", "ENGINE": engine, **FIXED_ENV, "MODEL_PATH": str(model)}
    launch = _recorded_overrides(recipe, tmp_path, env, args=args, unset=sorted(sft_knob_names(recipe) - set(env)))
    module = (tmp_path / "argv.txt").read_text().splitlines()
    module = module[module.index("-m") + 1]
    assert module == SFT_RECIPES[recipe]
    return compose_sft_launch(module, launch)


@pytest.fixture(scope="module")
def models(tiny_model_dir):
    """Each SFT recipe's model kind, tiny: a Qwen2 text model, a Qwen2.5-VL for the text-click SFT."""
    from agentic_verl.commands.cpu_model import _tiny_vl

    return {recipe: _tiny_vl(None, "float32", False) if recipe.startswith("v2p/") else tiny_model_dir
            for recipe in SFT_RECIPES}


@pytest.mark.parametrize("engine", ["fsdp", "megatron"])
@pytest.mark.parametrize("recipe", sorted(set(SFT_RECIPES) - {"funreason/sft_plain.sh"}))  # = sft_srml.sh's run
def test_verl_accepts_every_sft_recipe(recipe, engine, models, tmp_path):
    config = sft_config(recipe, engine, tmp_path, models[recipe])
    assert config.model.path == str(models[recipe])
    if engine == "megatron":
        assert config.engine._target_ == "verl.workers.config.McoreEngineConfig"
        assert config.optim._target_ == "verl.workers.config.McoreOptimizerConfig"
        assert tuple(config.engine[size] for size in SIZES) == SFT_MEGATRON_SIZES[recipe]
    else:
        assert config.engine._target_ == "verl.workers.config.FSDPEngineConfig"
    validate_as_sft_trainer(config)


def test_megatron_sft_sizes_are_hydra_overrides(tmp_path):
    """The engine YAML's sizes (recipes/_common/engine/megatron_sft.yaml) give way to the command line's."""
    config = sft_config("rag_r1/sft.sh", "megatron", tmp_path, Path("/models/m"),
                        args=("engine.tensor_model_parallel_size=2", "engine.context_parallel_size=2"))
    assert tuple(config.engine[size] for size in SIZES) == (2, 1, 2)
    assert config.engine.vanilla_mbridge is True  # mbridge, what install/megatron.txt installs


@pytest.mark.parametrize("recipe", sorted(SFT_RECIPES))
def test_megatron_sft_keeps_the_method(recipe, tmp_path):
    from omegaconf import OmegaConf

    (tmp_path / "fsdp").mkdir(), (tmp_path / "megatron").mkdir()
    fsdp, megatron = (sft_config(recipe, engine, tmp_path / engine, Path("/models/m")) for engine in ("fsdp", "megatron"))
    for section in ("data", "model", "trainer", "checkpoint", "loss"):
        if section in fsdp:
            assert OmegaConf.to_container(megatron[section]) == OmegaConf.to_container(fsdp[section]), section
    assert {k: megatron.optim[k] for k in SHARED_OPTIM} == {k: fsdp.optim[k] for k in SHARED_OPTIM}
    assert megatron.optim.lr_decay_style == fsdp.optim.lr_scheduler_type  # constant or cosine, in Megatron's terms


def test_megatron_sft_needs_the_schedule_in_megatrons_terms(tiny_model_dir, tmp_path):
    """Why funreason/sft.yaml names its cosine schedule per engine (recipes/_common/lr/): verl's Megatron optimizer
    config has no `lr_scheduler_type` and refuses a config that sets it."""
    config = sft_config("funreason/sft_srml.sh", "megatron", tmp_path, tiny_model_dir,
                        args=("+optim.lr_scheduler_type=cosine",))
    with pytest.raises(Exception, match="lr_scheduler_type"):
        validate_as_sft_trainer(config)


def _run_recipe(recipe: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The recipe with stand-in launchers that record a launch in tmp_path/launched (there must be none)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("python3", "torchrun"):
        (bin_dir / name).write_text(f'#!/usr/bin/env bash\necho "$@" >> "{tmp_path / "launched"}"\n')
        (bin_dir / name).chmod(0o755)
    full_env = {**os.environ, "MODEL_PATH": "/models/m", "INIT_DIR": str(tmp_path / "init"), "PREFLIGHT": "0", **env,
                "PATH": os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]])}
    return subprocess.run(["bash", str(REPO / "recipes" / recipe)], cwd=REPO, env=full_env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("recipe", POINTER_RECIPES)
def test_the_pointer_sft_refuses_megatron_before_anything_starts(recipe, tmp_path):
    # no MODEL_PATH: the warm-up would write its pointer model to INIT_DIR, the full stage look for the warm-up's
    proc = _run_recipe(recipe, tmp_path, {"ENGINE": "megatron", "MODEL_PATH": "", "WARMUP_DIR": str(tmp_path)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ENGINE=megatron: the V2P pointer loss runs on verl's FSDP engine only" in proc.stderr
    assert not (tmp_path / "launched").exists() and not (tmp_path / "init").exists()  # no launch, no model written


@pytest.mark.parametrize("recipe", TRAINING_RECIPES)
def test_every_training_recipe_refuses_an_engine_it_does_not_have(recipe, tmp_path):
    proc = _run_recipe(recipe, tmp_path, {"ENGINE": "hf"})  # the evaluation recipes' knob, exported by mistake
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ENGINE=fsdp|megatron (verl's training engine), not 'hf'" in proc.stderr
    assert not (tmp_path / "launched").exists()


@pytest.mark.parametrize("recipe", ["rag_r1/grpo.sh", "funreason/sft_srml.sh"])  # engine.sh's check, shared
def test_the_cpu_switch_refuses_megatron(recipe, tmp_path):
    proc = _run_recipe(recipe, tmp_path, {"ENGINE": "megatron", "AGENTIC_VERL_DEVICE": "cpu"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ENGINE=megatron with AGENTIC_VERL_DEVICE=cpu: the CPU switch configures verl's FSDP engine only" in \
        proc.stderr
    assert not (tmp_path / "launched").exists()
