"""verl entry for the BFCL AST match reward: `custom_reward_function.path=reward_fns/bfcl_ast.py`.

ground_truth is BFCL's possible-answer list (or its JSON string); extra_info carries `functions`, `category`
and optionally `language`. See agentic_verl/rewards/bfcl/ and the README section "BFCL AST match".
"""

from agentic_verl.rewards.bfcl import bfcl_ast


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict:
    return bfcl_ast(solution_str, ground_truth, extra_info, **kwargs)
