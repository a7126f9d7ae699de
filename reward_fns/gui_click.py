"""verl entries for GUI grounding: click-in-box (default), GUI-G2 Gaussian point and coverage rewards.

    reward.custom_reward_function.path=reward_fns/gui_click.py
    reward.custom_reward_function.name=compute_score     # or compute_score_gaussian_point / _coverage
    +reward.custom_reward_function.reward_kwargs.coord_system=absolute   # normalized | thousandths | auto
    +reward.custom_reward_function.reward_kwargs.use_smart_resize=true    # the model saw a smart_resize'd image

ground_truth: [x1, y1, x2, y2] in original-image pixels (or {"bbox": [...]}); extra_info carries
image_size = [w, h] (and input_size = [w, h] when the model saw a resized image).
"""

from agentic_verl.rewards.compose import verl_compute_score
from agentic_verl.rewards.gui import gui_click_in_box, gui_gaussian_coverage, gui_gaussian_point

compute_score = verl_compute_score(gui_click_in_box, what="reward_fns/gui_click.py:compute_score")
compute_score_gaussian_point = verl_compute_score(
    gui_gaussian_point, what="reward_fns/gui_click.py:compute_score_gaussian_point"
)
compute_score_gaussian_coverage = verl_compute_score(
    gui_gaussian_coverage, what="reward_fns/gui_click.py:compute_score_gaussian_coverage"
)
