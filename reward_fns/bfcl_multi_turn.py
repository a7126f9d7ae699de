"""verl entry: BFCL's multi-turn checker on a `bfcl_multi_turn` trajectory (1.0 when the checker accepts it, else 0.0).

    reward.custom_reward_function.path=reward_fns/bfcl_multi_turn.py
    reward.custom_reward_function.name=compute_score
    # optional: check on another server than the one the loop used
    #   +reward.custom_reward_function.reward_kwargs.env_url=http://127.0.0.1:PORT

Each row is rolled out by the `bfcl_multi_turn` agent loop, whose record (`model_calls` per turn and step) reaches
the reward in `extra_info["bfcl_multi_turn"]`; `extra_info` also holds the BFCL entry (`ground_truth` included).
The checker is bfcl-eval's own, run by the BFCL environment server. Returns {"score", "error_type" (BFCL's
`multi_turn:*` or ours `bfcl_multi_turn:*`), "bfcl_mt/*" metrics}; a checker that raises is counted as
`reward/bfcl_multi_turn/exceptions` and stops the run after `max_consecutive_exceptions` in a row. See
agentic_verl/rewards/bfcl/multi_turn.py and docs/rewards.md.
"""

from agentic_verl.rewards.bfcl import bfcl_multi_turn
from agentic_verl.rewards.compose import verl_compute_score

compute_score = verl_compute_score(bfcl_multi_turn, what="reward_fns/bfcl_multi_turn.py")
