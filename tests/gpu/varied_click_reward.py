"""Test-only reward for the GPU GRPO click run: reward_fns/gui_click.py's click-in-box score plus a deterministic
function of the text, so that a random tiny VL model (which never clicks inside the box) still gets rewards that
differ within a GRPO group -- otherwise every advantage is 0 and no weight would change. (tests/cpu/varied_reward.py
is the rag_r1 twin.)"""

from agentic_verl.rewards.compose import verl_compute_score
from agentic_verl.rewards.gui import gui_click_in_box

_click_in_box = verl_compute_score(gui_click_in_box, what="varied_click_reward")


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    click = _click_in_box(data_source, solution_str, ground_truth, extra_info, **kwargs)
    spread = (sum(map(ord, solution_str)) % 11) / 10.0
    return {"score": float(click["score"]) + spread, "click_in_box": float(click["score"])}
