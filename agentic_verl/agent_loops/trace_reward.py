"""`agentic_trace`: verl's naive reward manager, plus our trajectory metrics in `reward_extra_info`.

verl 0.9.1 has no hook that logs arbitrary per-sample values from an agent loop. What it does log is a
reward manager's `reward_extra_info` (validation: `val-aux/<data_source>/<key>/mean@N`, and the keys are
written into verl's rollout/validation generation dumps). The agent loop's `extra_fields` reach the
reward manager as `tool_extra_fields`, so this adapter — the smallest one that needs no monkeypatching —
copies `extra_fields["agent_metrics"]` (set by `TrajectoryTrace.finalize`) into `reward_extra_info` as
`agent/<metric>`. Every sample gets every key (zeros and `agent/traced = 0` when its loop did not trace):
verl stacks reward_extra_info keys across the batch and needs them to be the same for all samples.

When trajectory dumping is on (`AGENTIC_VERL_TRAJECTORY_DIR`), it also appends a `kind: "reward"` record
(request_id, reward, reward components) that the viewer joins to the trajectory record.

Select it with `reward.reward_manager.name=agentic_trace` (plus the usual `reward.custom_reward_function.*`).
"""

from __future__ import annotations

import math
import os
from typing import Any

from verl.experimental.reward_loop.reward_manager import register
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager

from agentic_verl.agent_loops.trace import (
    METRIC_KEYS,
    METRIC_PREFIX,
    METRICS_FIELD,
    SCHEMA_VERSION,
    TRACE_ID_FIELD,
    TRAJECTORY_DIR_ENV,
    append_record,
)

NAME = "agentic_trace"


@register(NAME)
class TraceRewardManager(NaiveRewardManager):
    """NaiveRewardManager + `agent/<metric>` keys in reward_extra_info (+ a reward record in the dumps)."""

    async def run_single(self, data) -> dict:
        extra_fields = data[-1].non_tensor_batch.get("tool_extra_fields")
        extra_fields = dict(extra_fields) if isinstance(extra_fields, dict) else {}
        result = await super().run_single(data)
        components = dict(result["reward_extra_info"])
        result["reward_extra_info"].update(agent_metric_info(extra_fields))
        dump_dir = os.environ.get(TRAJECTORY_DIR_ENV)
        if dump_dir and extra_fields.get(TRACE_ID_FIELD) is not None:
            append_record(reward_record(extra_fields[TRACE_ID_FIELD], result["reward_score"], components), dump_dir)
        return result


def agent_metric_info(extra_fields: dict) -> dict[str, float]:
    """The `agent/<metric>` entries for one sample's extra_fields (all keys, always)."""
    metrics = extra_fields.get(METRICS_FIELD)
    info = {f"{METRIC_PREFIX}traced": 1.0 if isinstance(metrics, dict) else 0.0}
    metrics = metrics if isinstance(metrics, dict) else {}
    info.update({f"{METRIC_PREFIX}{key}": float(metrics.get(key, 0.0)) for key in METRIC_KEYS})
    return info


def reward_record(request_id: str, reward: Any, components: dict[str, Any]) -> dict:
    return {
        "schema": SCHEMA_VERSION,
        "kind": "reward",
        "request_id": str(request_id),
        "reward": _number(reward),
        "reward_components": {key: _jsonable(value) for key, value in components.items()},
    }


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)
