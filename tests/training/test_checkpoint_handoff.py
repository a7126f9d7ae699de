"""The SFT -> RL handoff (recipes/_common/sft_handoff.sh -> agentic_verl/training/checkpoints.py) finds the HF weights
in checkpoints laid out by verl's own checkpoint code: FSDPCheckpointManager's save on a CPU, and the Megatron
manager's path helpers and manifest writer compiled from verl's source (tests/training/checkpoint_layouts.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from checkpoint_layouts import save_fsdp_checkpoint, save_megatron_checkpoint

from agentic_verl.training.checkpoints import hf_weights_dir, megatron_hf_subdir

REPO = Path(__file__).resolve().parents[2]
HANDOFF = REPO / "recipes" / "_common" / "sft_handoff.sh"
# the recipes that start from an earlier stage's checkpoint, and the variable naming its folder
HANDOFF_RECIPES = {"_common/rag_r1.sh": "SFT_CHECKPOINT_DIR", "funreason/grpo_ast.sh": "SFT_CHECKPOINT_DIR",
                   "funreason_mt/grpo.sh": "SFT_CHECKPOINT_DIR", "v2p/sft_full.sh": "WARMUP_DIR"}


@pytest.fixture(scope="module")
def fsdp_checkpoint(tmp_path_factory) -> Path:
    checkpoint_dir = tmp_path_factory.mktemp("fsdp_ckpt")
    save_fsdp_checkpoint(checkpoint_dir, step=3)
    return checkpoint_dir


@pytest.fixture
def megatron_checkpoint(tmp_path) -> tuple[Path, Path]:
    return tmp_path, save_megatron_checkpoint(tmp_path, step=3)


def recipe_handoff(checkpoint_dir: Path) -> subprocess.CompletedProcess:
    """The recipes' `stage_model_path DIR HINT` in bash, with the trainer's python3 first on PATH."""
    script = f'source "{HANDOFF}"; stage_model_path "$1" "the hint"; printf "MODEL_PATH=%s\\n" "$MODEL_PATH"'
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("MODEL_PATH", None)
    return subprocess.run(["bash", "-c", script, "handoff", str(checkpoint_dir)], capture_output=True, text=True,
                          env=env, timeout=120)


def test_megatron_layout_is_verls_v2_layout():
    # read from verl's megatron_utils (layout schema v2), the folder the Megatron checkpoint builder also uses
    assert megatron_hf_subdir() == "model/huggingface"


def test_handoff_finds_fsdp_weights(fsdp_checkpoint):
    expected = fsdp_checkpoint / "global_step_3" / "huggingface"
    assert (expected / "model.safetensors").is_file()  # where verl's FSDP manager put them
    assert hf_weights_dir(fsdp_checkpoint) == expected
    proc = recipe_handoff(fsdp_checkpoint)
    assert proc.returncode == 0, proc.stderr
    assert f"MODEL_PATH={expected}" in proc.stdout.splitlines()


@pytest.mark.parametrize("manifest", [True, False], ids=["with_manifest", "layout_only"])
def test_handoff_finds_megatron_weights(tmp_path, manifest):
    hf_dir = save_megatron_checkpoint(tmp_path, step=3, manifest=manifest)
    assert hf_dir == tmp_path / "global_step_3" / "model" / "huggingface"
    assert (tmp_path / "global_step_3" / "ckpt_contents.json").is_file() == manifest
    assert hf_weights_dir(tmp_path) == hf_dir
    proc = recipe_handoff(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"MODEL_PATH={hf_dir}" in proc.stdout.splitlines()


def test_manifest_entry_wins_over_layouts(megatron_checkpoint):
    # verl's manifest names the HF folder of a finished save; a stray FSDP-style folder beside it is not used
    checkpoint_dir, hf_dir = megatron_checkpoint
    stray = checkpoint_dir / "global_step_3" / "huggingface"
    stray.mkdir()
    (stray / "model.safetensors").write_bytes(b"")
    assert hf_weights_dir(checkpoint_dir) == hf_dir


@pytest.mark.parametrize("case", ["no_tracker", "no_weights", "tracker_names_missing_step"])
def test_handoff_refuses_without_weights(tmp_path, case):
    if case != "no_tracker":
        (tmp_path / "latest_checkpointed_iteration.txt").write_text("7" if case == "tracker_names_missing_step"
                                                                      else "3")
    if case == "no_weights":
        (tmp_path / "global_step_3" / "model" / "huggingface").mkdir(parents=True)  # config only, no weights
        (tmp_path / "global_step_3" / "model" / "huggingface" / "config.json").write_text("{}")
    assert hf_weights_dir(tmp_path) is None
    proc = recipe_handoff(tmp_path)
    assert proc.returncode == 2
    assert f"{tmp_path} holds no SFT checkpoint with HF weights" in proc.stderr
    assert "global_step_N/model/huggingface" in proc.stderr
    assert proc.stderr.rstrip().endswith("the hint")


@pytest.mark.parametrize("recipe, folder_var", HANDOFF_RECIPES.items())
def test_recipes_use_the_handoff(recipe, folder_var):
    # every recipe that starts from a stage's checkpoint goes through the engine-aware lookup, none by a fixed path
    text = (REPO / "recipes" / recipe).read_text()
    # sft_handoff.sh directly, or through recipes/_common/launch.sh, which sources it for every stage
    assert ("sft_handoff.sh" in text or "_common/launch.sh" in text) and f'stage_model_path "${folder_var}"' in text
    assert "global_step_$STEP/huggingface" not in text


def test_rl_actor_weights_found_under_the_role(tmp_path):
    # main_ppo saves each role under global_step_N/<role>; the Megatron actor's HF folder is actor/model/huggingface
    save_megatron_checkpoint(tmp_path, step=3, manifest=False)
    actor = tmp_path / "global_step_5" / "actor"
    actor.parent.mkdir()
    (tmp_path / "global_step_3").rename(actor)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("5")
    assert hf_weights_dir(tmp_path, "actor") == actor / "model" / "huggingface"
    assert hf_weights_dir(tmp_path) is None  # the step's root holds no weights
    proc = subprocess.run([sys.executable, "-m", "agentic_verl.training.checkpoints", "hf-dir", str(tmp_path), "actor"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == str(actor / "model" / "huggingface"), proc.stderr
