"""verl entry: BFCL AST match (1.0 when BFCL's AST checker would accept the output, else 0.0).

    reward.custom_reward_function.path=reward_fns/bfcl_ast.py
    reward.custom_reward_function.name=compute_score
    # optional defaults for rows without them: +reward.custom_reward_function.reward_kwargs.category=multiple
    # lenient options (each accepts outputs the official evaluation rejects; default false):
    #   +reward.custom_reward_function.reward_kwargs.accept_code_fences=true   (also python_unary_operators,
    #   optimal_parallel_matching)

Each row: ground_truth = BFCL's possible-answer list (or its JSON string); extra_info = {"functions": [...] or
JSON, "category": "simple_python" | ... | "live_relevance", "language": optional}. Returns {"score",
"error_type" (bfcl:*), "bfcl_error_type" (BFCL's own), "bfcl_valid"}; with the default options the score is the
official BFCL evaluation's verdict. See agentic_verl/rewards/bfcl/ and docs/bfcl.md.
"""

from agentic_verl.rewards.bfcl import bfcl_ast
from agentic_verl.rewards.compose import verl_compute_score

compute_score = verl_compute_score(bfcl_ast, what="reward_fns/bfcl_ast.py")
