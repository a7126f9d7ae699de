"""The reward registry: every reward component by name, for YAML composition and reward_fns/.

A reward component is a pure function

    fn(solution_str: str, ground_truth, extra_info: dict | None = None, **kwargs) -> dict

returning at least {"score": float, "error_type": str | None}; it never raises on model output.

An installed distribution adds its own by name, in every process (verl's reward workers too) and from any
working directory, with an entry point in the `agentic_verl.rewards` group (docs/extending.md):

    [project.entry-points."agentic_verl.rewards"]
    my_reward = "my_package.rewards:my_reward"
"""

from __future__ import annotations

from agentic_verl.registry import Registry

REWARDS: Registry = Registry("reward", entry_point_group="agentic_verl.rewards")
