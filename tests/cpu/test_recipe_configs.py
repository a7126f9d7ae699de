"""The effective verl config of every RL recipe, pinned: what `python -m verl.trainer.main_ppo` would run with, for
the GPU default and the CPU switch, equals the recorded snapshot in tests/cpu/recipe_configs/.

How: each recipe runs for real with a stand-in `python3` on PATH that records its command line (test_recipes.py's
recorder), in a fixed environment (the machine facts unset but a fixed MODEL_PATH; rag_r1's mode as an override). The recorded launch
(`--config-path/--config-name` if any, then the overrides) is composed with hydra exactly as main_ppo composes it,
resolved, flattened to dotted keys, and reduced to the keys whose value differs from verl's own `ppo_trainer`: the
recipe's settings, whether they come from bash overrides or from its YAML (recipes/_common/*.yaml,
recipes/<method>/*.yaml). Stored as the difference from verl's defaults, a snapshot survives verl changing a default
the recipes do not set, and its git diff shows exactly which setting a change moved.

Why a snapshot and not a runtime comparison with `git show HEAD:<recipe>`: once a change is committed HEAD is that
change, and the comparison would be the recipe with itself. The snapshots were written from the bash-only recipes
(commit 122af04) before their settings moved into YAML; the move kept every one.

Beside the snapshots: every machine fact the demos and tests set in the environment reaches its setting, and the
command line's overrides ("$@") go last and win over the YAML, the CPU switch and the engine YAML.

A deliberate change of a recipe's settings updates the snapshots, reviewed in the diff:

    .venv/bin/python tests/cpu/test_recipe_configs.py --write
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from cpu_backend_helpers import REPO
from test_recipes import _compose, _recorded_overrides

RL_RECIPES = ["rag_r1/grpo.sh", "rag_r1/ppo.sh", "funreason/grpo_ast.sh", "v2p/grpo_click.sh", "funreason_mt/grpo.sh",
              "retool/grpo.sh"]
DEVICES = ["gpu", "cpu"]
SNAPSHOTS = Path(__file__).resolve().parent / "recipe_configs"
# What the recipes would otherwise find out from the machine: a model (the RL recipes refuse without one), the
# data's mode (read from a parquet that need not exist here), the CPU run's Ray folder (device.sh names one per
# run after its shell's PID; test_recipes.py checks that) and a running BFCL environment server (funreason_mt would
# start one on a free port).
FIXED_ENV = {"MODEL_PATH": "/models/policy", "PREFLIGHT": "0", "CPU_RAY_TMPDIR": "/tmp/ray_agentic_verl",
             "BFCL_ENV_URL": "http://127.0.0.1:8090"}
# the rag_r1 stages read the mode from their data; here it is given as a run-level override
FIXED_ARGS = {"rag_r1/grpo.sh": ("++actor_rollout_ref.rollout.custom.rag_r1.mode=mq",),
              "rag_r1/ppo.sh": ("++actor_rollout_ref.rollout.custom.rag_r1.mode=mq",)}
_ABSENT = "<absent>"


def _knob_names() -> set[str]:
    """Every `${NAME` the recipes and their sourced files read: unset for the test, so a knob exported in the
    developer's shell cannot change what is compared."""
    files = [REPO / "recipes" / recipe for recipe in RL_RECIPES] + sorted((REPO / "recipes/_common").glob("*.sh"))
    names = set()
    for path in files:
        names |= set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", path.read_text()))
    return names - {"PATH", "HOME"}


def _flatten(node, prefix: str = "") -> dict:
    if isinstance(node, dict):
        if not node and prefix:
            return {prefix: {}}
        flat = {}
        for key, value in node.items():
            flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: node}


def _resolved(config) -> dict:
    from omegaconf import OmegaConf

    return _flatten(OmegaConf.to_container(config, resolve=True))


_BASE: dict | None = None


def _verl_defaults() -> dict:
    global _BASE
    if _BASE is None:
        _BASE = _resolved(_compose("ppo_trainer", []))
    return _BASE


def recipe_config(recipe: str, device: str, tmp_path: Path, args: tuple[str, ...] = (),
                  keep: set[str] = frozenset()):
    """The config `python -m verl.trainer.main_ppo` would compose from the recipe's recorded launch; the recipes'
    knobs unset except those in `keep` (as this process's environment has them)."""
    env = {"AGENTIC_VERL_DEVICE": device, **{k: v for k, v in FIXED_ENV.items() if k not in keep}}
    unset = _knob_names() - keep - set(env)
    args = (*FIXED_ARGS.get(recipe, ()), *args)
    return _compose("ppo_trainer", _recorded_overrides(recipe, tmp_path, env, args=args, unset=sorted(unset)))


def recipe_settings(recipe: str, device: str, tmp_path: Path, args: tuple[str, ...] = (),
                    keep: set[str] = frozenset()) -> dict:
    """The recipe's effective config (`recipe_config`, resolved) minus verl's ppo_trainer defaults."""
    config = _resolved(recipe_config(recipe, device, tmp_path, args, keep))
    base = _verl_defaults()
    diff = {key: value for key, value in config.items() if key not in base or base[key] != value}
    diff.update({key: _ABSENT for key in base if key not in config})
    return dict(sorted(diff.items()))


def _snapshot_path(recipe: str, device: str) -> Path:
    return SNAPSHOTS / f"{recipe.removesuffix('.sh').replace('/', '__')}.{device}.json"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("recipe", RL_RECIPES)
def test_recipe_config_equals_its_snapshot(recipe, device, tmp_path):
    expected = json.loads(_snapshot_path(recipe, device).read_text())
    actual = json.loads(json.dumps(recipe_settings(recipe, device, tmp_path)))  # as stored: lists, not tuples
    changed = {key: (expected.get(key, _ABSENT), actual.get(key, _ABSENT))
               for key in expected.keys() | actual.keys() if expected.get(key, _ABSENT) != actual.get(key, _ABSENT)}
    assert not changed, f"{recipe} ({device}): setting -> (snapshot, now): {changed}"
    assert actual["actor_rollout_ref.model.path"] == "/models/policy"  # the snapshot is of this environment
    assert len(actual) > 30  # the recipe's own settings, not a near-empty diff


@pytest.mark.parametrize("recipe", RL_RECIPES)
def test_extra_overrides_go_last_and_win(recipe, tmp_path):
    """`bash recipe KEY=VALUE` wins over the recipe's bash knobs and its YAML alike."""
    settings = recipe_settings(recipe, "gpu", tmp_path, args=("actor_rollout_ref.rollout.n=3",
                                                               "algorithm.adv_estimator=reinforce_plus_plus"))
    assert settings["actor_rollout_ref.rollout.n"] == 3
    assert settings["algorithm.adv_estimator"] == "reinforce_plus_plus"


# The machine facts (recipes/_common/machine.sh), each a value no YAML holds, and the setting it must reach
FACTS = {
    "N_GPUS": ("2", {"trainer.n_gpus_per_node": 2}),
    "NNODES": ("3", {"trainer.nnodes": 3}),
    "TRAIN_FILE": ("/d/t.parquet", {"data.train_files": "/d/t.parquet"}),
    "VAL_FILE": ("/d/v.parquet", {"data.val_files": "/d/v.parquet"}),
}
METHOD_FACTS = {
    "rag_r1/grpo.sh": {"RETRIEVAL_URL": ("http://h:1", {"actor_rollout_ref.rollout.custom.rag_r1.retrieval_url":
                                                        "http://h:1"})},
    "rag_r1/ppo.sh": {"CRITIC_MODEL_PATH": ("/models/critic", {"critic.model.path": "/models/critic"})},
    "funreason/grpo_ast.sh": {},
    "v2p/grpo_click.sh": {},
    "funreason_mt/grpo.sh": {"BFCL_ENV_URL": ("http://h:2", {"actor_rollout_ref.rollout.custom.bfcl_multi_turn.env_url":
                                                             "http://h:2"})},
    "retool/grpo.sh": {},
}
# Overrides the demos and tests pass, and every setting each one must move (the YAML ties the log-prob and critic
# micro-batches to the actor's, and the V2P loop's click budget to the response length)
MICRO = {"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 5,
         "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 5,
         "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 5}
OVERRIDES = {
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=5": {
        "rag_r1/ppo.sh": {**MICRO, "critic.ppo_micro_batch_size_per_gpu": 5}, None: MICRO},
    "data.max_response_length=40": {
        "v2p/grpo_click.sh": {"data.max_response_length": 40,
                              "actor_rollout_ref.rollout.custom.gui_grounding.max_tokens": 40},
        None: {"data.max_response_length": 40}},
    "data.max_prompt_length=300": {None: {"data.max_prompt_length": 300}},
    "trainer.experiment_name=run_x": {None: {"trainer.experiment_name": "run_x"}},
}


@pytest.mark.parametrize("recipe", RL_RECIPES)
def test_machine_facts_reach_their_settings(recipe, tmp_path, monkeypatch):
    """Every machine fact a demo or test sets in the environment reaches verl."""
    facts = {**FACTS, **METHOD_FACTS[recipe]}
    for name, (value, _) in facts.items():
        monkeypatch.setenv(name, value)
    settings = recipe_settings(recipe, "gpu", tmp_path, keep=set(facts))
    expected = {key: value for name in facts for key, value in facts[name][1].items()}
    assert {key: settings.get(key) for key in expected} == expected


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("recipe", RL_RECIPES)
def test_command_line_overrides_win_over_yaml_and_the_cpu_switch(recipe, device, tmp_path):
    """One override moves every setting tied to it, over the YAML, the CPU switch's sizes and the stage's own CPU
    sizes (funreason_mt's 7168-token prompts, grpo_click's 16-token responses)."""
    settings = recipe_settings(recipe, device, tmp_path, args=tuple(OVERRIDES))
    expected = {key: value for per_recipe in OVERRIDES.values()
                for key, value in per_recipe.get(recipe, per_recipe[None]).items()}
    assert {key: settings.get(key) for key in expected} == expected


# ---------------------------------------------------------------- SFT recipes
# The same pin for the SFT recipes: the config their trainer (`-m MODULE`) composes from the recorded launch, minus
# verl's own `sft_trainer_engine`, for the GPU default, the CPU switch and ENGINE=megatron where the recipe has it
# (the V2P pointer SFT refuses megatron). The snapshots were written from the recipes whose settings were bash
# overrides (commit aefbfd9), before those settings moved into recipes/_common/sft.yaml and the recipes' YAML.

# recipe -> the trainer module it launches
SFT_RECIPES = {
    "rag_r1/sft.sh": "verl.trainer.sft_trainer",
    "funreason/sft_srml.sh": "agentic_verl.training.sft_trainer",
    "funreason/sft_plain.sh": "agentic_verl.training.sft_trainer",
    "v2p/sft_click.sh": "agentic_verl.training.sft_trainer",
    "v2p/sft_warmup.sh": "agentic_verl.training.sft_trainer",
    "v2p/sft_full.sh": "agentic_verl.training.sft_trainer",
    "funreason_mt/sft.sh": "agentic_verl.training.sft_trainer",
    "retool/sft.sh": "verl.trainer.sft_trainer",
}
POINTER_SFT = {"v2p/sft_warmup.sh", "v2p/sft_full.sh"}
SFT_VARIANTS = [(recipe, variant) for recipe in SFT_RECIPES
                for variant in (["gpu", "cpu"] if recipe in POINTER_SFT else ["gpu", "cpu", "megatron"])]


def sft_knob_names(recipe: str) -> set[str]:
    """Every `${NAME` the SFT recipe, sft_srml.sh (sft_plain.sh runs it) and the shared files read."""
    files = [REPO / "recipes" / recipe, REPO / "recipes/funreason/sft_srml.sh",
             *sorted((REPO / "recipes/_common").glob("*.sh"))]
    return {name for path in files for name in re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", path.read_text())} - {"PATH",
                                                                                                          "HOME"}


def compose_sft_launch(module: str, launch: list[str]):
    """A recorded SFT launch composed as its trainer's hydra main does: the trainer's own config folder and config
    (verl's `sft_trainer_engine`; ours, agentic_verl/training/config/sft_trainer.yaml) unless the launch starts with
    `--config-path DIR` / `--config-name NAME`; the rest are overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if module == "verl.trainer.sft_trainer":
        import verl

        config_dir, config_name = Path(verl.__file__).parent / "trainer" / "config", "sft_trainer_engine"
    else:
        assert module == "agentic_verl.training.sft_trainer", module
        import agentic_verl.training

        config_dir, config_name = Path(agentic_verl.training.__file__).parent / "config", "sft_trainer"
    launch = list(launch)
    while launch and launch[0] in ("--config-path", "--config-name"):
        flag, value = launch.pop(0), launch.pop(0)
        config_dir, config_name = (Path(value), config_name) if flag == "--config-path" else (config_dir, value)
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name=config_name, overrides=launch)


def sft_recipe_config(recipe: str, variant: str, tmp_path: Path, args: tuple[str, ...] = (),
                      keep: set[str] = frozenset(), env: dict[str, str] | None = None):
    """The config the SFT recipe's trainer would compose: `variant` gpu, cpu (the switch) or megatron (GPU,
    ENGINE=megatron); the recipes' knobs unset except those in `keep` (as this process's environment has them) and
    those in `env`."""
    env = {"AGENTIC_VERL_DEVICE": "cpu" if variant == "cpu" else "gpu",
           **({"ENGINE": "megatron"} if variant == "megatron" else {}),
           **{k: v for k, v in FIXED_ENV.items() if k not in keep}, **(env or {})}
    unset = sft_knob_names(recipe) - set(keep) - set(env)
    launch = _recorded_overrides(recipe, tmp_path, env, args=args, unset=sorted(unset))
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    module = argv[argv.index("-m") + 1]
    assert module == SFT_RECIPES[recipe], module
    return compose_sft_launch(module, launch)


_SFT_BASE: dict | None = None


def _verl_sft_defaults() -> dict:
    global _SFT_BASE
    if _SFT_BASE is None:
        _SFT_BASE = _resolved(compose_sft_launch("verl.trainer.sft_trainer", []))
    return _SFT_BASE


def sft_recipe_settings(recipe: str, variant: str, tmp_path: Path, args: tuple[str, ...] = (),
                        keep: set[str] = frozenset()) -> dict:
    """The SFT recipe's effective config (`sft_recipe_config`, resolved) minus verl's sft_trainer_engine defaults."""
    config = _resolved(sft_recipe_config(recipe, variant, tmp_path, args, keep))
    base = _verl_sft_defaults()
    diff = {key: value for key, value in config.items() if key not in base or base[key] != value}
    diff.update({key: _ABSENT for key in base if key not in config})
    return dict(sorted(diff.items()))


@pytest.mark.parametrize("recipe, variant", SFT_VARIANTS)
def test_sft_recipe_config_equals_its_snapshot(recipe, variant, tmp_path):
    expected = json.loads(_snapshot_path(recipe, variant).read_text())
    actual = json.loads(json.dumps(sft_recipe_settings(recipe, variant, tmp_path)))
    changed = {key: (expected.get(key, _ABSENT), actual.get(key, _ABSENT))
               for key in expected.keys() | actual.keys() if expected.get(key, _ABSENT) != actual.get(key, _ABSENT)}
    assert not changed, f"{recipe} ({variant}): setting -> (snapshot, now): {changed}"
    assert actual["model.path"] == "/models/policy"  # the snapshot is of this environment
    assert len(actual) > 8  # the recipe's own settings, not a near-empty diff


@pytest.mark.parametrize("recipe", sorted(SFT_RECIPES))
def test_sft_extra_overrides_go_last_and_win(recipe, tmp_path):
    """`bash recipe KEY=VALUE` wins over the recipe's bash knobs and its YAML alike."""
    settings = sft_recipe_settings(recipe, "gpu", tmp_path, args=("optim.lr=3e-3", "data.train_batch_size=6"))
    assert (settings["optim.lr"], settings["data.train_batch_size"]) == (3e-3, 6)


# The machine facts and overrides the SFT recipes get from demos and tests, and the settings they must reach
SFT_FACTS = {
    "N_GPUS": ("2", {"trainer.n_gpus_per_node": 2}),
    "TRAIN_FILE": ("/d/t.parquet", {"data.train_files": "/d/t.parquet"}),
    "SFT_CHECKPOINT_DIR": ("/ckpt/x", {"trainer.default_local_dir": "/ckpt/x"}),
}
SFT_OVERRIDES = {"data.train_batch_size=6": {"data.train_batch_size": 6},
                 "data.micro_batch_size_per_gpu=3": {"data.micro_batch_size_per_gpu": 3},
                 "data.max_length=300": {"data.max_length": 300},
                 "trainer.total_training_steps=7": {"trainer.total_training_steps": 7},
                 "trainer.experiment_name=run_x": {"trainer.experiment_name": "run_x"}}


@pytest.mark.parametrize("variant", ["gpu", "cpu"])
@pytest.mark.parametrize("recipe", sorted(SFT_RECIPES))
def test_sft_facts_and_overrides_reach_their_settings(recipe, variant, tmp_path, monkeypatch):
    """Machine facts from the environment and the command line's overrides reach verl, over the YAML and the CPU
    switch (funreason_mt's own CPU length and micro-batch included)."""
    for name, (value, _) in SFT_FACTS.items():
        monkeypatch.setenv(name, value)
    settings = sft_recipe_settings(recipe, variant, tmp_path, args=tuple(SFT_OVERRIDES), keep=set(SFT_FACTS))
    expected = {key: value for name in SFT_FACTS for key, value in SFT_FACTS[name][1].items()}
    expected |= {key: value for setting in SFT_OVERRIDES.values() for key, value in setting.items()}
    if recipe == "v2p/sft_click.sh":  # its per-GPU token budget is one longest sample
        expected["data.max_token_len_per_gpu"] = 300
    if variant == "cpu":  # the CPU switch's ranks are CPU_TRAINER_RANKS (1: verl's default, so not in the diff)
        expected["trainer.n_gpus_per_node"] = None
    assert {key: settings.get(key) for key in expected} == expected


def _write_snapshots() -> None:
    import tempfile

    SNAPSHOTS.mkdir(exist_ok=True)
    pinned = [(recipe, device, recipe_settings) for recipe in RL_RECIPES for device in DEVICES]
    pinned += [(recipe, variant, sft_recipe_settings) for recipe, variant in SFT_VARIANTS]
    for recipe, variant, settings_of in pinned:
        with tempfile.TemporaryDirectory() as tmp:
            settings = settings_of(recipe, variant, Path(tmp))
        path = _snapshot_path(recipe, variant)
        path.write_text(json.dumps(settings, indent=1) + "\n")
        print(f"{path.relative_to(REPO)}: {len(settings)} settings")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {sys.argv[0]} --write   (rewrites {SNAPSHOTS.relative_to(REPO)}/*.json)")
    _write_snapshots()
