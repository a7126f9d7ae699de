"""verl entry: the last <answer> read as a number, equal to the gold number (the ReTool-style recipe's reward).

    reward.custom_reward_function.path=reward_fns/numeric_em.py
    reward.custom_reward_function.name=compute_score

Returns {"score": 0.0 | 1.0, "error_type": None | "numeric:missing_answer" | "numeric:not_a_number" | ...}
(agentic_verl/rewards/numeric.py).
"""

from agentic_verl.rewards.compose import verl_compute_score
from agentic_verl.rewards.numeric import numeric_em

compute_score = verl_compute_score(numeric_em, what="reward_fns/numeric_em.py")
