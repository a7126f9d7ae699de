"""BFCL's AST checker semantics over decoded calls `[{name: {param: value}}]`.

A verdict is `{"valid": bool, "error_type": str | None, "errors": [str]}`, where error_type is BFCL's own
(`simple_function_checker:missing_required`, `type_error:simple`, `value_error:string`, ...).

Rules (BFCL's): the call's name must match; every required parameter is present; no parameter outside the
schema or the possible answer; a parameter the model leaves out must have "" among its possible answers; values
are type-checked (Python: int accepted for float, tuple for array/tuple; Java/JavaScript values are converted
from source text by type first, see `convert.py`), then compared: strings after `standardize` (lowercase, no
spaces or `,./-_*^`, `'` -> `"`), lists element-wise, dicts key by key, anything else by `in`.

One difference from BFCL: parallel calls are matched to the possible answers by maximum bipartite matching,
where BFCL takes, for each possible answer in turn, the first unused call that fits (greedy), and so can reject
an output that has a valid one-to-one assignment. See the README section "BFCL AST match".
"""

from __future__ import annotations

import re
from functools import lru_cache

from agentic_verl.rewards.bfcl.convert import JAVA_TYPES, JS_TYPES, NESTED_TYPES, UnsupportedType, java_value, js_value

PYTHON_TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
                "dict": dict, "any": str}  # fmt: skip
_PYTHON_NESTED = ("array", "tuple")
_STANDARDIZE = re.compile(r"[ ,./\-_*^]")


class CheckFailure(Exception):
    """Ends a check with a verdict (raised deep inside the value checks)."""

    def __init__(self, error_type: str, message: str):
        super().__init__(message)
        self.error_type = error_type


@lru_cache(maxsize=1 << 16)
def standardize(text: str) -> str:
    """BFCL's string normalisation (cached: possible answers repeat across every sample of a question).

    >>> standardize("April 1, 2024") == standardize("april 1 2024")
    True
    """
    return _STANDARDIZE.sub("", text).lower().replace("'", '"')


def _std(value):
    return standardize(value) if type(value) is str else value


def verdict(error_type: str | None = None, *errors: str) -> dict:
    return {"valid": error_type is None, "error_type": error_type, "errors": list(errors)}


def check_calls(calls: list[dict], functions: list[dict], possible_answer: list[dict], category: str,
                language: str = "python", greedy: bool = False) -> dict:
    """Dispatch like BFCL: "parallel" in category -> order-free matching, "multiple" -> one call of the
    expected function, else simple (exactly one call)."""
    if "parallel" in category:
        return _check_parallel(calls, functions, possible_answer, language, greedy)
    if "multiple" in category:
        if len(calls) != len(possible_answer):
            return verdict("multiple_function_checker:wrong_count", "Wrong number of functions.")
        expected = next(iter(possible_answer[0]))
        return check_call(_find(functions, expected), calls[0], possible_answer[0], language)
    if len(calls) != 1:
        return verdict("simple_function_checker:wrong_count", "Wrong number of functions.")
    return check_call(functions[0], calls[0], possible_answer[0], language)


def _find(functions: list[dict], name: str) -> dict:
    for function in functions:
        if function["name"] == name:
            return function
    raise CheckFailure("bfcl:bad_ground_truth", f"no function named {name!r} in the function list")


def _check_parallel(calls, functions, possible_answer, language, greedy) -> dict:
    if len(calls) != len(possible_answer):
        return verdict("parallel_function_checker_no_order:wrong_count", "Wrong number of functions.")
    descriptions = [_find(functions, next(iter(answer))) for answer in possible_answer]
    fits = [[check_call(descriptions[i], call, answer, language)["valid"] for call in calls]
            for i, answer in enumerate(possible_answer)]  # fmt: skip
    matched = _greedy(fits) if greedy else _bipartite(fits)
    if matched is not None:
        return verdict()
    return verdict("parallel_function_checker_no_order:cannot_find_match",
                   "Could not match every possible answer to a distinct call.")


def _greedy(fits: list[list[bool]]):
    used: set[int] = set()
    for row in fits:
        choice = next((j for j, ok in enumerate(row) if ok and j not in used), None)
        if choice is None:
            return None
        used.add(choice)
    return used


def _bipartite(fits: list[list[bool]]):
    """Kuhn's augmenting paths: a perfect matching of possible answers to calls, or None."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j, ok in enumerate(fits[i]):
            if ok and j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return owner if all(augment(i, set()) for i in range(len(fits))) else None


def check_call(description: dict, call: dict, answer: dict, language: str = "python") -> dict:
    """One decoded call `{name: {param: value}}` against one possible answer `{name: {param: [options]}}`."""
    try:
        return _check_call(description, call, answer, language)
    except CheckFailure as failure:
        return verdict(failure.error_type, str(failure))


def _check_call(description: dict, call: dict, answer: dict, language: str) -> dict:
    options = next(iter(answer.values()))
    name = description["name"]
    properties = description["parameters"]["properties"]
    if name not in call:
        return verdict("simple_function_checker:wrong_func_name", f"Function name {name!r} not found in model output.")
    params = call[name]
    for param in description["parameters"].get("required", ()):
        if param not in params:
            return verdict("simple_function_checker:missing_required", f"Missing required parameter: {param!r}.")
    for param, value in params.items():
        if param not in properties or param not in options:
            return verdict("simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}.")
        result = _check_param(param, value, properties[param], options[param], language)
        if result is not None:
            return result
    for param, allowed in options.items():
        if param not in params and "" not in allowed:
            return verdict("simple_function_checker:missing_optional",
                           f"Optional parameter {param!r} not provided and not marked as optional.")
    return verdict()


def _declared(language: str, type_name: str):
    table = PYTHON_TYPES if language == "python" else JAVA_TYPES if language == "java" else JS_TYPES
    if type_name not in table:
        raise CheckFailure("bfcl:unsupported_type", f"type {type_name!r} is not a BFCL {language} type")
    return table[type_name]


def _check_param(param, value, schema: dict, allowed: list, language: str) -> dict | None:
    type_name = schema["type"]
    expected = _declared(language, type_name)
    item_expected = None
    if language == "python":
        if type_name in _PYTHON_NESTED:
            item_expected = _declared(language, schema["items"]["type"])
    else:
        if type(value) is not str:
            error = "type_error:java" if language == "java" else "type_error:js"
            return verdict(error, f"Incorrect type for parameter {param!r}. Expected type String, got "
                                  f"{type(value).__name__}.")
        try:
            if type_name in NESTED_TYPES:
                item_type = schema["items"]["type"]
                item_expected = _declared(language, item_type)
                value = (java_value if language == "java" else js_value)(value, type_name, item_type)
            else:
                value = (java_value if language == "java" else js_value)(value, type_name)
        except (UnsupportedType, ValueError) as exc:
            raise CheckFailure("bfcl:unsupported_type", f"cannot convert {param!r}: {exc}") from None
    if type_name == "tuple" and type(value) is tuple:
        value = list(value)
    if language == "python" and type_name == "float" and type(value) is int:
        value = float(value)

    ok, is_variable, error_type, message = _type_check(param, value, allowed, type_name, expected, item_expected)
    if not ok:
        return verdict(error_type, message)
    if not is_variable:
        if expected is dict:
            return _dict_check(value, allowed)
        if expected is list and item_expected is dict:
            return _list_of_dicts_check(value, allowed)
        if expected is str:
            if _std(value) not in [standardize(a) for a in allowed if type(a) is str]:
                return verdict("value_error:string", f"Invalid value for parameter {param!r}: {value!r}. "
                                                     f"Expected one of {allowed}. Case insensitive.")
            return None
        if expected is list:
            output = [_std(v) for v in value]
            if output not in [[_std(v) for v in option] for option in allowed]:
                return verdict("value_error:list/tuple", f"Invalid value for parameter {param!r}: {value!r}. "
                                                         f"Expected one of {allowed}.")
            return None
    if value not in allowed:
        return verdict("value_error:others", f"Invalid value for parameter {param!r}: {value!r}. "
                                             f"Expected one of {allowed}.")
    return None


def _answer_type(allowed: list):
    for option in allowed:
        if option != "":
            return type(option)
    return None


def _type_check(param, value, allowed, type_name, expected, item_expected):
    """BFCL's type check, one level of nesting. Returns (ok, is_variable, error_type, message).

    A value whose type differs from the declared one is still accepted when it has the type of the possible
    answers (BFCL's "variable" case: a string naming a variable where a dict was declared)."""
    answer_type = _answer_type(allowed)
    is_variable = answer_type is not None and answer_type is not expected
    nested_failed = False
    if type(value) is expected:
        if item_expected is None:
            return True, is_variable, None, ""
        for option in allowed:
            fits = True
            if type(option) is list:
                for item in value:
                    if not _type_check(param, item, option, "", item_expected, None)[0]:
                        fits = False
                        break
            if fits:
                return True, is_variable, None, ""
        nested_failed = True
    if answer_type is not None and type(value) is answer_type:
        if nested_failed:
            return False, True, "type_error:nested", f"Nested type checking failed for parameter {param!r}."
        return True, True, None, ""
    return False, False, "type_error:simple", (f"Incorrect type for parameter {param!r}. Expected type "
                                               f"{type_name}, got {type(value).__name__}. Parameter value: {value!r}.")


def _dict_check(value: dict, allowed: list) -> dict | None:
    result = verdict("dict_checker:unclear")
    for option in allowed:
        if option == "":
            continue
        result = None
        for key, item in value.items():
            if key not in option:
                result = verdict("value_error:dict_key", f"Unexpected dict key parameter: {key!r}.")
                break
            if _std(item) not in [_std(o) for o in option[key]]:
                result = verdict("value_error:dict_value", f"Invalid value for dict key {key!r}: {item!r}.")
                break
        for key, options in option.items():  # runs even after a mismatch, as in BFCL (last error wins)
            if key not in value and "" not in options:
                result = verdict("value_error:dict_key", f"Missing dict key parameter: {key!r}.")
                break
        if result is None:
            return None
    return result


def _list_of_dicts_check(value: list, allowed: list) -> dict | None:
    result = verdict("list_dict_checker:unclear")
    for option in allowed:
        if len(value) != len(option):
            result = verdict("value_error:list_dict_count", "Wrong number of dictionaries in the list.")
            continue
        for item, expected in zip(value, option):
            result = _dict_check(item, [expected])
            if result is not None:
                break
        else:
            return None
    return result
