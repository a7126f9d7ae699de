"""BFCL's AST checker semantics over decoded calls `[{name: {param: value}}]`.

A verdict is `{"valid": bool, "error_type": str | None, "errors": [str]}`, where error_type is BFCL's own
(`simple_function_checker:missing_required`, `type_error:simple`, `value_error:string`, ...).

Rules (BFCL's): the call's name must match; every required parameter is present; no parameter outside the
schema or the possible answer; a parameter the model leaves out must have "" among its possible answers; values
are type-checked (Python: int accepted for float, tuple for array/tuple; Java/JavaScript values are converted
from source text by type first, see `convert.py`), then compared: strings after `standardize` (lowercase, no
spaces or `,./-_*^`, `'` -> `"`), lists element-wise, dicts key by key, anything else by `in`.

Parallel calls are matched to the possible answers as BFCL matches them: for each possible answer in turn, the
first unused call that fits (greedy), which can reject an output that has a valid one-to-one assignment.
`optimal_matching=True` (the `bfcl_ast` option `optimal_parallel_matching`) finds such an assignment instead
(maximum bipartite matching); see docs/bfcl.md.

Every check works on the question objects as given, without building per-question state: that is as fast as
BFCL's own checker when every question is new (an evaluation), and the string normalisation is cached for the
values and answers that repeat (an RL step scores many samples of each question).

>>> functions = [{"name": "t", "parameters": {"required": ["tz"], "properties": {"tz": {"type": "string"}}}}]
>>> answer = [{"t": {"tz": ["UTC", "CET"]}}, {"t": {"tz": ["UTC"]}}]
>>> check_calls([{"t": {"tz": "UTC"}}, {"t": {"tz": "CET"}}], functions, answer, "parallel")["error_type"]
'parallel_function_checker_no_order:cannot_find_match'
>>> check_calls([{"t": {"tz": "UTC"}}, {"t": {"tz": "CET"}}], functions, answer, "parallel", optimal_matching=True)
{'valid': True, 'error_type': None, 'errors': []}
"""

from __future__ import annotations

from agentic_verl.rewards.bfcl._compare import (
    BAD_GROUND_TRUTH,
    CheckFailure,
    _answer_type,
    _dict_check,
    _list_of_dicts_check,
    _std,
    _type_check,
    bad_ground_truth,
    verdict,
)
from agentic_verl.rewards.bfcl.convert import JAVA_TYPES, JS_TYPES, NESTED_TYPES, UnsupportedType, java_value, js_value

PYTHON_TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
                "dict": dict, "any": str}  # fmt: skip
_PYTHON_NESTED = ("array", "tuple")
_TYPES = {"python": PYTHON_TYPES, "java": JAVA_TYPES, "javascript": JS_TYPES}
_NESTED = {"python": _PYTHON_NESTED, "java": NESTED_TYPES, "javascript": NESTED_TYPES}
_WRONG_COUNT = {"parallel": "parallel_function_checker_no_order:wrong_count",
                "multiple": "multiple_function_checker:wrong_count",
                "simple": "simple_function_checker:wrong_count"}  # fmt: skip


def check_calls(calls: list[dict], functions: list[dict], possible_answer: list[dict], category: str,
                language: str = "python", optimal_matching: bool = False) -> dict:
    """Dispatch like BFCL: "parallel" in category -> order-free matching, "multiple" -> one call of the
    expected function, else simple (exactly one call, of the first function)."""
    kind = "parallel" if "parallel" in category else "multiple" if "multiple" in category else "simple"
    if len(calls) != len(possible_answer) if kind != "simple" else len(calls) != 1:
        return verdict(_WRONG_COUNT[kind], "Wrong number of functions.")
    try:
        if kind == "parallel":
            return _check_parallel(calls, functions, possible_answer, language, optimal_matching)
        answer = possible_answer[0]
        description = functions[0] if kind == "simple" else _find(functions, next(iter(answer)))
        return _check_call(description, answer, calls[0], language) or verdict()
    except CheckFailure as failure:
        return verdict(failure.error_type, str(failure))


def check_call(description: dict, call: dict, answer: dict, language: str = "python") -> dict:
    """One decoded call `{name: {param: value}}` against one possible answer `{name: {param: [options]}}`."""
    try:
        return _check_call(description, answer, call, language) or verdict()
    except CheckFailure as failure:
        return verdict(failure.error_type, str(failure))


def _find(functions: list[dict], name: str) -> dict:
    for function in functions:
        if function["name"] == name:
            return function
    raise bad_ground_truth(f"no function named {name!r} in the function list")


def _check_parallel(calls, functions, possible_answer, language, optimal_matching) -> dict:
    n = len(calls)
    descriptions: list = [None] * n
    memo: dict[tuple[int, int], bool] = {}

    def fits(i: int, j: int) -> bool:
        ok = memo.get((i, j))
        if ok is None:
            try:
                description = descriptions[i]
                if description is None:
                    description = descriptions[i] = _find(functions, next(iter(possible_answer[i])))
                ok = _check_call(description, possible_answer[i], calls[j], language) is None
            except CheckFailure as failure:
                if failure.error_type == BAD_GROUND_TRUTH:
                    raise  # the question is wrong whichever call is tried: its own verdict, not "no match"
                ok = False
            memo[i, j] = ok
        return ok

    # Greedy (BFCL's matcher). With optimal_matching, when greedy gets stuck, a one-to-one matching, unless the
    # answer greedy got stuck on fits no call at all (the usual failure: a wrong value).
    matched, stuck = _greedy(fits, n)
    if matched is None and optimal_matching and any(fits(stuck, j) for j in range(n)):
        matched = _bipartite(fits, n)
    if matched is not None:
        return verdict()
    return verdict("parallel_function_checker_no_order:cannot_find_match",
                   "Could not match every possible answer to a distinct call.")


def _greedy(fits, n: int):
    """For each possible answer in turn, the first unused call that fits (BFCL's no-order matcher).
    Returns (the calls used, None), or (None, the answer no unused call fits)."""
    used: set[int] = set()
    for i in range(n):
        for j in range(n):
            if j not in used and fits(i, j):
                used.add(j)
                break
        else:
            return None, i
    return used, None


def _bipartite(fits, n: int):
    """Kuhn's augmenting paths: a perfect matching of possible answers to calls, or None."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in range(n):
            if j not in seen and fits(i, j):
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return owner if all(augment(i, set()) for i in range(n)) else None


def _check_call(description: dict, answer: dict, call: dict, language: str) -> dict | None:
    """None when `call` fits, else the verdict (BFCL's simple_function_checker)."""
    name = description["name"]
    if name not in call:
        return verdict("simple_function_checker:wrong_func_name", f"Function name {name!r} not found in model output.")
    params = call[name]
    parameters = description["parameters"]
    required = parameters.get("required", ())
    if not isinstance(required, (list, tuple)) or not all(type(param) is str for param in required):
        raise bad_ground_truth(f"{name}: 'required' must be a list of parameter names, got {required!r}")
    for param in required:
        if param not in params:
            return verdict("simple_function_checker:missing_required", f"Missing required parameter: {param!r}.")
    properties = parameters["properties"]
    options = next(iter(answer.values()))
    for param, value in params.items():
        if param not in properties or param not in options:
            return verdict("simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}.")
        result = _check_param(param, properties[param], options[param], value, language)
        if result is not None:
            return result
    for param, allowed in options.items():
        if param not in params and "" not in allowed:
            return verdict("simple_function_checker:missing_optional",
                           f"Optional parameter {param!r} not provided and not marked as optional.")
    return None


def _declared(language: str, type_name: str):
    expected = _TYPES[language].get(type_name)
    if expected is None:
        raise CheckFailure("bfcl:unsupported_type", f"type {type_name!r} is not a BFCL {language} type")
    return expected


def _schema_type(param, schema) -> str:
    if type(schema) is not dict or type(schema.get("type")) is not str:
        raise bad_ground_truth(f"parameter {param!r}: a schema needs a 'type' string, got {schema!r}")
    return schema["type"]


def _check_param(param, schema: dict, allowed: list, value, language: str) -> dict | None:
    type_name = _schema_type(param, schema)
    expected = _declared(language, type_name)
    item_type = item_expected = None
    if type_name in _NESTED[language]:
        item_type = _schema_type(f"{param}[]", schema.get("items"))
        item_expected = _declared(language, item_type)
    if language != "python":
        if type(value) is not str:
            error = "type_error:java" if language == "java" else "type_error:js"
            return verdict(error, f"Incorrect type for parameter {param!r}. Expected type String, got "
                                  f"{type(value).__name__}.")
        try:
            convert = java_value if language == "java" else js_value
            value = convert(value, type_name, item_type) if item_type else convert(value, type_name)
        except (UnsupportedType, ValueError) as exc:
            raise CheckFailure("bfcl:unsupported_type", f"cannot convert {param!r}: {exc}") from None
    elif type_name == "tuple" and type(value) is tuple:
        value = list(value)
    elif type_name == "float" and type(value) is int and -(2**1023) < value < 2**1023:
        value = float(value)  # (BFCL raises OverflowError past float range; such an int stays an int and fails)

    if type(value) is expected and item_expected is None:  # the common case, decided without _type_check
        answer_type = _answer_type(allowed)
        is_variable = answer_type is not None and answer_type is not expected
    else:
        ok, is_variable, error_type, message = _type_check(param, value, allowed, type_name, expected, item_expected)
        if not ok:
            return verdict(error_type, message)
    if not is_variable:
        if expected is dict:
            return _dict_check(value, allowed)
        if expected is list and item_expected is dict:
            return _list_of_dicts_check(value, allowed)
        if expected is str:
            standard = _std(value)
            for option in allowed:
                if type(option) is str and _std(option) == standard:
                    return None
            return verdict("value_error:string", f"Invalid value for parameter {param!r}: {value!r}. "
                                                 f"Expected one of {allowed}. Case insensitive.")
        if expected is list:
            # every option is standardised first, as in BFCL (where an option that is not a sequence raises)
            if not all(isinstance(option, (list, tuple, str, dict)) for option in allowed):
                raise bad_ground_truth(f"parameter {param!r}: a list parameter's possible answers must be sequences, "
                                       f"got {allowed!r}")
            if [_std(v) for v in value] in [[_std(v) for v in option] for option in allowed]:
                return None
            return verdict("value_error:list/tuple", f"Invalid value for parameter {param!r}: {value!r}. "
                                                     f"Expected one of {allowed}.")
    if value not in allowed:
        return verdict("value_error:others", f"Invalid value for parameter {param!r}: {value!r}. "
                                             f"Expected one of {allowed}.")
    return None
