"""Reward functions: pure, never raising on model output, no verl import."""

from agentic_verl.rewards.registry import REWARDS

__all__ = ["REWARDS"]
