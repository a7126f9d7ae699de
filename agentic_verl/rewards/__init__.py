"""Reward functions: pure, never raising on model output, no verl import.

Importing this package registers every reward component in REWARDS (qa_em, qa_f1, qa_cover_em, format,
gui_click_in_box, gui_gaussian_point, gui_gaussian_coverage, bfcl_ast, bfcl_multi_turn, fc_format, numeric_em).
"""

from agentic_verl.rewards.registry import REWARDS  # noqa: I001  (the registry first, then the modules that fill it)
from agentic_verl.rewards import bfcl, fc_format, format, gui, numeric, qa  # noqa: F401  (registration)
from agentic_verl.rewards.compose import ComposedReward, RewardConfigError, load_reward, load_reward_config
from agentic_verl.rewards.format import check_format, format_reward
from agentic_verl.rewards.gui import (
    gui_click_in_box,
    gui_gaussian_coverage,
    gui_gaussian_point,
    parse_click,
    smart_resize,
)
from agentic_verl.rewards.qa import (
    cover_em,
    exact_match,
    extract_answer,
    f1,
    normalize_answer,
    qa_cover_em,
    qa_em,
    qa_f1,
)

__all__ = [
    "REWARDS",
    "ComposedReward",
    "RewardConfigError",
    "check_format",
    "cover_em",
    "exact_match",
    "extract_answer",
    "f1",
    "format_reward",
    "gui_click_in_box",
    "gui_gaussian_coverage",
    "gui_gaussian_point",
    "load_reward",
    "load_reward_config",
    "normalize_answer",
    "parse_click",
    "qa_cover_em",
    "qa_em",
    "qa_f1",
    "smart_resize",
]
