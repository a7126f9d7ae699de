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
"""

from __future__ import annotations

from agentic_verl.rewards.bfcl._tokens import SyntaxFailure
from agentic_verl.rewards.bfcl.check import CheckFailure, check_calls, verdict
from agentic_verl.rewards.bfcl.decode import DecodeError, decode

AST_CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
                  "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")  # fmt: skip
RELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance", "live_relevance")


def language_of(category: str, default: str = "python") -> str:
    """BFCL picks the language from the category name (simple_java, simple_javascript); else `default`."""
    if "javascript" in category:
        return "javascript"
    if "java" in category:
        return "java"
    return default


def ast_match(output: str, functions: list[dict], possible_answer: list[dict] | None, category: str,
              language: str = "python", *, bfcl_quirks: bool = False) -> dict:
    """Verdict `{"valid", "error_type", "errors"}` for `output` (raw model text) on one BFCL question.

    irrelevance categories: valid iff no function call decodes; relevance: valid iff at least one call decodes
    (an empty list is no call). AST categories: decode, then BFCL's checker (`check.py`). error_type is BFCL's
    own, or `bfcl:*` for what BFCL would crash on (bad ground truth, unsupported types). `bfcl_quirks=True`
    reproduces BFCL's documented mistakes (greedy parallel matching, unary operators negate, language-tagged
    fences kept); only the agreement benchmark uses it, to attribute each difference to a documented one.
    """
    if not isinstance(category, str):
        return verdict("bfcl:bad_ground_truth", f"category is {type(category).__name__}, not str")
    if "relevance" in category:  # covers irrelevance too
        return _relevance(output, category, bfcl_quirks)
    language = language_of(category, language)
    problem = _checked_question(functions, possible_answer)
    if problem:
        return verdict("bfcl:bad_ground_truth", problem)
    try:
        calls = decode(output, language, bfcl_quirks)
    except (DecodeError, SyntaxFailure, RecursionError, MemoryError) as exc:
        return verdict("ast_decoder:decoder_failed", f"Invalid syntax. Failed to decode AST. {exc}")
    if language != "python" and not _is_call_list(calls):  # the Python decoder only builds call lists
        return verdict("ast_decoder:decoder_wrong_output_format", "Did not output in the specified format.")
    try:
        return check_calls(calls, functions, possible_answer, category, language, greedy=bfcl_quirks)
    except CheckFailure as failure:
        return verdict(failure.error_type, str(failure))
    except (RecursionError, ArithmeticError, MemoryError) as exc:
        return verdict("bfcl:checker_error", f"{type(exc).__name__}: {exc}")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:  # malformed schema or answer
        return verdict("bfcl:bad_ground_truth", f"{type(exc).__name__}: {exc}")


def _relevance(output: str, category: str, bfcl_quirks: bool = False) -> dict:
    try:
        calls = decode(output, "python", bfcl_quirks)
        has_call = len(calls) > 0  # a Python decode is a list of {name: {...}}, never [{}]
    except (DecodeError, SyntaxFailure, RecursionError, MemoryError):
        has_call = False
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


_VALIDATED: dict[tuple[int, int], tuple] = {}  # (id(functions), id(answer)) -> (functions, answer, problem)


def _checked_question(functions, possible_answer) -> str | None:
    """`_bad_question`, remembered per question object: an RL step scores many samples of the same question.
    The entry holds the objects themselves, so their ids cannot be reused while cached."""
    key = (id(functions), id(possible_answer))
    hit = _VALIDATED.get(key)
    if hit is not None and hit[0] is functions and hit[1] is possible_answer:
        return hit[2]
    problem = _bad_question(functions, possible_answer)
    if len(_VALIDATED) >= 4096:
        _VALIDATED.clear()
    _VALIDATED[key] = (functions, possible_answer, problem)
    return problem


def _bad_question(functions, possible_answer) -> str | None:
    if type(functions) is not list or not functions or not all(
        type(f) is dict and type(f.get("name")) is str and type(f.get("parameters")) is dict
        and type(f["parameters"].get("properties")) is dict
        for f in functions
    ):
        return "functions must be a non-empty list of {name, parameters: {properties}} dicts"
    if type(possible_answer) is not list or not possible_answer or not all(
        type(a) is dict and len(a) == 1 and type(next(iter(a.values()))) is dict
        and all(type(options) is list for options in next(iter(a.values())).values())
        for a in possible_answer
    ):
        return "possible_answer must be a non-empty list of {function: {param: [options]}} dicts"
    return None
