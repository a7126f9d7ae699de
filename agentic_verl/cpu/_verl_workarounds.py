"""The places in verl 0.9.1 that no public registry or hook reaches, adapted here and nowhere else.

Both are applied only in processes that run with VERL_PLATFORM=cpu (`platform.py`); both are idempotent and
leave verl's files untouched. Remove each one when verl grows the hook named in its comment.

1. The process-group backend string. `verl.utils.distributed.initialize_global_process_group[_ray]`
   build `f"cpu:gloo,{device}:{backend}"`; on the CPU platform that is "cpu:gloo,cpu:gloo", which
   torch rejects (a device type named twice). The platform's `communication_backend_name()` cannot fix
   it because the device part is always prefixed. We wrap both functions so that on the CPU platform
   they ask torch for plain "gloo"; every other argument and the rest of their work are verl's own.
   They are module attributes looked up at call time by `sft_trainer.main` and bound at import time by
   `verl.workers.engine_workers` -- verl imports our plugin (`import verl`) before either, so the
   wrapped versions are the ones bound.

2. The critic's value-head model. `verl.utils.model.load_valuehead_model` (used by the FSDP engine for
   `model_type="value_model"`, i.e. PPO's GAE critic) passes `attn_implementation="flash_attention_2"`
   literally, ignoring `critic.model.override_config.attn_implementation`; flash-attn does not exist on CPU,
   so the critic cannot be built. On the CPU platform, and only while flash-attn is not installed, we load
   the same `AutoModelForTokenClassification` (num_labels=1, as verl configures it) with the configured
   attention implementation (default "sdpa"). The FSDP engine imports the function at call time, so the
   module attribute is what it gets. (Found after the prototype, which ran GRPO only.)
"""

from __future__ import annotations

import functools
import os
from datetime import timedelta


def _cpu_device() -> bool:
    from verl.utils.device import get_device_name

    return get_device_name() == "cpu"


def use_plain_gloo_on_cpu() -> None:
    """Workaround 1 (see the module docstring)."""
    import torch.distributed
    import verl.utils.distributed as verl_distributed

    original_ray = verl_distributed.initialize_global_process_group_ray
    original_torchrun = verl_distributed.initialize_global_process_group
    if getattr(original_ray, "__agentic_verl_wrapped__", False):
        return

    @functools.wraps(original_ray)
    def initialize_global_process_group_ray(timeout_second=None, backend=None):
        if backend is None and _cpu_device():
            backend = "gloo"
        return original_ray(timeout_second=timeout_second, backend=backend)

    @functools.wraps(original_torchrun)
    def initialize_global_process_group(timeout_second=36000):
        if not _cpu_device():
            return original_torchrun(timeout_second=timeout_second)
        # verl's body, with backend "gloo" (no set_device on CPU).
        torch.distributed.init_process_group(
            backend="gloo",
            timeout=timedelta(seconds=timeout_second),
            init_method=os.environ.get("DIST_INIT_METHOD", None),
        )
        return int(os.environ["LOCAL_RANK"]), int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])

    initialize_global_process_group_ray.__agentic_verl_wrapped__ = True
    verl_distributed.initialize_global_process_group_ray = initialize_global_process_group_ray
    verl_distributed.initialize_global_process_group = initialize_global_process_group


def use_configured_attention_for_value_models_on_cpu() -> None:
    """Workaround 2 (see the module docstring)."""
    import verl.utils.model as verl_model

    original = verl_model.load_valuehead_model
    if getattr(original, "__agentic_verl_wrapped__", False):
        return

    @functools.wraps(original)
    def load_valuehead_model(local_path, torch_dtype, model_config, trust_remote_code):
        from transformers import AutoModelForTokenClassification
        from transformers.utils import is_flash_attn_2_available

        if not _cpu_device() or is_flash_attn_2_available():
            return original(local_path, torch_dtype, model_config, trust_remote_code)
        attention = getattr(model_config, "_attn_implementation", None) or "sdpa"
        if attention == "flash_attention_2":
            attention = "sdpa"
        return AutoModelForTokenClassification.from_pretrained(
            pretrained_model_name_or_path=local_path, torch_dtype=torch_dtype, config=model_config,
            attn_implementation=attention, trust_remote_code=trust_remote_code,
        )

    load_valuehead_model.__agentic_verl_wrapped__ = True
    verl_model.load_valuehead_model = load_valuehead_model
