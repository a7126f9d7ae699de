"""BFCL AST match: decode model text in BFCL's prompting format and check it with BFCL's AST semantics.

`ast_match(output, functions, possible_answer, category, language="python") -> {"valid", "error_type", "errors"}`;
the reward component `bfcl_ast` (registered in `agentic_verl.rewards.registry.REWARDS`) wraps it as a score.
"""

from agentic_verl.rewards.bfcl.decode import DecodeError, decode
from agentic_verl.rewards.bfcl.match import AST_CATEGORIES, RELEVANCE_CATEGORIES, ast_match, language_of
from agentic_verl.rewards.bfcl.reward import bfcl_ast, error_type_of

__all__ = ["AST_CATEGORIES", "RELEVANCE_CATEGORIES", "DecodeError", "ast_match", "bfcl_ast", "decode",
           "error_type_of", "language_of"]
