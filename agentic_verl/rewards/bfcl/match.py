"""`ast_match`: one model output against one BFCL question, with BFCL's AST-category semantics.

>>> functions = [{"name": "get_weather", "parameters": {"type": "dict", "required": ["city"],
...               "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}}]
>>> answer = [{"get_weather": {"city": ["Paris", "paris, france"], "unit": ["", "celsius"]}}]
>>> ast_match("<think>...</think>\\n\\n[get_weather(city='PARIS')]", functions, answer, "simple_python")["valid"]
True
>>> ast_match("[get_weather(town='Paris')]", functions, answer, "simple_python")["error_type"]
'simple_function_checker:missing_required'
>>> ast_match("I can't help with that.", functions, [], "irrelevance")["valid"]
True

A question the checker cannot read (a schema without a type, an option that is not a list, ...) is
`bfcl:bad_ground_truth`, decided where the checker reads it (`check.bad_ground_truth`). Any other exception from
the checker is a bug of ours: `ast_match` logs it with its traceback and answers `bfcl:checker_bug` (an evaluation
goes on and counts it); `raise_checker_bugs=True` (the `bfcl_ast` reward) lets it propagate to the reward wrappers,
which count it as `reward/bfcl_ast/exceptions`.
"""

from __future__ import annotations

import logging

from agentic_verl.rewards.bfcl._tokens import SyntaxFailure
from agentic_verl.rewards.bfcl.check import CheckFailure, check_calls, verdict
from agentic_verl.rewards.bfcl.decode import DecodeError, decode

AST_CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
                  "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")  # fmt: skip
RELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance", "live_relevance")
CHECKER_BUG = "bfcl:checker_bug"
LANGUAGES = ("python", "java", "javascript")

logger = logging.getLogger(__name__)


def language_of(category: str, default: str = "python") -> str:
    """BFCL picks the language from the category name (simple_java, simple_javascript); else `default`."""
    if "javascript" in category:
        return "javascript"
    if "java" in category:
        return "java"
    return default


def ast_match(output: str, functions: list[dict], possible_answer: list[dict] | None, category: str,
              language: str = "python", *, accept_code_fences: bool = False, python_unary_operators: bool = False,
              optimal_parallel_matching: bool = False, tree_sitter_recovery: bool = False,
              raise_checker_bugs: bool = False) -> dict:
    """Verdict `{"valid", "error_type", "errors"}` for `output` (raw model text) on one BFCL question.

    irrelevance categories: valid iff no function call decodes; relevance: valid iff at least one call decodes
    (an empty list is no call). AST categories: decode, then BFCL's checker (`check.py`). error_type is BFCL's
    own, or `bfcl:*` for what BFCL would crash on (bad ground truth, unsupported types).

    The defaults give BFCL's official verdicts. Options that accept more than BFCL does (a policy rewarded with
    them can learn outputs the official evaluation rejects): `accept_code_fences` (unwrap a ```lang fence),
    `python_unary_operators` (`+5` is 5, not -5), `optimal_parallel_matching` (a one-to-one matching of
    parallel calls where BFCL's greedy matcher gives up). `tree_sitter_recovery` approximates tree-sitter's
    error recovery on Java/JavaScript for the agreement benchmark (it accepts some outputs BFCL rejects).
    `raise_checker_bugs`: see the module docstring.
    """
    if not isinstance(category, str):
        return verdict("bfcl:bad_ground_truth", f"category is {type(category).__name__}, not str")
    options = (accept_code_fences, python_unary_operators, tree_sitter_recovery)
    if "relevance" in category:  # covers irrelevance too
        return _relevance(output, category, options)
    language = language_of(category, language)
    if not isinstance(language, str) or language not in LANGUAGES:  # the row's, not the model's: never a decode failure of the output
        return verdict("bfcl:bad_ground_truth", f"language {language!r} is not one of {', '.join(LANGUAGES)}")
    problem = _bad_question(functions, possible_answer)
    if problem:
        return verdict("bfcl:bad_ground_truth", problem)
    try:
        calls = _decode(output, language, options)
    except (DecodeError, SyntaxFailure, RecursionError, MemoryError) as exc:
        return verdict("ast_decoder:decoder_failed", f"Invalid syntax. Failed to decode AST. {exc}")
    if language != "python" and not _is_call_list(calls):  # the Python decoder only builds call lists
        return verdict("ast_decoder:decoder_wrong_output_format", "Did not output in the specified format.")
    return checked_calls_verdict(calls, functions, possible_answer, category, language, optimal_parallel_matching,
                                 raise_checker_bugs=raise_checker_bugs)


def checked_calls_verdict(calls: list[dict], functions: list[dict], possible_answer: list[dict], category: str,
                          language: str, optimal_parallel_matching: bool = False, *,
                          raise_checker_bugs: bool = False) -> dict:
    """BFCL's checker on decoded calls `[{name: {param: value}}]`, as a verdict: its own error types, values too
    big or deep to compare as `bfcl:checker_error`, and any other exception (a bug of ours) logged and scored
    `bfcl:checker_bug` unless `raise_checker_bugs`."""
    try:
        return check_calls(calls, functions, possible_answer, category, language, optimal_parallel_matching)
    except CheckFailure as failure:
        return verdict(failure.error_type, str(failure))
    except (RecursionError, ArithmeticError, MemoryError) as exc:  # values too deep or too big to compare
        return verdict("bfcl:checker_error", f"{type(exc).__name__}: {exc}")
    except Exception as exc:
        if raise_checker_bugs:
            raise
        logger.exception("BFCL checker bug on category %s (scored %s; please report it)", category, CHECKER_BUG)
        return verdict(CHECKER_BUG, f"{type(exc).__name__}: {exc}")


def _decode(output: str, language: str, options: tuple) -> list[dict]:
    fences, unary, recovery = options
    return decode(output, language, accept_code_fences=fences, python_unary_operators=unary,
                  tree_sitter_recovery=recovery)


def _relevance(output: str, category: str, options: tuple) -> dict:
    try:
        calls = _decode(output, "python", options)
        has_call = len(calls) > 0  # a Python decode is a list of {name: {...}}, never [{}]
    except (DecodeError, SyntaxFailure, RecursionError, MemoryError):
        has_call = False
    return relevance_verdict(category, has_call)


def relevance_verdict(category: str, has_call: bool) -> dict:
    """BFCL's (ir)relevance rule: an irrelevance question is valid iff no call decoded, a relevance one iff one did."""
    if "irrelevance" in category:
        if has_call:
            return verdict("irrelevance_error:decoder_success", "Decoded a function call when none was expected.")
        return verdict()
    if not has_call:
        return verdict("relevance_error:decoder_failed", "Failed to decode a function call when one was expected.")
    return verdict()


def _is_call_list(calls) -> bool:
    return type(calls) is list and all(
        type(call) is dict and len(call) == 1 and type(next(iter(call.values()))) is dict for call in calls
    )


def _bad_question(functions, possible_answer) -> str | None:
    """What is wrong with the question's function list or possible answers, or None. Checked on every call,
    as a plain loop: cheaper than the identity-keyed cache it replaced when questions do not repeat."""
    if type(functions) is not list or not functions:
        return _BAD_FUNCTIONS
    for function in functions:
        if type(function) is not dict or type(function.get("name")) is not str:
            return _BAD_FUNCTIONS
        parameters = function.get("parameters")
        if type(parameters) is not dict or type(parameters.get("properties")) is not dict:
            return _BAD_FUNCTIONS
    if type(possible_answer) is not list or not possible_answer:
        return _BAD_ANSWER
    for answer in possible_answer:
        if type(answer) is not dict or len(answer) != 1:
            return _BAD_ANSWER
        for options in answer.values():
            if type(options) is not dict:
                return _BAD_ANSWER
            for allowed in options.values():
                if type(allowed) is not list:
                    return _BAD_ANSWER
    return None


_BAD_FUNCTIONS = "functions must be a non-empty list of {name, parameters: {properties}} dicts"
_BAD_ANSWER = "possible_answer must be a non-empty list of {function: {param: [options]}} dicts"
