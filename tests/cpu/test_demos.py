"""The demos (recipes/demo/run.sh for RAG-R1, recipes/funreason/demo.sh, recipes/v2p/demo.sh) refuse bad knobs before
anything runs, and the last two stop at the first failing command; recipes/_common/demo.sh (the environment, the
stage clock, run_logged and the cleanup every demo uses) sets the run's environment, times stages, shows a failing
command's log and exit code, and stops the background processes a demo started. The demos themselves run for ~20-30
minutes each: notes/lab_notebook.md, "RAG-R1 demo", "FunReason miniature" and "V2P miniature"."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from cpu_backend_helpers import REPO

FUNREASON = REPO / "recipes" / "funreason" / "demo.sh"
RAG_R1 = REPO / "recipes" / "demo" / "run.sh"
V2P = REPO / "recipes" / "v2p" / "demo.sh"
DEMO_NAMES = {FUNREASON: "funreason", RAG_R1: "rag_r1", V2P: "v2p"}


def _demo(demo, env: dict, tmp_path) -> subprocess.CompletedProcess:
    # a stand-in agentic-verl that fails loudly: a knob error must stop the demo before its first command
    stand_in = tmp_path / "agentic-verl"
    stand_in.write_text(f"#!/usr/bin/env bash\necho \"$*\" >> {tmp_path / 'calls.log'}\n"
                        "echo 'agentic-verl was called' >&2\nexit 99\n")
    stand_in.chmod(0o755)
    full = {**os.environ, "AGENTIC_VERL": str(stand_in), "OUT": str(tmp_path / "out"), **env}
    return subprocess.run(["bash", str(demo)], cwd=REPO, env=full, capture_output=True, text=True, timeout=60)


FUNREASON_BAD_KNOBS = [
    ({"SEED": "x"}, "SEED must be an integer >= 0"),
    ({"SFT_STEPS": "0"}, "SFT_STEPS must be an integer >= 1"),
    ({"ROLLOUT_N": "2.5"}, "ROLLOUT_N must be an integer >= 1"),
    ({"APIS": "24 8"}, "APIS takes 3 numbers"),
    ({"QUESTIONS": "64 0 12"}, "QUESTIONS takes integers >= 1"),
    ({"EVAL_SPLIT": "train"}, "EVAL_SPLIT must be test or dev"),
    ({"SFT_BATCH_SIZE": "8", "SFT_MICRO_BATCH_SIZE": "3"}, "multiple of SFT_MICRO_BATCH_SIZE"),
    ({"SFT_STEPS": "40", "SFT_BATCH_SIZE": "8", "QUESTIONS": "64 12 12"}, "must not exceed the 256 train questions"),
    ({"REWARD_CONFIG": "reward_fns/configs/none.yaml"}, "does not exist"),
]  # fmt: skip
V2P_BAD_KNOBS = [
    ({"SEED": "-1"}, "SEED must be an integer >= 0"),
    ({"WARMUP_STEPS": "0"}, "WARMUP_STEPS must be an integer >= 1"),
    ({"WIDGETS": "3"}, "WIDGETS takes 2 numbers"),
    ({"EVAL_SPLIT": "train"}, "EVAL_SPLIT must be test or dev"),
    ({"SFT_BATCH_SIZE": "16", "SFT_MICRO_BATCH_SIZE": "5"}, "multiple of SFT_MICRO_BATCH_SIZE"),
    ({"ROLLOUT_N": "1"}, "ROLLOUT_N must be an integer >= 2"),
    ({"REWARD_FN": "compute_score_typo"}, "REWARD_FN must be compute_score"),
]  # fmt: skip
RAG_R1_BAD_KNOBS = [
    *(({"GRPO_KL_COEF": value}, "GRPO_KL_COEF must be a non-negative number") for value in ("-1", "x", "1e", "0.1.2")),
    ({"EVAL_SPLIT": "train"}, "EVAL_SPLIT must be test or dev, got 'train'"),
    *(({"SFT_DECISION_WEIGHT": value}, f"SFT_DECISION_WEIGHT must be an integer >= 1, got '{value}'")
      for value in ("0", "1.5", "-3", "x")),
    ({"START_STAGE": "x"}, "START_STAGE must be a stage number 1-8, got 'x'"),
    ({"START_STAGE": "9"}, "START_STAGE must be a stage number 1-8, got '9'"),
    ({"ROLLOUT_N": "1"}, "ROLLOUT_N must be an integer >= 2, got '1'"),
    ({"SFT_STEPS": "08x"}, "SFT_STEPS must be an integer >= 1, got '08x'"),
]  # fmt: skip


@pytest.mark.parametrize("demo, env, message", [
    *((FUNREASON, env, message) for env, message in FUNREASON_BAD_KNOBS),
    *((V2P, env, message) for env, message in V2P_BAD_KNOBS),
    *((RAG_R1, env, message) for env, message in RAG_R1_BAD_KNOBS),
], ids=lambda value: DEMO_NAMES[value] if isinstance(value, Path) else None)  # fmt: skip
def test_demo_refuses_bad_knobs_before_running_anything(demo, env, message, tmp_path):
    proc = _demo(demo, env, tmp_path)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "agentic-verl was called" not in proc.stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize("split, dev_fraction", [("test", "0"), ("dev", "0.2")])
def test_rag_r1_demo_asks_the_toy_world_for_a_dev_split_only_to_evaluate_on_it(split, dev_fraction, tmp_path):
    proc = _demo(RAG_R1, {"EVAL_SPLIT": split}, tmp_path)
    # the stand-in agentic-verl fails its first call, the toy world's; the demo shows the command that failed
    assert proc.returncode == 99, proc.stderr
    assert "(1/8) toy world" in proc.stdout and "(2/" not in proc.stdout
    assert f"--dev-fraction {dev_fraction}" in _first_call(tmp_path), proc.stderr


@pytest.mark.parametrize("marker", [None, "test"])
def test_rag_r1_demo_refuses_to_reuse_a_test_run_for_a_dev_run(marker, tmp_path):
    # a test run's SFT trained on the questions a dev run holds out; folders without the marker are test runs
    (tmp_path / "out").mkdir()
    if marker:
        (tmp_path / "out" / "eval_split").write_text(marker + "\n")
    proc = _demo(RAG_R1, {"EVAL_SPLIT": "dev", "START_STAGE": "7"}, tmp_path)
    assert proc.returncode == 2 and "would reuse a run made with EVAL_SPLIT=test" in proc.stderr, proc.stderr
    assert "agentic-verl was called" not in proc.stderr


def test_rag_r1_demo_reuses_a_dev_run_for_a_dev_run(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "eval_split").write_text("dev\n")
    proc = _demo(RAG_R1, {"EVAL_SPLIT": "dev", "START_STAGE": "7"}, tmp_path)
    assert proc.returncode == 99 and "--dev-fraction 0.2" in _first_call(tmp_path), proc.stderr  # on to stage 1


def _first_call(tmp_path) -> str:
    return (tmp_path / "calls.log").read_text().splitlines()[0]


@pytest.mark.parametrize("demo, first_stage", [(FUNREASON, "(1/9) function-calling toy world"),
                                               (V2P, "(1/11) GUI world")])
def test_demo_stops_at_the_first_failing_command(demo, first_stage, tmp_path):
    proc = _demo(demo, {}, tmp_path)
    assert proc.returncode == 99 and first_stage in proc.stdout
    assert "(2/" not in proc.stdout


def test_common_env_names_the_runs_ray_folder_and_sets_the_threads(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("CPU_RAY_TMPDIR", "THREADS")}
    proc = _run_common('ROOT=/repo; demo_env v2p_demo; echo "$CPU_RAY_TMPDIR $OMP_NUM_THREADS ${MKL_NUM_THREADS-unset} '
                       '$HF_HUB_OFFLINE $$"; echo "$PATH"', tmp_path, {**env, "MKL_NUM_THREADS": "2"}, clear=True)
    assert proc.returncode == 0, proc.stderr
    values, path = proc.stdout.splitlines()
    ray_dir, threads, mkl, offline, pid = values.split()
    assert ray_dir == f"/tmp/ray_v2p_demo_{pid}" and threads == "2" and mkl == "unset" and offline == "1"
    assert path.startswith("/repo/.venv/bin:")


def _run_common(script: str, tmp_path, env: dict | None = None, clear: bool = False) -> subprocess.CompletedProcess:
    text = f"set -euo pipefail\nsource {REPO / 'recipes' / '_common' / 'demo.sh'}\n{script}"
    return subprocess.run(["bash", "-c", text], cwd=tmp_path, env={**({} if clear else os.environ), **(env or {})},
                          capture_output=True, text=True, timeout=60)


def test_common_stages_time_each_stage_and_cleanup_stops_the_demos_processes(tmp_path):
    # (the Ray folder comes in the environment: cleanup ends the processes whose command line names it)
    proc = _run_common("""
        mkdir -p "$CPU_RAY_TMPDIR"
        demo_begin 2
        stage 1 "first"; sleep 1
        sleep 300 & DEMO_PIDS+=("$!"); echo "pid $!"
        stage 2 "second"
        stage_end
        echo "seconds ${STAGE_SECONDS[1]} ${STAGE_SECONDS[2]}"
    """, tmp_path, {"CPU_RAY_TMPDIR": str(tmp_path / "ray")})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "(1/2) first" in lines[1] and "(2/2) second" in proc.stdout
    first, second = (int(v) for v in lines[-1].split()[1:])
    assert first >= 1 and second <= 1
    pid = int(next(line for line in lines if line.startswith("pid")).split()[1])
    for _ in range(50):  # the trap killed it on exit
        if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the demo's background process {pid} still runs")
    assert not (tmp_path / "ray").exists()


def test_common_run_logged_keeps_the_log_and_exits_with_the_commands_code(tmp_path):
    proc = _run_common(f"""
        demo_begin 1
        run_logged {tmp_path / 'ok.log'} grep --line-buffered shown -- bash -c 'echo shown; echo hidden'
        run_logged {tmp_path / 'bad.log'} cat -- bash -c 'echo step one; exit 7'
        echo "not reached"
    """, tmp_path)
    assert proc.returncode == 7 and "not reached" not in proc.stdout
    assert "shown" in proc.stdout and "hidden" not in proc.stdout
    assert (tmp_path / "ok.log").read_text() == "shown\nhidden\n"
    assert "FAILED (exit 7)" in proc.stdout
    assert proc.stdout.splitlines().count("step one") == 2  # the filter's line, then the log's tail


def test_common_run_logged_survives_a_recipe_whose_exit_trap_ends_its_descendants(tmp_path):
    # Every recipe's shell traps EXIT with kill_descendants $$ (recipes/_common/proc.sh). With `cmd > >(tee ...)` the
    # tee was the recipe's child: the trap killed it and the trap's next line died of a broken pipe (the demo's
    # GRPO stage exited 1 after a finished run, its last lines lost).
    recipe = tmp_path / "recipe.sh"
    recipe.write_text(f"""set -euo pipefail
source {REPO / 'recipes' / '_common' / 'proc.sh'}
trap 'kill_descendants $$; echo cleanup report' EXIT
echo trained
""")
    proc = _run_common(f"""
        demo_begin 1
        run_logged {tmp_path / 'run.log'} cat -- bash {recipe}
        echo "after the stage"
    """, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "run.log").read_text() == "trained\ncleanup report\n"
    assert "after the stage" in proc.stdout


def test_funreason_summary_puts_grpos_start_right_before_it():
    """`demo seeds` reports the last stage's gain over the stage before it: for the FunReason demo that must be the
    SRML SFT model GRPO starts from, not the plain SFT run beside it (the paper's comparison)."""
    script = FUNREASON.read_text()
    grpo_model = re.search(r'demo_grpo recipes/funreason/grpo_ast.sh "\$(\w+)"', script).group(1)
    evaluated = dict(re.findall(r'^evaluate \S+ "([^"]+)" "\$(\w+)"$', script, flags=re.M))
    start_label = next(label for label, model in evaluated.items() if model == grpo_model)
    summary_stages = re.findall(r'--stage "([^"=]+)=', script)
    assert summary_stages[-1] == "after GRPO"
    assert summary_stages[-2] == start_label == "after SRML SFT", summary_stages


_RECORDER = '#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$RECORD_FILE"\n'


def _recorded_stage(call: str, tmp_path) -> tuple[subprocess.CompletedProcess, list[str], str, list[str]]:
    """`call` (a demo_sft / demo_grpo line) on a real stage launcher whose trainer is a stand-in `python3`/`torchrun`
    that records its command line: (the run, the launcher's arguments before `-m`, the trainer's module, the Hydra
    arguments after it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python3", "torchrun"):
        (bin_dir / name).write_text(_RECORDER)
        (bin_dir / name).chmod(0o755)
    record = tmp_path / "argv.txt"
    env = {**os.environ, "PATH": f"{bin_dir}:{REPO / '.venv' / 'bin'}:{os.environ['PATH']}", "PREFLIGHT": "0",
           "RECORD_FILE": str(record), "CPU_RAY_TMPDIR": str(tmp_path / "ray")}
    for name in ("MODEL_PATH", "TRAIN_FILE", "VAL_FILE", "DATA_DIR", "SFT_CHECKPOINT_DIR", "ENGINE"):
        env.pop(name, None)
    proc = _run_common(f"""OUT={tmp_path / 'out'} SEED=3 SFT_BATCH_SIZE=6 SFT_MICRO_BATCH_SIZE=3
        GRPO_STEPS=5 GRPO_BATCH_SIZE=6 ROLLOUT_N=3 GRPO_LR=1e-5 MAX_RESPONSE_LENGTH=40
        cd {REPO}; mkdir -p "$OUT/logs"; demo_begin 1
        {call}""", tmp_path, env)
    argv = record.read_text().splitlines()
    at = argv.index("-m")
    return proc, argv[:at], argv[at + 1], argv[at + 2:]


def test_demo_grpo_passes_the_demos_sizes_to_the_stage_launcher(tmp_path):
    from test_recipes import _compose

    proc, _, module, launch = _recorded_stage(
        'TRAIN_FILE=/data/rl.parquet demo_grpo recipes/funreason/grpo_ast.sh /models/sft critic/score/mean '
        'actor_rollout_ref.actor.use_kl_loss=True', tmp_path)
    # the stand-in trains nothing: the demo stops there, and says so
    assert proc.returncode == 2 and "saved no model at" in proc.stderr, proc.stdout + proc.stderr
    config = _compose("ppo_trainer", launch)
    actor, rollout = config.actor_rollout_ref.actor, config.actor_rollout_ref.rollout
    assert module == "verl.trainer.main_ppo" and config.trainer.device == "cpu"
    assert (config.actor_rollout_ref.model.path, config.data.train_files) == ("/models/sft", "/data/rl.parquet")
    assert (config.data.train_batch_size, actor.ppo_mini_batch_size, rollout.n) == (6, 6, 3)
    assert (actor.optim.lr, config.data.max_response_length, config.trainer.total_training_steps) == (1e-5, 40, 5)
    assert (config.trainer.save_freq, rollout.seed, config.trainer.default_local_dir) == (5, 3, f"{tmp_path}/out/ckpt/grpo")
    assert config.algorithm.rollout_correction.bypass_mode and list(config.trainer.logger) == ["console", "file"]
    assert actor.use_kl_loss  # the caller's override comes last and wins over demo_grpo's use_kl_loss=False


def test_demo_sft_passes_the_demos_sizes_to_the_stage_launcher(tmp_path):
    from test_recipe_configs import compose_sft_launch

    proc, torchrun, module, launch = _recorded_stage(
        'demo_sft sft_srml recipes/funreason/sft_srml.sh /models/base /data/sft.parquet 7 3e-4 train/loss '
        'data.max_length=1024 trainer.logger=[console]', tmp_path)
    assert proc.returncode == 2 and "saved no model at" in proc.stderr, proc.stdout + proc.stderr
    assert "--nproc_per_node=1" in torchrun  # one CPU rank (CPU_TRAINER_RANKS), as trainer.n_gpus_per_node says
    config = compose_sft_launch(module, launch)
    assert (config.model.path, config.data.train_files, config.data.val_files) == ("/models/base", "/data/sft.parquet",
                                                                                   None)
    assert (config.data.train_batch_size, config.data.micro_batch_size_per_gpu, config.data.max_length) == (6, 3, 1024)
    assert (config.optim.lr, config.trainer.total_training_steps) == (3e-4, 7)
    assert config.trainer.default_local_dir == f"{tmp_path}/out/ckpt/sft_srml" and config.trainer.device == "cpu"
    assert list(config.trainer.logger) == ["console"]  # the caller's override wins
