"""`AgentMetricsReplayBuffer`: verl's sync replay buffer, plus our trajectory and reward-exception metrics in every
training step's log.

verl 0.9.1's trainer (trainer/ppo/v1) logs no per-trajectory values from an agent loop at training steps: neither
`AgentLoopOutput.metrics` nor a reward manager's `reward_extra_info` reach the step metrics (validation does log
the latter, see trace_reward.py). What a step does log is the metrics dict its replay buffer's `sample()` returns.
verl lets a run name its own replay buffer (`trainer.v1.sampler.custom_sampler.{path,name}`), so this smallest
adapter samples exactly as verl's `ReplayBuffer` does, then reads the sampled trajectories' `extra_fields`
from verl's TransferQueue (as verl's own `_compute_metrics` does for speculative-decoding stats) and adds
`trace.batch_metrics(...)`: `agent/<metric>/mean` (searches, tool calls, failure/<category>, latencies, ...) and
`agent/tool_call_failure_rate`, once per training step; and from each trajectory's `reward_extra_info` (stored in
the same `extra_fields`), `reward/<name>/exceptions/mean`: the share of samples on which a reward component
raised (agentic_verl.rewards.failures).

    trainer.v1.sampler.custom_sampler.path=pkg://agentic_verl.agent_loops.trace_sampler
    trainer.v1.sampler.custom_sampler.name=AgentMetricsReplayBuffer

Metrics that cannot be read fail the step (`MetricsReadError`, with the reason), never a warning and a step logged
without them.

It follows the trainer's mode as verl's own choice does: verl's `ReplayBuffer` for `trainer.v1.trainer_mode=sync`
(the default), its `ReplayBufferAsync` for `colocate_async` / `separate_async` (the class made is then
`AgentMetricsReplayBufferAsync`), so switching the mode is that one setting.

Limits: verl builds a custom sampler without its group-filtering arguments, so DAPO's `algorithm.filter_groups`
and `trainer.v1.sampler.sync_refill_failed_groups` are not available with it.
"""

from __future__ import annotations

from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync

from agentic_verl.agent_loops.trace import METRICS_FIELD, batch_metrics
from agentic_verl.fail_fast import check_limit
from agentic_verl.rewards.failures import exception_metrics


class MetricsReadError(RuntimeError):
    """A training step's agent / reward-exception metrics cannot be read: the step fails instead of logging
    without them (a step that silently lacks `reward/<name>/exceptions/mean` would hide a broken reward)."""


class AgentMetricsReplayBuffer(ReplayBuffer):
    """verl's `ReplayBuffer` for the sync trainer (its `ReplayBufferAsync` for the others, as
    `AgentMetricsReplayBufferAsync`); `sample()` also returns the batch's `agent/...` metrics (training partition)."""

    def __new__(cls, trainer_mode: str, *args, **kwargs):
        if cls is AgentMetricsReplayBuffer and trainer_mode != "sync":  # verl's choice of buffer, by the mode
            cls = AgentMetricsReplayBufferAsync
        return super().__new__(cls)

    def sample(self, global_steps: int, partition_id: str, batch_size: int):
        batch, metrics = super().sample(global_steps, partition_id, batch_size)
        if partition_id == "train" and batch.keys:
            metrics = {**metrics, **_agent_metrics(batch)}
        return batch, metrics


class FailedGroupsError(RuntimeError):
    """Every prompt group of the asynchronous rollout failed, many in a row: the run stops with the reason."""


MAX_FAILED_GROUPS_IN_A_ROW = 32  # trainer.v1.sampler.sampler_kwargs.max_failed_groups_in_a_row; 0 = never stop


class AgentMetricsReplayBufferAsync(AgentMetricsReplayBuffer, ReplayBufferAsync):
    """`AgentMetricsReplayBuffer` over verl's `ReplayBufferAsync` (colocate_async, separate_async).

    It also stops a run whose rollout only fails. In the sync trainer a failed sample fails the step (our loops'
    fail-fast errors stop the run that way); verl's asynchronous buffer instead evicts a failed group and refills
    the batch with new prompts, so a run whose tool server died would wait forever, its log repeating the error.
    Past `max_failed_groups_in_a_row` groups evicted as failed with no batch sampled in between, this buffer raises
    FailedGroupsError, which ends the run."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        limit = (self.sampler_kwargs or {}).get("max_failed_groups_in_a_row", MAX_FAILED_GROUPS_IN_A_ROW)
        self.max_failed_groups_in_a_row = check_limit(limit, "trainer.v1.sampler.sampler_kwargs."
                                                             "max_failed_groups_in_a_row")
        self.failed_groups_in_a_row = 0

    def sample(self, global_steps: int, partition_id: str, batch_size: int):
        batch, metrics = super().sample(global_steps, partition_id, batch_size)
        self.failed_groups_in_a_row = 0  # a batch was sampled: the rollout works
        return batch, metrics

    def _evict_terminal_groups(self, global_steps, partition_id, eviction_reasons):
        failed = eviction_reasons[2]
        if failed and partition_id == "train":
            self.failed_groups_in_a_row += len(failed)
            if 0 < self.max_failed_groups_in_a_row <= self.failed_groups_in_a_row:
                raise FailedGroupsError(
                    f"{self.failed_groups_in_a_row} prompt groups of the asynchronous rollout failed in a row, and no "
                    f"batch could be sampled: an agent loop raised for each one (the rollout workers' log has the "
                    f"reason; a FailFastError means a tool or environment server is down). Fix it and resume; "
                    f"trainer.v1.sampler.sampler_kwargs.max_failed_groups_in_a_row sets the limit (0 = never stop).")
        return super()._evict_terminal_groups(global_steps, partition_id, eviction_reasons)


def _agent_metrics(batch) -> dict[str, float]:
    """Read `extra_fields` of the batch's trajectories from the TransferQueue and reduce their agent metrics."""
    import transfer_queue as tq

    keys = [key for key, tag in zip(batch.keys, batch.tags, strict=False) if not tag.get("is_padding", False)]
    if not keys:
        return {}
    try:
        data = tq.kv_batch_get(keys=keys, partition_id=batch.partition_id, select_fields=["extra_fields"])
        extra_fields = data.pop("extra_fields").tolist()
    except Exception as exc:  # a step whose metrics cannot be read is an error, never a step logged without them
        raise MetricsReadError(
            f"agent metrics: cannot read extra_fields of the {len(keys)} sampled trajectories from verl's "
            f"TransferQueue (partition {batch.partition_id!r}): {type(exc).__name__}: {exc}. verl's own trainer reads "
            f"the same field every step, so the run's data is not what it expects; to train without our step "
            f"metrics, unset trainer.v1.sampler.custom_sampler") from exc
    return step_metrics(extra_fields)


def step_metrics(extra_fields: list) -> dict[str, float]:
    """The step's metrics from its trajectories' `extra_fields`: `agent/...` and `reward/<name>/exceptions/mean`."""
    fields = [f if isinstance(f, dict) else {} for f in extra_fields]
    return {**batch_metrics(f.get(METRICS_FIELD) for f in fields),
            **exception_metrics(f.get("reward_extra_info") for f in fields)}
