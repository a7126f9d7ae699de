"""The `bfcl_ast` reward component: 1.0 when BFCL's AST checker would accept the output, else 0.0.

>>> import json
>>> functions = [{"name": "add", "parameters": {"type": "dict", "required": ["a", "b"],
...               "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}]
>>> answer = json.dumps([{"add": {"a": [1], "b": [2]}}])
>>> bfcl_ast("[add(a=1, b=2)]", answer, {"functions": functions, "category": "simple_python"})["score"]
1.0
>>> bfcl_ast("[add(a=1)]", answer, {"functions": functions, "category": "simple_python"})["error_type"]
'bfcl:missing_required'
>>> fenced = "```python\\n[add(a=1, b=2)]\\n```"  # the official evaluation cannot decode this
>>> bfcl_ast(fenced, answer, {"functions": functions})["score"], bfcl_ast(fenced, answer, {"functions": functions},
...     accept_code_fences=True)["score"]
(0.0, 1.0)
"""

from __future__ import annotations

import json
from functools import lru_cache

from agentic_verl.rewards.bfcl.match import ast_match
from agentic_verl.rewards.bfcl.native_calls import native_calls_of, native_match
from agentic_verl.rewards.registry import REWARDS

# BFCL's error type -> ours (namespaced, stable, few enough to aggregate as metrics).
_ERROR_TYPES = {
    "simple_function_checker:wrong_func_name": "bfcl:wrong_func_name",
    "simple_function_checker:missing_required": "bfcl:missing_required",
    "simple_function_checker:unexpected_param": "bfcl:unexpected_param",
    "simple_function_checker:missing_optional": "bfcl:missing_optional",
    "simple_function_checker:wrong_count": "bfcl:wrong_count",
    "multiple_function_checker:wrong_count": "bfcl:wrong_count",
    "parallel_function_checker_no_order:wrong_count": "bfcl:wrong_count",
    "parallel_function_checker_no_order:cannot_find_match": "bfcl:no_parallel_match",
    "ast_decoder:decoder_failed": "bfcl:decode_failed",
    "ast_decoder:decoder_wrong_output_format": "bfcl:wrong_format",
    "irrelevance_error:decoder_success": "bfcl:call_when_irrelevant",
    "relevance_error:decoder_failed": "bfcl:no_call",
}


def error_type_of(bfcl_error_type: str | None) -> str | None:
    """Namespace a BFCL error type: type_error:* -> bfcl:type_error, value_error:* / *dict_checker:* -> bfcl:value_error."""
    if bfcl_error_type is None:
        return None
    if bfcl_error_type in _ERROR_TYPES:
        return _ERROR_TYPES[bfcl_error_type]
    if bfcl_error_type.startswith(("bfcl:", "fc:")):  # ours already (fc: a native output the parser failed on)
        return bfcl_error_type
    if bfcl_error_type.startswith("type_error:"):
        return "bfcl:type_error"
    return "bfcl:value_error"


@lru_cache(maxsize=4096)
def _loads(text: str):
    return json.loads(text)


_PLAIN: dict[int, tuple] = {}  # id(object) -> (object, plain copy); holds the object so its id stays unique


def _json(value):
    """Ground truth / functions as plain lists and dicts: a JSON string (parquet columns often hold one) is
    parsed, numpy arrays from parquet (also nested inside dicts) become lists. Both are cached, per string and
    per object: the samples of one question (an RL step scores many) parse and convert it once."""
    if isinstance(value, str):
        return _loads(value)
    if not isinstance(value, (list, dict, tuple)) and not hasattr(value, "tolist"):
        return value
    hit = _PLAIN.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    plain = _plain(value)
    if len(_PLAIN) >= 4096:
        _PLAIN.clear()
    _PLAIN[id(value)] = (value, plain)
    return plain


def _plain(value, depth: int = 0):
    if depth > 50:
        raise ValueError("ground truth nested too deeply")
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # numpy array or scalar
    if isinstance(value, (list, tuple)):
        return [_plain(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item, depth + 1) for key, item in value.items()}
    return value


@REWARDS.register("bfcl_ast")
def bfcl_ast(solution_str, ground_truth, extra_info=None, *, category: str | None = None,
             language: str | None = None, accept_code_fences: bool = False, python_unary_operators: bool = False,
             optimal_parallel_matching: bool = False, **kwargs) -> dict:
    """Reward component: `ground_truth` is BFCL's possible-answer list (or its JSON string); `extra_info` has
    `functions` (list or JSON string), `category` and optionally `language`. Never raises on a model output
    or a malformed ground truth; a bug in the checker does raise, so the reward wrappers count it as
    `reward/bfcl_ast/exceptions` and stop a run where it keeps happening (agentic_verl.rewards.failures)
    instead of training on zeros.

    Options (YAML kwargs next to the name):
    - category (str, default None): for rows whose `extra_info` has no `category` (else simple_python).
    - language (str, default None): likewise for `language` (else taken from the category, else python).
    - accept_code_fences (bool, default False): unwrap a ```` ```python ```` fence before decoding. The official
      evaluation cannot decode such output and scores it wrong.
    - python_unary_operators (bool, default False): read `+5` as 5 and `not True` as False. The official
      decoder makes every unary operator a minus (`+5` is -5).
    - optimal_parallel_matching (bool, default False): match parallel calls one-to-one where the official
      greedy matcher gives up.
    With the defaults the score is the official BFCL verdict (docs/bfcl.md); each option accepts
    outputs the official evaluation rejects, so a policy trained with it can learn them.
    """
    # Only reading the row is guarded: ast_match judges a malformed ground truth itself (bfcl:bad_ground_truth), so
    # an exception from it is a checker bug and propagates to the reward wrappers, which count it.
    try:
        info = extra_info if isinstance(extra_info, dict) else {}
        category = info.get("category") or category or "simple_python"
        language = info.get("language") or language or "python"
        functions = _json(info.get("functions"))
        possible_answer = _json(ground_truth)
        if isinstance(possible_answer, dict) and "ground_truth" in possible_answer:
            possible_answer = possible_answer["ground_truth"]
    except (ValueError, TypeError, AttributeError, RecursionError) as exc:  # unreadable JSON, nonsense extra_info
        result = {"valid": False, "error_type": "bfcl:bad_ground_truth", "errors": [f"{type(exc).__name__}: {exc}"]}
    else:
        native = native_calls_of(info)
        if native is not None:  # the function_call loop read a native output with verl's ToolParser
            result = native_match(native, functions, possible_answer, category)
            return _scored(result)
        result = ast_match(solution_str, functions, possible_answer, category, language,
                           accept_code_fences=bool(accept_code_fences),
                           python_unary_operators=bool(python_unary_operators),
                           optimal_parallel_matching=bool(optimal_parallel_matching), raise_checker_bugs=True)
    return _scored(result)


def _scored(result: dict) -> dict:
    return {
        "score": 1.0 if result["valid"] else 0.0,
        "error_type": error_type_of(result["error_type"]),
        "bfcl_error_type": result["error_type"],
        "bfcl_valid": bool(result["valid"]),
    }
