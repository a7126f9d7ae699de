"""`make gpu-wheelhouse` downloads what `make install-gpu` installs, and `install-gpu GPU_WHEELHOUSE=DIR` installs
from DIR only (docs/gpu_cluster.md, "A GPU machine without network"). Read from make's own dry run (`make -n`), so the
Makefile's real commands are checked; the wheelhouse itself (several GB of CUDA wheels) is not downloaded here:
tests/test_install_resolution.py resolves the same GPU stack against PyPI in every `make test`."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _make(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=check)


def _pip_commands(dry_run: str, verb: str) -> list[list[str]]:
    """The `pip VERB ...` command lines of a `make -n` output, each split as the shell would."""
    commands = []
    for line in dry_run.splitlines():
        words = shlex.split(line) if " pip " in f" {line} " or "/pip " in line else []
        if verb in words:
            commands.append(words[words.index(verb) + 1:])
    return commands


def _requirements(args: list[str]) -> set[str]:
    """The requirement specifiers among pip's arguments (an editable `-e SPEC` is one; a folder after --dest or
    --find-links is not)."""
    found, words = set(), iter(args)
    for arg in words:
        if arg in ("--dest", "--find-links"):
            next(words)
        elif not arg.startswith("-"):
            found.add(arg)
    return found


def test_the_wheelhouse_holds_everything_install_gpu_installs(tmp_path):
    house = tmp_path / "house"
    downloads = _pip_commands(_make("-n", "gpu-wheelhouse", f"GPU_WHEELHOUSE={house}").stdout, "download")
    installs = _pip_commands(_make("-n", "-B", "install-gpu", f"GPU_WHEELHOUSE={house}",
                                   f"GPU_VENV={tmp_path / 'venv'}").stdout, "install")
    assert len(downloads) == 2 and len(installs) == 3, (downloads, installs)
    for args in installs:  # offline: only the wheelhouse
        assert args[:3] == ["--no-index", "--find-links", str(house)], args
    downloaded = set().union(*(_requirements(args) for args in downloads))
    installed = set().union(*(_requirements(args) for args in installs))
    assert installed <= downloaded, installed - downloaded
    assert {"setuptools>=77", ".[dev,gpu]", "pip", "wheel"} <= downloaded  # the offline builds need setuptools
    # what install-gpu takes without dependencies is downloaded without them (their pins would pull others)
    no_deps = [_requirements(args) for args in installs if "--no-deps" in args]
    assert no_deps and all(any(reqs <= _requirements(args) and "--no-deps" in args for args in downloads)
                           for reqs in no_deps)


def test_install_gpu_without_a_wheelhouse_uses_the_index(tmp_path):
    installs = _pip_commands(_make("-n", "-B", "install-gpu", f"GPU_VENV={tmp_path / 'venv'}").stdout, "install")
    assert len(installs) == 3 and not any("--no-index" in args for args in installs), installs


def test_install_gpu_refuses_a_wheelhouse_for_another_python(tmp_path):
    """pip would only say that no wheel matches; the Makefile says why, before it creates anything."""
    house = tmp_path / "house"
    house.mkdir()
    (house / "PYTHON_VERSION").write_text("2.7\n")
    venv = tmp_path / "venv"
    proc = _make("-B", "install-gpu", f"GPU_WHEELHOUSE={house}", f"GPU_VENV={venv}", check=False)
    assert proc.returncode != 0
    assert f"GPU_WHEELHOUSE={house} holds wheels for Python 2.7, not for python3" in proc.stderr
    assert not venv.exists()
