"""BFCL AST match: decode model text in BFCL's prompting format and check it with BFCL's AST semantics.

`ast_match(output, functions, possible_answer, category, language="python") -> {"valid", "error_type", "errors"}`;
the reward component `bfcl_ast` (registered in `agentic_verl.rewards.registry.REWARDS`) wraps it as a score;
`render_calls` / `gold_calls` write calls (e.g. from the possible answers) back as model text. The reward component
`bfcl_multi_turn` (multi_turn.py) scores a `bfcl_multi_turn` trajectory with BFCL's multi-turn checker, run by the
BFCL environment server.
"""

from agentic_verl.rewards.bfcl.decode import DecodeError, decode
from agentic_verl.rewards.bfcl.match import AST_CATEGORIES, RELEVANCE_CATEGORIES, ast_match, language_of
from agentic_verl.rewards.bfcl.multi_turn import bfcl_multi_turn
from agentic_verl.rewards.bfcl.render import gold_calls, render_calls
from agentic_verl.rewards.bfcl.reward import bfcl_ast, error_type_of

__all__ = ["AST_CATEGORIES", "RELEVANCE_CATEGORIES", "DecodeError", "ast_match", "bfcl_ast", "bfcl_multi_turn",
           "decode", "error_type_of", "gold_calls", "language_of", "render_calls"]
