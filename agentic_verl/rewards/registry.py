"""The reward registry: every reward component by name, for YAML composition and reward_fns/.

A reward component is a pure function

    fn(solution_str: str, ground_truth, extra_info: dict | None = None, **kwargs) -> dict

returning at least {"score": float, "error_type": str | None}; it never raises on model output.
"""

from __future__ import annotations

from agentic_verl.registry import Registry

REWARDS: Registry = Registry("reward")
