"""Run a recipe end to end on CPU (the real `python -m verl.trainer.main_ppo` with Ray) and read back what it
logged: verl's file-logger metrics per step and the hf rollout server's weight-sync records."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

# Two worked examples of the protocol before the question make SmolLM2-135M-Instruct search and then answer
# (transformers, temperature 1: "<search> Japan </search>" ... "<answer> Tokyo </answer>", sometimes a wrong
# query or answer); without them it never searches. Mixed outcomes within a group give GRPO non-zero advantages
# under the plain exact-match reward, so the actor moves every step.
FEW_SHOT = [
    {"role": "user", "content": "Who painted the Mona Lisa?"},
    {"role": "assistant", "content": "<search> Mona Lisa </search>\n<information>\nDoc 1: Mona Lisa\nThe Mona Lisa "
                                     "is a portrait painted by Leonardo da Vinci.\n</information>\n"
                                     "<answer> Leonardo da Vinci </answer>"},
    {"role": "user", "content": "Where is the Eiffel Tower?"},
    {"role": "assistant", "content": "<search> Eiffel Tower </search>\n<information>\nDoc 1: Eiffel Tower\nThe Eiffel "
                                     "Tower is a wrought-iron tower in Paris.\n</information>\n<answer> Paris </answer>"},
]
# The tiny random model learns visibly at this rate; both the synced run and the negative control use it.
ACTOR_LR = "5e-3"


def weights_in_sync(step_metrics: dict) -> bool:
    """verl's comparison of the rollout's log-probs with the trainer's on the same tokens. Equal weights (fp32 on
    both sides): SmolLM2 max probability gap 3e-5, Pearson 0.9999999-1.0, k3-KL 0; the tiny random model
    (probabilities ~1e-5 over 151k tokens, where vLLM's CPU kernels and torch differ by a few percent relative)
    gap 5e-7, Pearson 1.0, k3-KL 1.3e-3. A rollout that kept its old weights while the actor moved (tiny model,
    step 2): Pearson 0.55, k3-KL 0.012."""
    return (step_metrics["training/rollout_probs_diff_valid"] == 1.0
            and step_metrics["training/rollout_probs_diff_max"] < 1e-3
            and step_metrics["training/rollout_actor_probs_pearson_corr"] > 0.999
            and step_metrics["rollout_corr/k3_kl"] < 5e-3)


def ratio_at_one(step_metrics: dict) -> bool:
    """In verl's bypass mode (`algorithm.rollout_correction.bypass_mode=True`) the rollout's log-probs are the old
    policy's and verl logs no rollout/trainer comparison; with one mini-batch and one epoch per step the update's PPO
    ratio (trainer over rollout, before any weight moves) is that comparison instead. Measured with SmolLM2 in fp32:
    `actor/ppo_kl` 1.9-2.4e-6 (the FunReason demo's GRPO steps) and 1.5-1.7e-5 (the multi-turn BFCL test's), no
    clipped token. Whether a rollout a step behind the trainer fails this depends on how far one step moves the
    weights: the weight-sync negative control (test_e2e_vllm.py) is the test for that, with verl's own comparison."""
    return abs(step_metrics["actor/ppo_kl"]) < 1e-3 and step_metrics["actor/pg_clipfrac"] == 0.0


@dataclass
class RecipeRun:
    returncode: int
    seconds: float
    log: str
    metrics: list[dict]  # one dict per training step (verl's FileLogger lines, step order)
    syncs: list[dict]  # one record per weight sync (initial load first)
    leftovers: list[str]  # processes and /dev/shm segments the run left behind (should be none)

    def tail(self, n: int = 6000) -> str:
        return self.log[-n:]


# Four short QA conversations: the SFT runs' training data (tests/cpu/test_sft.py, tests/gpu)
SFT_CONVERSATIONS = [
    ("Who wrote Hamlet?", "<answer> William Shakespeare </answer>"),
    ("What is the capital of Japan?", "<answer> Tokyo </answer>"),
    ("Who developed the theory of relativity?", "<answer> Albert Einstein </answer>"),
    ("In which city was Mozart born?", "<answer> Salzburg </answer>"),
]


def pretokenized_sft_parquet(path: Path, model_dir: Path) -> Path:
    """SFT_CONVERSATIONS as the recipes' default SFT dataset (PretokenizedSFTDataset): input_ids + loss_mask, the
    answer (and the end of turn) trained on, the prompt not."""
    import pandas as pd
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = []
    for question, answer in SFT_CONVERSATIONS:
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                               tokenize=False)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        answer_ids = tokenizer(answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        rows.append({"input_ids": prompt_ids + answer_ids, "loss_mask": [0] * len(prompt_ids) + [1] * len(answer_ids)})
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def write_rag_r1_data(out_dir: Path, n: int = 4) -> tuple[Path, Path]:
    """rag_r1 parquet for questions the tests' tiny corpus answers (tests/retrieval/conftest.py)."""
    from agentic_verl.data.rag_r1_parquet import to_rows, write_parquet

    records = [
        {"id": "q1", "question": "Who wrote Hamlet?", "golden_answers": ["William Shakespeare"]},
        {"id": "q2", "question": "What is the capital of Japan?", "golden_answers": ["Tokyo"]},
        {"id": "q3", "question": "Who developed the theory of relativity?", "golden_answers": ["Albert Einstein"]},
        {"id": "q4", "question": "In which city was Mozart born?", "golden_answers": ["Salzburg"]},
    ][:n]
    train = write_parquet(to_rows(records, "train", "toy_qa", mode="sq"), out_dir / "train.parquet")
    test = write_parquet(to_rows(records[:2], "test", "toy_qa", mode="sq"), out_dir / "test.parquet")
    return train, test


def step_logged(metrics_path: Path, step: int) -> bool:
    """Whether verl's file logger has written training step `step`'s metrics to `metrics_path` (a line still being
    written is not read)."""
    lines = metrics_path.read_text().splitlines() if metrics_path.exists() else []
    return any(json.loads(line)["data"].get("training/global_step") == step for line in lines if line.endswith("}"))


def run_in_own_process_group(command: list[str], env: dict[str, str], log_path: Path, timeout_s: int,
                             terminate_when=None) -> int:
    """Run `command` from the repository root as its own process group, output to `log_path`; past `timeout_s`
    (a failed weight receiver hangs verl's sender forever) the whole group is killed. With `terminate_when` (a
    function polled every 0.5 s), SIGTERM goes to the command's own process once it returns True, as `kill PID`
    (a scheduler, a closed terminal) does. Returns the exit code."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        deadline = time.monotonic() + timeout_s
        try:
            while terminate_when is not None and proc.poll() is None and time.monotonic() < deadline:
                if terminate_when():
                    log.write("\n[test harness] SIGTERM to the recipe's shell\n")
                    log.flush()
                    proc.send_signal(signal.SIGTERM)
                    break
                time.sleep(0.5)
            return proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            returncode = proc.wait()
            log.write(f"\n[test harness] killed after {timeout_s} s\n")
            return returncode


def run_recipe(recipe: str, work: Path, env: dict[str, str], overrides: list[str], timeout_s: int = 900,
               sigterm_after_step: int | None = None) -> RecipeRun:
    """`AGENTIC_VERL_DEVICE=cpu bash recipes/<recipe> <overrides>` with logs, Ray and checkpoints under `work`: `env`
    holds the machine facts (MODEL_PATH, TRAIN_FILE, ...: recipes/_common/machine.sh), `overrides` every setting (Hydra
    overrides, after run_recipe's own plumbing settings, so they win). The CPU switch logs to console and file.
    `AGENTIC_VERL_TEST_TRAINER_MODE=colocate_async` runs it in that verl trainer mode (docs/async.md; opt-in, not
    in make test).

    The run is its own process group: past `timeout_s` (a failed weight receiver hangs verl's sender forever) the
    whole group is killed. `sigterm_after_step`: SIGTERM to the recipe's shell as soon as verl has logged that
    step's metrics (the next step is under way). Afterwards `leftovers` lists what the recipe left behind (its exit
    trap should leave nothing, however it ended): processes naming its Ray folder and orphaned /dev/shm segments;
    they are then removed anyway."""
    from agentic_verl.cpu.cleanup import (
        cleanup_after_run,
        mapped_segments,
        processes_mentioning,
        shm_segments,
        write_snapshot,
    )

    work.mkdir(parents=True, exist_ok=True)
    ray_dir = tempfile.mkdtemp(prefix="avray", dir="/tmp")  # Ray's socket paths must fit in 107 bytes
    metrics_path, sync_path = work / "metrics.jsonl", work / "weight_sync.jsonl"
    shm_snapshot = work / "shm_before.txt"
    write_snapshot(shm_snapshot)
    full_env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AGENTIC_VERL_DEVICE": "cpu",
        "VERL_FILE_LOGGER_PATH": str(metrics_path),
        "AGENTIC_VERL_WEIGHT_SYNC_LOG": str(sync_path),
        "CPU_RAY_TMPDIR": ray_dir,
        **env,
    }
    common = [
        "trainer.val_before_train=False",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
        f"trainer.default_local_dir={work / 'checkpoints'}",
        f"actor_rollout_ref.actor.optim.lr={ACTOR_LR}",
        "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0",  # ppo.sh warms up: lr would be ~0 for 2 steps
        "critic.optim.lr_warmup_steps_ratio=0",
    ]
    if os.environ.get("AGENTIC_VERL_TEST_TRAINER_MODE"):  # opt-in: the same runs in verl's asynchronous modes
        common.append(f"trainer.v1.trainer_mode={os.environ['AGENTIC_VERL_TEST_TRAINER_MODE']}")
    start = time.monotonic()
    log_path = work / "run.log"
    after_step = (lambda: step_logged(metrics_path, sigterm_after_step)) if sigterm_after_step else None
    returncode = run_in_own_process_group(["bash", str(REPO / "recipes" / recipe), *common, *overrides], full_env,
                                          log_path, timeout_s, terminate_when=after_step)
    seconds = time.monotonic() - start
    before = set(shm_snapshot.read_text().split())
    leftovers = [f"process {pid}" for pid in processes_mentioning(ray_dir)]
    leftovers += [f"/dev/shm/{name}" for name in sorted(shm_segments() - before - mapped_segments())]
    cleanup_after_run(ray_dir=ray_dir, shm_snapshot=shm_snapshot)
    shutil.rmtree(ray_dir, ignore_errors=True)
    metrics = [json.loads(line)["data"] for line in metrics_path.read_text().splitlines()] if metrics_path.exists() else []
    syncs = [json.loads(line) for line in sync_path.read_text().splitlines()] if sync_path.exists() else []
    return RecipeRun(returncode, seconds, log_path.read_text(errors="replace"), metrics, syncs, leftovers)
