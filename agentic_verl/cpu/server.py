"""The `hf` rollout server: one Ray actor per replica node serving `HFGenerationEngine` to verl.

verl's agent loops reach it through `LLMServerClient.generate` -> `server.generate.remote(...)` and get a
`TokenOutput`; the trainer reaches it through the replica's control methods (wake_up, sleep, abort,
...) and the in-worker adapter streams weights into it after every update (begin/load/finish below).

Weight-sync verification: set AGENTIC_VERL_WEIGHT_SYNC_LOG=/path/file.jsonl (the driver's environment
reaches Ray actors) and each finished sync appends {"global_steps", "checksum" (sha256 of every
parameter), "tensors", "mib", "seconds", ...}.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from typing import Any

import torch

from agentic_verl.cpu.engine import HFGenerationEngine

logger = logging.getLogger("agentic_verl.cpu.server")
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "INFO"))

WEIGHT_SYNC_LOG_ENV = "AGENTIC_VERL_WEIGHT_SYNC_LOG"
THREADS_ENV = "AGENTIC_VERL_ROLLOUT_THREADS"
MAX_BATCH_ENV = "AGENTIC_VERL_ROLLOUT_MAX_BATCH"


def _dtype(name: str) -> torch.dtype:
    return {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16,
            "half": torch.float16}.get(str(name), torch.float32)


class HFRolloutServer:
    """Ray actor body (wrapped with `ray.remote` by `HFReplica`)."""

    def __init__(self, config: Any, model_config: Any, replica_rank: int, node_rank: int = 0,
                 visible_devices: str | None = None) -> None:
        from transformers import AutoConfig, AutoModelForCausalLM
        from verl.plugin.platform import get_platform
        from verl.utils.config import omega_conf_to_dataclass
        from verl.workers.config import HFModelConfig, RolloutConfig

        platform = get_platform()
        if visible_devices and platform.device_name != "cpu":
            # the server shares the trainer worker's accelerator (hybrid mode), as verl's vLLM server does
            os.environ[platform.visible_devices_envvar()] = visible_devices
        self.device = "cpu" if platform.device_name == "cpu" else f"{platform.device_name}:0"
        if self.device == "cpu":
            # Ray pins actors to 1 OMP thread; in hybrid mode the trainer idles while we generate.
            torch.set_num_threads(int(os.environ.get(THREADS_ENV) or os.cpu_count() or 1))

        self.config = omega_conf_to_dataclass(config, dataclass_type=RolloutConfig)
        self.model_config = omega_conf_to_dataclass(model_config, dataclass_type=HFModelConfig)
        self.replica_rank, self.node_rank = replica_rank, node_rank
        path = self.model_config.local_path
        dtype = _dtype(self.config.dtype)
        kwargs = {"dtype": dtype, "attn_implementation": "sdpa", "trust_remote_code": self.model_config.trust_remote_code}
        if str(self.config.load_format).startswith("dummy"):  # verl syncs the actor's weights before rollout
            hf_config = AutoConfig.from_pretrained(path, trust_remote_code=self.model_config.trust_remote_code)
            model = AutoModelForCausalLM.from_config(hf_config, **kwargs)
        else:
            model = AutoModelForCausalLM.from_pretrained(path, **kwargs)

        self.max_model_len = int(self.config.max_model_len or (self.config.prompt_length + self.config.response_length))
        self.engine = HFGenerationEngine(
            model, self.model_config.tokenizer, device=self.device,
            max_batch_size=min(int(self.config.max_num_seqs), int(os.environ.get(MAX_BATCH_ENV) or 64)),
            max_model_len=self.max_model_len, seed=self.config.seed + replica_rank if self.config.full_determinism else None,
        )
        self.global_steps: int | None = None
        self._admission = asyncio.Event()
        self._admission.set()
        self._reject = False
        self._sync: dict[str, Any] | None = None
        self._sync_log = os.environ.get(WEIGHT_SYNC_LOG_ENV)
        logger.info("hf rollout server %s/%s: %s on %s (%s), max_batch_size=%d", replica_rank, node_rank, path,
                    self.device, dtype, self.engine.max_batch_size)

    # ------------------------------------------------------------------ generation
    async def generate(self, prompt_ids: list[int], sampling_params: dict[str, Any], request_id: str,
                       image_data: Any = None, video_data: Any = None, **kwargs: Any):
        from verl.workers.rollout.replica import TokenOutput

        if image_data is not None or video_data is not None:
            raise NotImplementedError("the hf rollout backend serves text-only models")
        extra_fields = {"global_steps": self.global_steps}
        if not self._admission.is_set():
            if self._reject:
                return TokenOutput(token_ids=[], log_probs=None, stop_reason="aborted", extra_fields=extra_fields)
            await self._admission.wait()
        params = dict(sampling_params)
        room = self.max_model_len - len(prompt_ids)
        if room < 1:
            raise ValueError(f"prompt of {len(prompt_ids)} tokens leaves no room within max_model_len={self.max_model_len}")
        limit = params.pop("max_tokens", params.pop("max_new_tokens", None))
        if limit is None:  # vLLM server's default in verl
            limit = min(self.config.response_length,
                        self.config.prompt_length + self.config.response_length - len(prompt_ids))
        params["max_tokens"] = max(1, min(int(limit), room))
        params.setdefault("logprobs", True)
        params.setdefault("repetition_penalty", getattr(self.config, "repetition_penalty", 1.0) or 1.0)
        output = await self.engine.generate(prompt_ids, params, request_id)
        return TokenOutput(
            token_ids=output.token_ids, log_probs=output.log_probs, stop_reason=output.stop_reason,
            num_preempted=0, extra_fields={"global_steps": self.global_steps},
        )

    async def abort_all_requests(self, reset_prefix_cache: bool = True, reject_request: bool = False) -> dict:
        """Close admission and finish running/queued requests as "aborted" (partial tokens kept)."""
        self._admission.clear()
        self._reject = reject_request
        aborted = self.engine.abort_all()
        return {"aborted_count": aborted, "request_ids": []}

    async def resume_generation(self) -> None:
        self._reject = False
        self._admission.set()

    # ------------------------------------------------------------------ weights
    async def begin_weight_update(self) -> None:
        self._sync = {"start": time.perf_counter(), "names": set(), "bytes": 0}

    async def load_weights(self, named_tensors: list[tuple[str, torch.Tensor]]) -> int:
        if self._sync is None:
            await self.begin_weight_update()
        count = await asyncio.to_thread(self.engine.update_weights, named_tensors)
        for name, tensor in named_tensors:
            self._sync["names"].add(name)
            self._sync["bytes"] += tensor.numel() * tensor.element_size()
        return count

    async def finish_weight_update(self, global_steps: int | None = None) -> dict[str, Any]:
        """Check that every parameter arrived; log the checksum when AGENTIC_VERL_WEIGHT_SYNC_LOG is set."""
        sync, self._sync = self._sync or {"start": time.perf_counter(), "names": set(), "bytes": 0}, None
        params = self.engine._params
        received_storage = {params[name].data_ptr() for name in sync["names"]}
        missing = [name for name, tensor in params.items()
                   if name not in sync["names"] and tensor.data_ptr() not in received_storage]
        if missing:
            raise RuntimeError(f"weight sync missed {len(missing)} parameters, e.g. {missing[:5]}")
        if global_steps is not None:
            self.global_steps = global_steps
        summary = {
            "global_steps": global_steps, "replica_rank": self.replica_rank, "tensors": len(sync["names"]),
            "mib": round(sync["bytes"] / 2**20, 2), "seconds": round(time.perf_counter() - sync["start"], 3),
        }
        if self._sync_log:
            summary["checksum"] = await asyncio.to_thread(self.engine.param_checksum)
            with open(self._sync_log, "a") as f:
                f.write(json.dumps(summary) + "\n")
        logger.info("hf rollout weight sync: %s", summary)
        return summary

    async def get_weight_checksum(self) -> str:
        return await asyncio.to_thread(self.engine.param_checksum)

    # ------------------------------------------------------------------ memory/control (verl's server API)
    async def wake_up(self, tags: list[str] | None = None) -> None:
        if self.device != "cpu" and (tags is None or "weights" in tags):
            self.engine.model.to(self.device)

    async def sleep(self) -> None:
        if self.device != "cpu":  # free accelerator memory for the trainer; weights come back on wake_up
            await asyncio.to_thread(self.engine.model.to, "cpu")
            from verl.utils.device import get_torch_device

            get_torch_device().empty_cache()

    async def clear_kv_cache(self) -> None:
        return None  # KV caches live only for the duration of a batch

    async def release_kv_cache(self) -> None:
        return None

    async def resume_kv_cache(self) -> None:
        return None

    async def set_global_steps(self, global_steps: int) -> None:
        self.global_steps = global_steps

    async def start_profile(self, **kwargs: Any) -> None:
        return None

    async def stop_profile(self) -> None:
        return None
