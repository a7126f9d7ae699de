"""Registers the `hf` rollout backend with verl: `actor_rollout_ref.rollout.name=hf`.

Driver side: `HFReplica` (a `RolloutReplica`) launches one `HFRolloutServer` Ray actor per replica node.
Trainer-worker side: `adapter.HFServerAdapter` (found through `_verl_workarounds.register_rollout_adapter`,
the one place verl offers no public hook) streams weights into that actor after every update.
Works on any verl platform: the server runs on the platform's device (CPU, or the trainer worker's GPU).
"""

from __future__ import annotations

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from verl.plugin.platform import get_platform
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry

from agentic_verl.cpu import _verl_workarounds
from agentic_verl.cpu.server import HFRolloutServer

HF_ROLLOUT_NAME = _verl_workarounds.HF_ROLLOUT_NAME


def server_name(prefix: str, replica_rank: int, node_rank: int, name_suffix: str = "", role: str = "") -> str:
    """The Ray actor name; the in-worker adapter finds the server by it (verl's own naming scheme)."""
    return f"{prefix}server_{role}{replica_rank}_{node_rank}{name_suffix}"


class HFReplica(RolloutReplica):
    """A transformers-backed rollout replica (one server actor per node; tensor parallelism is not supported)."""

    def _get_server_name_prefix(self) -> str:
        return f"{HF_ROLLOUT_NAME}_"

    async def launch_servers(self) -> None:
        if self.world_size != 1:
            raise ValueError(
                "the hf rollout backend runs one model copy per replica: set rollout tensor/data/pipeline "
                f"parallel sizes to 1 (world size is {self.world_size})"
            )
        role = "reward_" if self.is_reward_model else ("teacher_" if self.is_teacher_model else "")
        node_id, visible_devices = None, None
        if self.workers:  # hybrid/colocated: run next to (and on the accelerator of) the first trainer worker
            platform = get_platform()
            resource = platform.ray_resource_name()

            def _locate(_self):
                context = ray.get_runtime_context()
                ids = context.get_accelerator_ids().get(resource) or []
                return context.get_node_id(), ",".join(str(i) for i in ids)

            node_id, visible_devices = await self.workers[0].__ray_call__.remote(_locate)
        options = {
            "name": server_name(self._get_server_name_prefix(), self.replica_rank, 0, self.name_suffix, role),
            "max_concurrency": self.max_concurrency,
            "runtime_env": {"env_vars": {var: "1" for var in get_platform().ray_noset_envvars()}},
        }
        if node_id is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        server = ray.remote(HFRolloutServer).options(**options).remote(
            config=self.config, model_config=self.model_config, replica_rank=self.replica_rank, node_rank=0,
            visible_devices=visible_devices,
        )
        await server.__ray_ready__.remote()
        self.servers = [server]
        self._server_handle = server
        # Not an HTTP endpoint (generation is token-in/token-out over Ray); a unique key for verl's router.
        self._server_address = f"ray://{options['name']}"


def _load_hf_replica() -> type[RolloutReplica]:
    return HFReplica


RolloutReplicaRegistry.register(HF_ROLLOUT_NAME, _load_hf_replica)
_verl_workarounds.register_rollout_adapter()
