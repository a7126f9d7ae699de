"""Drive BFCL's official checker (bfcl-eval) from the main venv, through `.venv-bfcl` and a JSONL runner.

bfcl-eval's full dependency set pins numpy 1.26 and pulls every model vendor's SDK, so it cannot live in the
main venv. `ensure_venv()` creates `.venv-bfcl` (repo root, git-ignored) on first use with just what the
decoder and the AST checker import: bfcl-eval itself (--no-deps), tree-sitter and its Java/JavaScript grammars
(BFCL parses Java/JavaScript outputs with them), tenacity and filelock. `make bfcl-venv` does the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("BFCL_OFFICIAL_VENV", ROOT / ".venv-bfcl"))
RUNNER = Path(__file__).resolve().parent / "_bfcl_official_runner.py"
PACKAGES = ["bfcl-eval==2026.3.23", "tree_sitter==0.21.3", "tree-sitter-java==0.21.0",
            "tree-sitter-javascript==0.21.4", "tenacity>=8.5", "filelock==3.20.0"]  # fmt: skip


def venv_python() -> Path:
    return VENV / "bin" / "python"


def available() -> bool:
    return venv_python().exists()


def ensure_venv(quiet: bool = True) -> Path:
    """Create `.venv-bfcl` if missing (needs PyPI once); returns its python."""
    python = venv_python()
    if python.exists():
        return python
    base = os.environ.get("PYTHON", "python3")
    subprocess.run([base, "-m", "venv", str(VENV)], check=True)
    pip = [str(python), "-m", "pip", "--disable-pip-version-check"] + (["-q"] if quiet else [])
    subprocess.run([*pip, "install", "--no-deps", *PACKAGES], check=True)
    return python


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
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(VENV / "bfcl_project")}  # bfcl_eval makes folders there on import
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
    return {e["id"]: e["messages"] for e in json.loads(_run(["--prompts", str(limit), *categories]))}
