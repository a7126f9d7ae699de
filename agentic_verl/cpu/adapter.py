"""The `hf` rollout inside a trainer worker: streams the actor's weights into the replica's server.

verl's `ActorRolloutRefWorker.update_weights` (hybrid mode, after init and after every step) resumes
the rollout, hands us `engine.get_per_tensor_param()` -- a lazy generator of full HF-named tensors
that, under FSDP2, is a collective every rank must drain -- and then resumes the KV cache. The leader
rank (rollout rank 0 of its replica) sends the tensors in buckets over Ray, the others only drain.

AGENTIC_VERL_SKIP_WEIGHT_SYNC=1 is a negative control for tests: after the initial load (global step 0) every
sync drains the generator without sending anything, so the server keeps generating with the initial weights
while the actor trains, and verl's `training/rollout_probs_diff_max` grows.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from typing import Any

import ray
import torch
from verl.workers.rollout.base import BaseRollout

from agentic_verl.cpu.replica import HF_ROLLOUT_NAME, server_name

logger = logging.getLogger("agentic_verl.cpu.adapter")
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "INFO"))

SKIP_SYNC_ENV = "AGENTIC_VERL_SKIP_WEIGHT_SYNC"


class HFServerAdapter(BaseRollout):
    def __init__(self, config, model_config, device_mesh, replica_rank: int = -1, **kwargs: Any) -> None:
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", 0))
        rollout_world_size = (self.config.tensor_model_parallel_size * self.config.data_parallel_size
                              * self.config.pipeline_model_parallel_size)
        self.replica_rank = rank // rollout_world_size if replica_rank == -1 else replica_rank
        self.rollout_rank = rank % rollout_world_size
        self.is_leader_rank = self.rollout_rank == 0
        self.sleep_level = 1
        self._server = None
        self._bucket_bytes = int(self.config.checkpoint_engine.update_weights_bucket_megabytes) << 20

    @property
    def server(self):
        if self._server is None:  # the replica launches its server after the trainer workers exist
            self._server = ray.get_actor(server_name(f"{HF_ROLLOUT_NAME}_", self.replica_rank, 0))
        return self._server

    async def resume(self, tags: list[str]) -> None:
        if self.config.free_cache_engine and self.is_leader_rank:
            await self.server.wake_up.remote(tags=tags)

    async def release(self) -> None:
        if self.config.free_cache_engine and self.is_leader_rank:
            await self.server.sleep.remote()

    @torch.no_grad()
    async def update_weights(self, weights: Iterable[tuple[str, torch.Tensor]], wire_format: str = "named_tensors",
                             global_steps: int | None = None, **kwargs: Any) -> None:
        if wire_format != "named_tensors":
            raise NotImplementedError(f"the hf rollout backend takes full named tensors, not {wire_format!r}")
        if kwargs.get("peft_config") is not None:
            raise NotImplementedError("LoRA adapters are not synced by the hf rollout backend; use lora.merge=True")
        skip = os.environ.get(SKIP_SYNC_ENV, "").lower() in ("1", "true", "yes") and bool(global_steps)
        if not self.is_leader_rank or skip:
            for _name, _tensor in weights:  # every rank drains: each step of the generator may be a collective
                pass
            if skip and self.is_leader_rank:
                logger.warning("%s is set: rollout weights NOT synced (negative control)", SKIP_SYNC_ENV)
                await self.server.set_global_steps.remote(global_steps)
            return

        start = time.perf_counter()
        await self.server.begin_weight_update.remote()
        bucket, size = [], 0
        for name, tensor in weights:
            tensor = tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor  # DTensor -> full
            tensor = tensor.detach().to("cpu")  # Ray serialises (copies) it on send
            bucket.append((name, tensor))
            size += tensor.numel() * tensor.element_size()
            if size >= self._bucket_bytes:
                await self.server.load_weights.remote(bucket)
                bucket, size = [], 0
        if bucket:
            await self.server.load_weights.remote(bucket)
        summary = await self.server.finish_weight_update.remote(global_steps)
        logger.info("hf weight sync to replica %d: %s (%.2fs in the worker)", self.replica_rank, summary,
                    time.perf_counter() - start)
