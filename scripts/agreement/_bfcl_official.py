"""Drive BFCL's official checker (bfcl-eval) from the main venv, through `.venv-bfcl` and a JSONL runner.

`.venv-bfcl` (bfcl-eval with just what the decoder and checkers import) is made by `ensure_venv()`
(agentic_verl.bfcl_env.venv, also `make bfcl-venv`): bfcl-eval's full dependency set cannot live in the main venv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentic_verl.bfcl_env.venv import available, ensure_venv, venv_dir, venv_python  # noqa: F401 (re-exported)

RUNNER = Path(__file__).resolve().parent / "_bfcl_official_runner.py"


def official_verdicts(cases: list[dict]) -> list[dict]:
    """{"valid", "error_type", "crashed"} per case from the official decoder + checker."""
    python = ensure_venv()
    payload = "".join(json.dumps(case) + "\n" for case in cases)
    done = subprocess.run([str(python), str(RUNNER)], input=payload, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise RuntimeError(f"official runner failed with exit code {done.returncode}")
    verdicts = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if len(verdicts) != len(cases):
        raise RuntimeError(f"official runner returned {len(verdicts)} verdicts for {len(cases)} cases")
    return verdicts


def throughput(cases: list[dict], rounds: int = 5) -> dict:
    """Samples/s of decode + check over `cases`, ours and the official, per wall-clock and per CPU second, both
    timed in the runner's process, alternating, so both see the same machine load: `{"first_pass": rates,
    "samples_per_s": rates (best of `rounds` further passes), "n", "rounds"}`, rates keyed `official_wall`,
    `official_cpu`, `ours_wall`, `ours_cpu`."""
    python = ensure_venv()
    payload = "".join(json.dumps(case) + "\n" for case in cases)
    done = subprocess.run([str(python), str(RUNNER), "--bench", str(rounds)], input=payload, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def _run(args: list[str], payload: str = "") -> str:
    python = ensure_venv()
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(venv_dir() / "bfcl_project")}  # bfcl_eval makes folders there on import
    done = subprocess.run([str(python), str(RUNNER), *args], input=payload, capture_output=True, text=True,
                          check=False, env=env)  # fmt: skip
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise RuntimeError(f"official runner {args[:1]} failed with exit code {done.returncode}")
    return done.stdout.strip().splitlines()[-1]


def official_category_scores(results: list[dict]) -> dict[str, dict]:
    """{category: {"correct", "total", "accuracy"}} by the official checker for outputs
    `[{"id", "category", "result"}]` (the questions and answers read by bfcl_eval's own loaders)."""
    return json.loads(_run(["--score"], "".join(json.dumps(r) + "\n" for r in results)))


def official_messages(categories: list[str], limit: int) -> dict[str, list[dict]]:
    """{question id: BFCL's chat messages} for the first `limit` questions of each category."""
    return {e["id"]: e["messages"] for e in official_prompts(categories, limit)}


def official_prompts(categories: list[str], limit: int) -> list[dict]:
    """[{"id", "messages"} (+ "added": {turn: the user message that adds withheld functions}, multi-turn)]."""
    return json.loads(_run(["--prompts", str(limit), *categories]))


SCORER = Path(__file__).resolve().parent / "_bfcl_official_scorer.py"


def official_scorer(result_dir, score_dir) -> dict[str, dict[str, dict]]:
    """bfcl-eval's own scorer (`bfcl evaluate ... --partial-eval`, _bfcl_official_scorer.py) on the result files
    under `result_dir` (bfcl-eval's layout); writes its score files under `score_dir`; returns {model folder:
    {category: {"accuracy", "total_count"}}}."""
    python = ensure_venv()
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(venv_dir() / "bfcl_project")}
    done = subprocess.run([str(python), str(SCORER), str(result_dir), str(score_dir)], capture_output=True, text=True,
                          check=False, env=env)  # fmt: skip
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-4000:])
        raise RuntimeError(f"bfcl-eval's scorer failed with exit code {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])
