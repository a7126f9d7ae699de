"""Training-step agent metrics: `trace.batch_metrics` (table-driven) and the `AgentMetricsReplayBuffer` that carries
them into verl's step log (constructed as verl constructs a custom sampler). That the metrics reach a real run's
log is checked end to end in tests/cpu/test_e2e_vllm.py."""

from __future__ import annotations

import doctest

import pytest
from omegaconf import OmegaConf

from agentic_verl.agent_loops import trace
from agentic_verl.agent_loops.trace import METRIC_KEYS, TrajectoryTrace, batch_metrics

CALLS = {"num_tool_calls": 2.0, "failed_tool_calls": 1.0, "failure/tool_error": 1.0, "num_searches": 2.0}


@pytest.mark.parametrize("samples,expected", [
    # no traced sample (another loop, or nothing sampled): nothing to log
    ([], {}),
    ([None, "x"], {}),
    # one traced sample: its values, and its failure share
    ([CALLS], {"agent/num_tool_calls/mean": 2.0, "agent/failure/tool_error/mean": 1.0,
               "agent/tool_call_failure_rate": 0.5, "agent/traced/mean": 1.0}),
    # a failing and a clean sample plus an untraced one: means over the traced ones, the batch's failure rate
    ([CALLS, {"num_tool_calls": 2.0}, None], {"agent/num_tool_calls/mean": 2.0, "agent/failure/tool_error/mean": 0.5,
                                              "agent/num_searches/mean": 1.0, "agent/tool_call_failure_rate": 0.25,
                                              "agent/traced/mean": 2 / 3}),
    # no tool calls at all: a zero failure rate, not a division by zero
    ([{"num_turns": 1.0}], {"agent/num_turns/mean": 1.0, "agent/tool_call_failure_rate": 0.0}),
])
def test_batch_metrics(samples, expected):
    metrics = batch_metrics(samples)
    for key, value in expected.items():
        assert metrics[key] == pytest.approx(value), key
    if metrics:  # every trace metric is present, so every step logs the same keys
        assert {f"agent/{key}/mean" for key in METRIC_KEYS} <= set(metrics)


def test_batch_metrics_of_real_traces_and_docstrings():
    failing, clean = TrajectoryTrace("a", "rag_r1"), TrajectoryTrace("b", "rag_r1")
    for t in (failing, clean):
        t.add_turn(10, 0, 0.1)
    failing.add_tool_call("search", {"queries": ["q"]}, "Search failed", 0.2, failure="tool_error", queries=1)
    clean.add_tool_call("search", {"queries": ["q"]}, "Doc 1: ...", 0.1, queries=1)
    metrics = batch_metrics([failing.metrics(), clean.metrics()])
    assert metrics["agent/failed_tool_calls/mean"] == 0.5 and metrics["agent/tool_call_failure_rate"] == 0.5
    assert metrics["agent/num_searches/mean"] == 1.0
    result = doctest.testmod(trace)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("mode", ["sync", "colocate_async", "separate_async"])
def test_replay_buffer_is_the_one_verl_picks_for_the_mode(mode):
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync

    from agentic_verl.agent_loops.trace_sampler import AgentMetricsReplayBuffer

    # the arguments verl's trainer passes a custom sampler (trainer_base._build_replay_buffer)
    kwargs = dict(trainer_config=OmegaConf.create({}), max_off_policy_threshold=8, max_off_policy_strategy="drop",
                  sampler_kwargs=OmegaConf.create({}), refill_fn=lambda n: None)
    buffer = AgentMetricsReplayBuffer(trainer_mode=mode, **kwargs)
    assert isinstance(buffer, AgentMetricsReplayBuffer) and buffer.trainer_mode == mode
    assert isinstance(buffer, ReplayBufferAsync) == (mode != "sync") and isinstance(buffer, ReplayBuffer)
    assert buffer.filter_groups_metric is None


class _Batch:
    """The parts of verl's sampled batch (a KVBatchMeta) that the buffer reads."""

    partition_id = "train"
    keys = ["k0", "k1"]
    tags = [{}, {}]


def test_metrics_that_cannot_be_read_fail_the_step(monkeypatch):
    # a step whose agent and reward-exception metrics cannot be read is an error, not a warning and a step without them
    import transfer_queue as tq

    from agentic_verl.agent_loops.trace_sampler import MetricsReadError, _agent_metrics

    def unreadable(**kwargs):
        raise KeyError("extra_fields")

    monkeypatch.setattr(tq, "kv_batch_get", unreadable)
    with pytest.raises(MetricsReadError, match="cannot read extra_fields of the 2 sampled.*KeyError"):
        _agent_metrics(_Batch())


def test_metrics_read_from_the_transfer_queue(monkeypatch):
    import numpy as np
    import transfer_queue as tq

    from agentic_verl.agent_loops.trace_sampler import _agent_metrics

    fields = [{"agent_metrics": CALLS, "reward_extra_info": {"reward/qa_em/exceptions": 1.0}},
              {"reward_extra_info": {"reward/qa_em/exceptions": 0.0}}]
    monkeypatch.setattr(tq, "kv_batch_get", lambda **kwargs: {"extra_fields": np.array(fields, dtype=object)})
    metrics = _agent_metrics(_Batch())
    assert metrics["reward/qa_em/exceptions/mean"] == 0.5 and metrics["agent/num_tool_calls/mean"] == 2.0


def test_an_asynchronous_rollout_that_only_fails_stops_the_run(monkeypatch):
    """verl's async buffer evicts failed groups and refills them forever; ours counts them and stops the run past
    the limit (verl's own eviction and sampling stand in: they need the TransferQueue)."""
    from collections import Counter

    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync

    from agentic_verl.agent_loops.trace_sampler import AgentMetricsReplayBuffer, FailedGroupsError

    evicted = []
    monkeypatch.setattr(ReplayBuffer, "_evict_terminal_groups",
                        lambda self, step, pid, reasons: evicted.append(reasons[2]) or (set(reasons[2]), 0, 0, {}))
    monkeypatch.setattr(ReplayBufferAsync, "sample", lambda self, step, pid, size: (_Batch(), {}))

    def buffer(**sampler_kwargs):
        return AgentMetricsReplayBuffer(trainer_mode="colocate_async", trainer_config=OmegaConf.create({}),
                                        max_off_policy_threshold=8, max_off_policy_strategy="drop",
                                        sampler_kwargs=OmegaConf.create(sampler_kwargs), refill_fn=lambda n: None)

    failed = (set(), set(), {"uid-a", "uid-b"}, Counter())
    fails = buffer(max_failed_groups_in_a_row=5)
    fails._evict_terminal_groups(1, "train", failed)
    fails._evict_terminal_groups(1, "train", failed)
    fails.sample(1, "val", 2)  # a batch sampled: the streak starts again
    fails._evict_terminal_groups(2, "train", failed)
    fails._evict_terminal_groups(2, "train", failed)
    assert fails.failed_groups_in_a_row == 4 and len(evicted) == 4
    with pytest.raises(FailedGroupsError, match="6 prompt groups .* failed in a row.*max_failed_groups_in_a_row"):
        fails._evict_terminal_groups(2, "train", failed)
    assert buffer().max_failed_groups_in_a_row == 32
    never = buffer(max_failed_groups_in_a_row=0)
    for _ in range(40):
        never._evict_terminal_groups(1, "train", failed)
    with pytest.raises(ValueError, match="max_failed_groups_in_a_row must be an integer >= 0"):
        buffer(max_failed_groups_in_a_row=-1)
