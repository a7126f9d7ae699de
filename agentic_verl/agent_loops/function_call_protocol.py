"""The `function_call` loop's reading of one output, without verl: decoded calls, or the failure kind.

Only `MODEL_FORMAT_ERRORS` (what BFCL's decoder raises on the model's own text, as the bfcl_ast reward reads it in
rewards/bfcl/match.py) are the model's format failure. Any other exception out of our decoding, or a result that is
not a call list, is a bug of ours: logged with its traceback and counted as `internal_error`, never as the model's
`parse_error`. Verl-free so that other loops (bfcl_multi_turn) and data tools read outputs the same way.
"""

from __future__ import annotations

import logging

from agentic_verl.rewards.bfcl._tokens import SyntaxFailure
from agentic_verl.rewards.bfcl.decode import DecodeError, decode, strip_reasoning

logger = logging.getLogger(__name__)

# Python's DecodeError, the Java/JavaScript grammars' SyntaxFailure, and nesting too deep for the parser.
MODEL_FORMAT_ERRORS = (DecodeError, SyntaxFailure, RecursionError, MemoryError)


def classify(text: str, hit_limit: bool, language: str = "python") -> tuple[list[dict] | None, str | None]:
    """(decoded calls or None, failure category or None) for one generated text.

    >>> classify("<think>easy</think>\\n\\n[add(a=1, b=2)]", False)
    ([{'add': {'a': 1, 'b': 2}}], None)
    >>> classify("<think>hmm</think>\\n\\nI cannot help with that.", False)
    (None, 'no_call')
    >>> classify("<think>x</think>[add(a=1,", False)
    (None, 'parse_error')
    """
    calls, failure, _ = classify_output(text, hit_limit, language)
    return calls, failure


def classify_output(text: str, hit_limit: bool, language: str = "python"):
    """`classify` plus, for an internal_error, its exception as "Type: message" (else None)."""
    if hit_limit:
        return None, "truncated_by_length", None
    if "<think>" in text and "</think>" not in text:
        return None, "parse_error", None
    try:
        call_text = strip_reasoning(text).strip()
        if not call_text:
            return None, "no_call", None
        try:
            calls = decode(call_text, language)
        except MODEL_FORMAT_ERRORS:  # an attempt at a call (parenthesis, list or JSON object) vs plain prose
            attempted = "(" in call_text or call_text.lstrip("` \n").startswith(("[", "{"))
            return None, "parse_error" if attempted else "no_call", None
        if not calls:  # [], or Java's {} / JavaScript's None: text that parses but holds no call (BFCL's reading)
            return None, "no_call", None
        if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
            raise TypeError(f"the decoder returned {type(calls).__name__}, not a list of calls")
    except Exception as exc:  # not the model's fault: a bug in our decoder, which must not end the rollout either
        logger.exception("function_call: our BFCL decoder raised %s on a model output (a bug in agentic_verl, "
                         "not the model's format error; counted as failure/internal_error). Output: %r",
                         type(exc).__name__, text[:500])
        return None, "internal_error", f"{type(exc).__name__}: {exc}"
    return calls, None, None
