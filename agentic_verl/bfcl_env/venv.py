"""`.venv-bfcl`: the virtual environment where bfcl-eval runs (the official checker, the BFCL environment server).

bfcl-eval's full dependency set pins numpy 1.26 and pulls every model vendor's SDK, so it cannot live in the main
venv. `ensure_venv()` creates `.venv-bfcl` (repo root, git-ignored; `BFCL_OFFICIAL_VENV` names another folder) with
just what our uses import: bfcl-eval itself (--no-deps); tree-sitter and its Java/JavaScript grammars (BFCL parses
Java/JavaScript outputs with them), tenacity and filelock (the decoder and the AST checker); mpmath (the multi-turn
`MathAPI` simulator). `make bfcl-venv` runs it. A venv made for another package list (an older checkout's) gets the
missing ones installed: the list is kept in the venv's `agentic_verl_packages.txt`. `package_only_path(folder)` is the
environment of a child process in the venv (the environment server, the task generator) that sees only this package.

Standard library only.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

VENV_ENV = "BFCL_OFFICIAL_VENV"
PACKAGES = ["bfcl-eval==2026.3.23", "tree_sitter==0.21.3", "tree-sitter-java==0.21.0",
            "tree-sitter-javascript==0.21.4", "tenacity>=8.5", "filelock==3.20.0", "mpmath==1.3.0"]  # fmt: skip
_STAMP = "agentic_verl_packages.txt"
MAKE_TARGET = "make bfcl-venv"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # agentic_verl/


def venv_dir() -> Path:
    """`$BFCL_OFFICIAL_VENV`, else `.venv-bfcl` beside the `agentic_verl` package folder (the repository root of
    a checkout)."""
    configured = os.environ.get(VENV_ENV, "").strip()
    return Path(configured) if configured else Path(__file__).resolve().parents[2] / ".venv-bfcl"


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def available() -> bool:
    return venv_python().exists()


def require_python() -> Path:
    """The venv's python; FileNotFoundError that names `make bfcl-venv` when the venv does not exist."""
    python = venv_python()
    if not python.exists():
        raise FileNotFoundError(f"no bfcl-eval venv at {venv_dir()} (its python {python} is missing); create it "
                                f"with `{MAKE_TARGET}` (needs PyPI once), or name another with {VENV_ENV}")
    return python


def package_only_path(folder: str | Path) -> dict[str, str]:
    """The environment variables that give a child in the venv only this package: `folder` (a temporary folder)
    gets a link to it and is the child's whole PYTHONPATH (the main venv's site-packages would put its numpy,
    pydantic, ... ahead of the venv's own), and bfcl-eval writes its result/score folders there if it ever does."""
    os.symlink(PACKAGE_DIR, Path(folder) / "agentic_verl")
    return {"PYTHONPATH": str(folder), "BFCL_PROJECT_ROOT": str(folder)}


def ensure_venv(quiet: bool = True) -> Path:
    """Create the venv if missing, or install what PACKAGES adds to it (needs PyPI once); returns its python."""
    python, stamp = venv_python(), venv_dir() / _STAMP
    wanted = "\n".join(PACKAGES) + "\n"
    if python.exists() and stamp.is_file() and stamp.read_text() == wanted:
        return python
    if not python.exists():
        subprocess.run([os.environ.get("PYTHON", "python3"), "-m", "venv", str(venv_dir())], check=True)
    pip = [str(python), "-m", "pip", "--disable-pip-version-check"] + (["-q"] if quiet else [])
    subprocess.run([*pip, "install", "--no-deps", *PACKAGES], check=True)
    stamp.write_text(wanted)
    return python
