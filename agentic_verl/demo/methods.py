"""The methods a demo summary knows: what a stage's score is, which evaluation scores it, and how a GRPO step's
tool calls are read from the agent metrics `AgentMetricsReplayBuffer` (agent_loops/trace_sampler.py) logs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def _logged(key: str) -> Callable[[dict], float | None]:
    return lambda metrics: float(metrics[key]) if key in metrics else None


def _clicked(metrics: dict) -> float | None:
    """gui_grounding records no tool call: a sample clicked unless it failed (no_call, parse_error, truncated)."""
    keys = [f"agent/failure/{name}/mean" for name in ("no_call", "parse_error", "truncated_by_length")]
    return 1.0 - sum(float(metrics[k]) for k in keys) if all(k in metrics for k in keys) else None


@dataclass(frozen=True)
class Method:
    metric: str  # what a stage's score is
    eval_kind: str  # the evaluation its stages come from (stages.ADAPTERS)
    tool_calls: Callable[[dict], float | None]  # a training step's metrics -> tool calls per trajectory
    tool_calls_name: str  # what a tool call is, for tables and plots


METHODS: dict[str, Method] = {
    "rag_r1": Method("EM", "qa", _logged("agent/num_searches/mean"), "searches"),
    "funreason": Method("AST accuracy", "bfcl", _logged("agent/num_tool_calls/mean"), "calls"),
    "v2p": Method("click accuracy", "screenspot", _clicked, "clicks"),
}


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}")
    return METHODS[name]
