"""verl entry: exact match of the last <answer> against the gold answers (the RAG-R1 / Search-R1 reward).

    reward.custom_reward_function.path=reward_fns/qa_em.py
    reward.custom_reward_function.name=compute_score
    # optional: +reward.custom_reward_function.reward_kwargs.normalizer=rag_r1_eval

Returns {"score": 0.0 | 1.0, "error_type": None | "qa:missing_answer" | "qa:wrong_answer" | ...}.
"""

from agentic_verl.rewards.compose import verl_compute_score
from agentic_verl.rewards.qa import qa_em

compute_score = verl_compute_score(qa_em, what="reward_fns/qa_em.py")
