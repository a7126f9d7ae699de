"""The main venv's side of the generator: runs `venv_main` in `.venv-bfcl`, where bfcl-eval and its simulators
live (its pinned dependencies cannot share the main venv), and reads its JSON lines.

The venv is `agentic_verl.bfcl_env.venv`'s (`.venv-bfcl` at the repository root or `$BFCL_OFFICIAL_VENV`; `make
bfcl-venv` creates it), the one the BFCL environment server runs in. The child gets only this package on its path
(`venv.package_only_path`), `TZ=UTC` (TradingBot stamps transactions with local time) and a fixed hash seed, so its
output is the same bytes on every machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

from agentic_verl.bfcl_env.venv import package_only_path, require_python

MODULE = "agentic_verl.data.bfcl_multi_turn.venv_main"


def run_venv(args: list[str], payload: str = "", timeout_s: float = 3600.0) -> list[dict]:
    """`python -m venv_main ARGS` in the venv, `payload` on stdin; its stdout's JSON lines."""
    python = require_python()  # FileNotFoundError naming `make bfcl-venv` when there is none
    with tempfile.TemporaryDirectory(prefix="bfcl_mt_") as folder:
        env = {**os.environ, **package_only_path(folder), "TZ": "UTC", "PYTHONHASHSEED": "0",
               "PYTHONIOENCODING": "utf-8"}
        done = subprocess.run([str(python), "-m", MODULE, *args], input=payload, capture_output=True, text=True,
                              env=env, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the generator in {python.parents[1]} failed (exit code {done.returncode}): "
                           f"{done.stderr.strip()[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def generate(seed: int, start: int, count: int, kinds: list[str],
             classes: list[str] | None = None) -> tuple[list[dict], list[dict], dict]:
    """(tasks, dropped indices with their reasons, rejection counts) for task indices start..start+count-1, on
    `classes` (default: all)."""
    lines = run_venv(["generate", "--seed", str(seed), "--start", str(start), "--count", str(count), "--kinds",
                      ",".join(kinds), "--classes", ",".join(classes or [])])
    tasks = [line["task"] for line in lines if "task" in line]
    dropped = [line for line in lines if "dropped" in line]
    stats = next((line["stats"] for line in lines if "stats" in line), None)
    if stats is None or len(tasks) + len(dropped) != count:
        raise RuntimeError(f"the generator answered {len(tasks)} tasks and {len(dropped)} dropped indices for {count} "
                           "indices, without its closing stats line")
    return tasks, dropped, stats
