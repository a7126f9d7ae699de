"""Per-trajectory tracing for our agent loops: turns, tool calls, a failure taxonomy, metrics, JSONL dumps.

An agent loop makes one `TrajectoryTrace` per `run()`, reports what happens, and hands its
`AgentLoopOutput` to `finalize` before returning it:

    trace = TrajectoryTrace(request_id, agent_name="rag_r1")
    trace.add_turn(policy_token_count=42, observation_token_count=0, generation_latency_s=0.8, stop_reason="stop")
    trace.add_tool_call("search", {"query": "..."}, result_text, latency_s=0.05, queries=1)
    trace.record_failure("no_call")                      # one of FAILURE_CATEGORIES
    return trace.finalize(output, tokenizer=self.tokenizer, global_step=kwargs.get("global_steps"))

How the metrics reach verl's logs (verl 0.9.1; traced through agent_loop.py, reward_loop, trainer/ppo/v1):
- verl reduces only a fixed set of per-sample fields into training metrics: `num_turns`
  (`num_turns/*`, `training/num_turns/*`) and, in the v0 AgentLoopManager, `AgentLoopMetrics`
  (`agent_loop/tool_calls/*`, `agent_loop/generate_sequences/*`). `finalize` fills
  `output.metrics.tool_calls` / `.generate_sequences` when the loop left them at 0.
- There is no hook that logs arbitrary per-sample values. `extra_fields` do reach the reward manager
  (as `tool_extra_fields`), and a reward manager's `reward_extra_info` is what verl turns into
  per-batch metrics (`val-aux/<data_source>/<key>/mean@N` in validation) and writes into its
  rollout/validation generation dumps. So `finalize` stores `extra_fields["agent_metrics"]`, and the
  smallest adapter, the `agentic_trace` reward manager (`trace_reward.py`, selected with
  `reward.reward_manager.name=agentic_trace`), folds them into `reward_extra_info` as `agent/<metric>`.
  verl 0.9.1's training step logs neither reward_extra_info nor AgentLoopOutput.metrics as scalars; only
  validation does. For training steps, `AgentMetricsReplayBuffer` (`trace_sampler.py`, selected with
  `trainer.v1.sampler.custom_sampler.*`, verl's hook for a custom sampler; the rag_r1 recipes select it) reads
  each sampled trajectory's `agent_metrics` and returns `batch_metrics(...)` with its sampling metrics, which
  verl logs with the step: `agent/<metric>/mean` and `agent/tool_call_failure_rate`.

Dumps: set `AGENTIC_VERL_TRAJECTORY_DIR` (or pass `dump_dir=`) and every finalized trajectory appends one
JSON line (`kind: "trajectory"`) to `<dir>/trajectories_<pid>.jsonl`; the `agentic_trace` reward manager
appends a `kind: "reward"` line with the same request_id once the reward is known (it runs after the
loop, often in another process). `agentic-verl view <dir>/*.jsonl -o report.html` joins them.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

FAILURE_CATEGORIES = (
    "no_call",  # the policy answered without calling a tool where one was needed
    "parse_error",  # a tool call that could not be parsed
    "unknown_tool",  # a call to a tool that does not exist
    "bad_arguments",  # arguments that fail the tool's schema
    "timeout",  # the tool did not answer in time
    "tool_error",  # the tool answered with an error
    "truncated_by_length",  # the trajectory hit the response-length budget
    "internal_error",  # OUR code (a parser, a decoder) raised on the model's output: a bug, logged with its traceback
    "over_limit",  # each call or query past a per-turn limit (max_parallel_calls, max_queries): cut, not executed
)

TRAJECTORY_DIR_ENV = "AGENTIC_VERL_TRAJECTORY_DIR"
METRICS_FIELD = "agent_metrics"  # extra_fields key with the flat metrics dict
TRACE_ID_FIELD = "agent_trace_id"  # extra_fields key with the request_id, to join reward records to trajectories
METRIC_PREFIX = "agent/"  # prefix of our keys in reward_extra_info
SCHEMA_VERSION = 1

_METRIC_NAMES = (
    "num_turns",
    "num_tool_calls",
    "failed_tool_calls",  # tool calls with a failure category (retrieval timeouts and errors among them)
    "num_searches",
    "queries_per_search",
    "tool_latency_s",
    "tool_latency_s_mean",
    "generation_latency_s",
    "policy_tokens",
    "observation_tokens",
)
# Every key metrics() returns, in order: verl needs the same reward_extra_info keys for every sample.
METRIC_KEYS: tuple[str, ...] = _METRIC_NAMES + tuple(f"failure/{c}" for c in FAILURE_CATEGORIES)


def validate_failure(category: str) -> str:
    if category not in FAILURE_CATEGORIES:
        raise ValueError(f"unknown failure category {category!r}; known: {', '.join(FAILURE_CATEGORIES)}")
    return category


@dataclass
class ToolCallRecord:
    name: str
    arguments: Any
    result: str
    latency_s: float
    failure: str | None = None
    queries: int = 0


@dataclass
class TurnRecord:
    index: int
    policy_tokens: int
    observation_tokens: int
    generation_latency_s: float
    stop_reason: str | None = None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)


class TrajectoryTrace:
    """What happened in one trajectory. Not thread-safe: one trace belongs to one `run()` coroutine."""

    def __init__(self, request_id: str, agent_name: str, *, dump_dir: str | None = None):
        self.request_id = str(request_id)
        self.agent_name = agent_name
        self.dump_dir = dump_dir if dump_dir is not None else os.environ.get(TRAJECTORY_DIR_ENV) or None
        self.turns: list[TurnRecord] = []
        self.pre_turn_tool_calls: list[ToolCallRecord] = []  # tool calls reported before the first turn
        self.failures: dict[str, int] = dict.fromkeys(FAILURE_CATEGORIES, 0)
        self.started_at = time.time()

    # -- reporting -----------------------------------------------------------------------------
    def add_turn(
        self,
        policy_token_count: int,
        observation_token_count: int,
        generation_latency_s: float,
        stop_reason: str | None = None,
    ) -> TurnRecord:
        """One policy generation: tokens it produced, the observation tokens appended after it, its latency."""
        turn = TurnRecord(
            index=len(self.turns),
            policy_tokens=int(policy_token_count),
            observation_tokens=int(observation_token_count),
            generation_latency_s=float(generation_latency_s),
            stop_reason=stop_reason,
        )
        self.turns.append(turn)
        return turn

    def add_tool_call(
        self,
        name: str,
        arguments: Any,
        result_text: str,
        latency_s: float,
        failure: str | None = None,
        queries: int = 0,
    ) -> ToolCallRecord:
        """A tool call made after the latest turn. `failure` also counts in failure/<category>;
        `queries` > 0 marks a search call with that many queries."""
        if failure is not None:
            validate_failure(failure)
            self.failures[failure] += 1
        call = ToolCallRecord(name=str(name), arguments=arguments, result=str(result_text),
                              latency_s=float(latency_s), failure=failure, queries=int(queries))
        (self.turns[-1].tool_calls if self.turns else self.pre_turn_tool_calls).append(call)
        return call

    def record_failure(self, category: str) -> None:
        """A failure not tied to a tool call (no_call, truncated_by_length, a parse error, ...)."""
        self.failures[validate_failure(category)] += 1

    # -- results -------------------------------------------------------------------------------
    @property
    def tool_calls(self) -> list[ToolCallRecord]:
        return self.pre_turn_tool_calls + [call for turn in self.turns for call in turn.tool_calls]

    def metrics(self) -> dict[str, float]:
        """Flat float metrics; every key in METRIC_KEYS is present (0 when nothing happened)."""
        calls = self.tool_calls
        searches = [call for call in calls if call.queries > 0]
        tool_latency = sum(call.latency_s for call in calls)
        values = {
            "num_turns": len(self.turns),
            "num_tool_calls": len(calls),
            "failed_tool_calls": sum(1 for call in calls if call.failure is not None),
            "num_searches": len(searches),
            "queries_per_search": sum(call.queries for call in searches) / len(searches) if searches else 0.0,
            "tool_latency_s": tool_latency,
            "tool_latency_s_mean": tool_latency / len(calls) if calls else 0.0,
            "generation_latency_s": sum(turn.generation_latency_s for turn in self.turns),
            "policy_tokens": sum(turn.policy_tokens for turn in self.turns),
            "observation_tokens": sum(turn.observation_tokens for turn in self.turns),
        }
        values.update({f"failure/{category}": self.failures[category] for category in FAILURE_CATEGORIES})
        return {key: float(values[key]) for key in METRIC_KEYS}

    def finalize(
        self,
        output,
        *,
        tokenizer=None,
        messages: list[dict] | None = None,
        reward_components: dict[str, Any] | None = None,
        global_step: int | None = None,
    ):
        """Attach the metrics to `output` (an AgentLoopOutput) and, when dumping is on, append its record.

        Returns `output` so a loop can `return trace.finalize(output, ...)`.
        """
        metrics = self.metrics()
        output.extra_fields[METRICS_FIELD] = metrics
        output.extra_fields[TRACE_ID_FIELD] = self.request_id
        # verl's own per-sample timing fields: keep what the loop measured, fill them when it did not.
        if not output.metrics.tool_calls:
            output.metrics.tool_calls = metrics["tool_latency_s"]
        if not output.metrics.generate_sequences:
            output.metrics.generate_sequences = metrics["generation_latency_s"]
        if self.dump_dir:
            record = self.to_record(output, tokenizer=tokenizer, messages=messages,
                                    reward_components=reward_components, global_step=global_step)
            append_record(record, self.dump_dir)
        return output

    def to_record(self, output, *, tokenizer=None, messages=None, reward_components=None, global_step=None) -> dict:
        prompt_ids = [int(t) for t in output.prompt_ids]
        response_ids = [int(t) for t in output.response_ids]
        response_mask = [int(m) for m in output.response_mask]
        segments = _segments(response_ids, response_mask, tokenizer)
        if messages is None:
            messages = _decoded_messages(prompt_ids, segments, tokenizer)
        return {
            "schema": SCHEMA_VERSION,
            "kind": "trajectory",
            "request_id": self.request_id,
            "agent_name": self.agent_name,
            "global_step": None if global_step is None else int(global_step),
            "time": self.started_at,
            "messages": messages,
            "prompt_ids": prompt_ids,
            "response_ids": response_ids,
            "response_mask": response_mask,
            "response_segments": segments,
            "turns": [_turn_dict(turn) for turn in self.turns],
            "pre_turn_tool_calls": [call.__dict__.copy() for call in self.pre_turn_tool_calls],
            "reward": output.reward_score,
            "reward_components": reward_components or {},
            "metrics": self.metrics(),
        }


def _turn_dict(turn: TurnRecord) -> dict:
    record = {k: v for k, v in turn.__dict__.items() if k != "tool_calls"}
    record["tool_calls"] = [call.__dict__.copy() for call in turn.tool_calls]
    return record


def _segments(response_ids: list[int], response_mask: list[int], tokenizer) -> list[dict]:
    """Runs of equal response_mask: {"policy": bool, "start", "num_tokens", "text"} (text only with a tokenizer)."""
    segments: list[dict] = []
    start = 0
    for i in range(1, len(response_ids) + 1):
        if i == len(response_ids) or response_mask[i] != response_mask[start]:
            run = response_ids[start:i]
            segments.append({
                "policy": bool(response_mask[start]),
                "start": start,
                "num_tokens": len(run),
                "text": tokenizer.decode(run, skip_special_tokens=False) if tokenizer is not None else None,
            })
            start = i
    return segments


def _decoded_messages(prompt_ids: list[int], segments: list[dict], tokenizer) -> list[dict]:
    if tokenizer is None:
        return []
    messages = [{"role": "prompt", "content": tokenizer.decode(prompt_ids, skip_special_tokens=False)}]
    messages += [{"role": "assistant" if s["policy"] else "observation", "content": s["text"]} for s in segments]
    return messages


def batch_metrics(samples: Iterable[Any], prefix: str = METRIC_PREFIX) -> dict[str, float]:
    """Step metrics for a batch of trajectories, from each one's `agent_metrics` dict (anything else, e.g. the
    None of a loop that does not trace, is skipped): `<prefix><metric>/mean` for every METRIC_KEYS entry,
    `<prefix>traced/mean` (share of traced samples) and `<prefix>tool_call_failure_rate` (failed / all tool
    calls of the batch). Empty when no sample was traced.

    >>> m = batch_metrics([{"num_tool_calls": 2.0, "failed_tool_calls": 1.0}, {"num_tool_calls": 2.0}, None])
    >>> m["agent/num_tool_calls/mean"], m["agent/tool_call_failure_rate"], round(m["agent/traced/mean"], 3)
    (2.0, 0.25, 0.667)
    """
    samples = list(samples)
    traced = [sample for sample in samples if isinstance(sample, Mapping)]
    if not traced:
        return {}
    out = {f"{prefix}{key}/mean": sum(float(s.get(key, 0.0)) for s in traced) / len(traced) for key in METRIC_KEYS}
    calls = sum(float(s.get("num_tool_calls", 0.0)) for s in traced)
    failed = sum(float(s.get("failed_tool_calls", 0.0)) for s in traced)
    out[f"{prefix}tool_call_failure_rate"] = failed / calls if calls else 0.0
    out[f"{prefix}traced/mean"] = len(traced) / len(samples)
    return out


# -- the writer ---------------------------------------------------------------------------------
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def dump_path(dump_dir: str) -> str:
    return os.path.join(dump_dir, f"trajectories_{os.getpid()}.jsonl")


def append_record(record: dict, dump_dir: str) -> str:
    """Append one JSON line to this process's dump file; one lock per file, one write per record."""
    path = dump_path(dump_dir)
    line = json.dumps(record, ensure_ascii=False, default=_json_default) + "\n"
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(path, threading.Lock())
    with lock:
        os.makedirs(dump_dir, exist_ok=True)
        # a model's "\ud800" argument is a lone surrogate with no UTF-8 form; inside a JSON string its backslash
        # escape is exact JSON, so the line reads back as the same text instead of raising out of the loop
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(line)
    return path


def _json_default(value: Any):
    if hasattr(value, "tolist"):  # numpy / torch values
        return value.tolist()
    return repr(value)
