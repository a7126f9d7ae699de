"""verl platform "cpu": run verl's trainers on CPU with the gloo backend. Select it with VERL_PLATFORM=cpu.

`is_platform_available()` is False, so verl's auto-detection never picks it: it is used only when asked
for. When VERL_PLATFORM=cpu is set in a process (Ray passes the driver's environment to its workers),
importing this module also registers verl's FSDP engines for device "cpu" and applies the CPU-only
workarounds in `_verl_workarounds` (gloo backend string, critic attention) -- nothing is touched in
processes that do not ask for the CPU.
"""

from __future__ import annotations

import os
import types
from contextlib import contextmanager
from typing import Any

import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

PLATFORM_NAME = "cpu"


def _zero(*_args, **_kwargs) -> int:
    return 0


def _noop(*_args, **_kwargs) -> None:
    return None


def _mem_get_info(*_args, **_kwargs) -> tuple[int, int]:
    """(free, total) bytes of host memory: a plausible pair for verl's memory logging."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        free = os.sysconf("SC_AVPHYS_PAGES") * page_size
        return int(free), int(pages * page_size)
    except (ValueError, OSError, AttributeError):
        return 0, 0


class _CPUDeviceModule(types.ModuleType):
    """Stands in for `torch.cuda` where verl calls `get_torch_device().<fn>()`: `torch.cpu`'s functions
    (streams, synchronize, ...) plus the memory/RNG/name queries torch.cpu lacks."""

    def __init__(self) -> None:
        super().__init__("agentic_verl_cpu_device")
        self.empty_cache = _noop
        self.ipc_collect = _noop
        self.set_per_process_memory_fraction = _noop
        self.reset_peak_memory_stats = _noop
        self.reset_accumulated_memory_stats = _noop
        self.memory_allocated = _zero
        self.memory_reserved = _zero
        self.max_memory_allocated = _zero
        self.max_memory_reserved = _zero
        self.mem_get_info = _mem_get_info
        self.get_rng_state = lambda *_a, **_k: torch.get_rng_state()
        self.set_rng_state = lambda state, *_a, **_k: torch.set_rng_state(state)
        self.manual_seed = torch.manual_seed
        self.manual_seed_all = torch.manual_seed
        self.get_device_name = lambda *_a, **_k: "CPU"  # verl's FLOPs counter needs a string
        self.get_device_properties = lambda *_a, **_k: types.SimpleNamespace(
            name="CPU", total_memory=_mem_get_info()[1], major=None, minor=None
        )
        self.current_device = lambda: PLATFORM_NAME

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)


@PlatformRegistry.register(platform=PLATFORM_NAME)
class PlatformCPU(PlatformBase):
    """verl on the host CPU: gloo collectives, logical "GPU" resources in Ray (one per trainer rank)."""

    _device_module = _CPUDeviceModule()

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> types.ModuleType:
        return self._device_module

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        return False  # never auto-detected; VERL_PLATFORM=cpu selects it

    def current_device(self) -> str:  # type: ignore[override]
        return "cpu"  # an int index fails in FSDP2's full-state load on CPU

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        # verl's resource pool counts only GPU/NPU keys; declare logical GPUs to Ray
        # (ray_kwargs.ray_init.num_gpus=N), one per trainer rank.
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False  # verl then moves weights to vLLM through shared memory over ZMQ instead of CUDA IPC

    def rollout_env_vars(self) -> dict[str, str]:
        # verl sets these in its vLLM server actors. On CPU vLLM sizes its KV cache from VLLM_CPU_KVCACHE_SPACE
        # (GiB of host RAM); 1 GiB holds toy-sized runs and keeps several engines within a 24 GiB machine.
        return {"VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}

    def cudart(self) -> Any:
        return None


def cpu_platform_requested() -> bool:
    return os.environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM_NAME


_engines_registered = False


def register_cpu_engines() -> None:
    """Register verl's FSDP LM-head and value-head engines for device "cpu" (once per process)."""
    global _engines_registered
    if _engines_registered:
        return
    from verl.workers.engine.base import EngineRegistry
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead, FSDPEngineWithValueHead

    EngineRegistry.register(model_type="language_model", backend=["fsdp", "fsdp2"], device=PLATFORM_NAME)(
        FSDPEngineWithLMHead
    )
    EngineRegistry.register(model_type="value_model", backend=["fsdp", "fsdp2"], device=PLATFORM_NAME)(
        FSDPEngineWithValueHead
    )
    _engines_registered = True


if cpu_platform_requested():
    from agentic_verl.cpu import _verl_workarounds

    _verl_workarounds.use_plain_gloo_on_cpu()
    _verl_workarounds.use_configured_attention_for_value_models_on_cpu()
    register_cpu_engines()
