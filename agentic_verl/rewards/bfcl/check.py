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

>>> functions = [{"name": "t", "parameters": {"required": ["tz"], "properties": {"tz": {"type": "string"}}}}]
>>> answer = [{"t": {"tz": ["UTC", "CET"]}}, {"t": {"tz": ["UTC"]}}]
>>> check_calls([{"t": {"tz": "UTC"}}, {"t": {"tz": "CET"}}], functions, answer, "parallel")["valid"]
True
>>> check_calls([{"t": {"tz": "UTC"}}, {"t": {"tz": "CET"}}], functions, answer, "parallel", greedy=True)["valid"]
False
"""

from __future__ import annotations

from agentic_verl.rewards.bfcl._compare import (
    _answer_type,
    _dict_check,
    _list_of_dicts_check,
    _std,
    _type_check,
    standardize,
    verdict,
)
from agentic_verl.rewards.bfcl.convert import JAVA_TYPES, JS_TYPES, NESTED_TYPES, UnsupportedType, java_value, js_value

PYTHON_TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
                "dict": dict, "any": str}  # fmt: skip
_PYTHON_NESTED = ("array", "tuple")


class CheckFailure(Exception):
    """Ends a check with a verdict (raised deep inside the value checks)."""

    def __init__(self, error_type: str, message: str):
        super().__init__(message)
        self.error_type = error_type


def check_calls(calls: list[dict], functions: list[dict], possible_answer: list[dict], category: str,
                language: str = "python", greedy: bool = False) -> dict:
    """Dispatch like BFCL: "parallel" in category -> order-free matching, "multiple" -> one call of the
    expected function, else simple (exactly one call)."""
    kind = "parallel" if "parallel" in category else "multiple" if "multiple" in category else "simple"
    if len(calls) != len(possible_answer) if kind != "simple" else len(calls) != 1:
        checker = {"parallel": "parallel_function_checker_no_order", "multiple": "multiple_function_checker",
                   "simple": "simple_function_checker"}[kind]  # fmt: skip
        return verdict(f"{checker}:wrong_count", "Wrong number of functions.")
    specs = _question_specs(functions, possible_answer, language, kind)
    if kind == "parallel":
        return _check_parallel(calls, specs, greedy)
    return _checked(specs[0], calls[0]) or verdict()




def _checked(spec, call: dict) -> dict | None:
    """None when `call` fits `spec`, else the verdict; a CheckFailure becomes a verdict."""
    try:
        if isinstance(spec, CheckFailure):
            raise spec
        return _check_call(spec, call)
    except CheckFailure as failure:
        return verdict(failure.error_type, str(failure))


def _find(functions: list[dict], name: str) -> dict:
    for function in functions:
        if function["name"] == name:
            return function
    raise CheckFailure("bfcl:bad_ground_truth", f"no function named {name!r} in the function list")


_SPECS: dict[tuple, tuple] = {}  # (id(functions), id(answer), language, kind) -> (functions, answer, specs)


def _question_specs(functions: list[dict], possible_answer: list[dict], language: str, kind: str) -> list:
    """One _CallSpec (or the CheckFailure to report) per possible answer, computed once per question: an RL
    step scores many samples of each question. The cache entry holds the objects themselves, so their ids
    cannot be reused while it lives."""
    key = (id(functions), id(possible_answer), language, kind)
    hit = _SPECS.get(key)
    if hit is not None and hit[0] is functions and hit[1] is possible_answer:
        return hit[2]
    specs = []
    for answer in possible_answer if kind == "parallel" else possible_answer[:1]:
        try:
            description = functions[0] if kind == "simple" else _find(functions, next(iter(answer)))
            specs.append(_CallSpec(description, answer, language))
        except CheckFailure as failure:
            specs.append(failure)
    if len(_SPECS) >= 4096:
        _SPECS.clear()
    _SPECS[key] = (functions, possible_answer, specs)
    return specs


def _check_parallel(calls, specs, greedy) -> dict:
    n = len(calls)
    memo: dict[tuple[int, int], bool] = {}

    def fits(i: int, j: int) -> bool:
        ok = memo.get((i, j))
        if ok is None:
            ok = memo[i, j] = _checked(specs[i], calls[j]) is None
        return ok

    # Greedy first (BFCL's matcher, and enough for almost every output); if it fails, a one-to-one matching,
    # unless the answer greedy got stuck on fits no call at all (the usual failure: a wrong value).
    matched, stuck = _greedy(fits, n)
    if matched is None and not greedy and any(fits(stuck, j) for j in range(n)):
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


def check_call(description: dict, call: dict, answer: dict, language: str = "python") -> dict:
    """One decoded call `{name: {param: value}}` against one possible answer `{name: {param: [options]}}`."""
    try:
        return _check_call(_CallSpec(description, answer, language), call) or verdict()
    except CheckFailure as failure:
        return verdict(failure.error_type, str(failure))


def _check_call(spec: _CallSpec, call: dict) -> dict | None:
    name = spec.name
    if name not in call:
        return verdict("simple_function_checker:wrong_func_name", f"Function name {name!r} not found in model output.")
    params = call[name]
    for param in spec.required:
        if param not in params:
            return verdict("simple_function_checker:missing_required", f"Missing required parameter: {param!r}.")
    for param, value in params.items():
        param_spec = spec.param(param)
        if param_spec is None:
            return verdict("simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}.")
        result = _check_param(param_spec, value)
        if result is not None:
            return result
    for param in spec.must_give:
        if param not in params:
            return verdict("simple_function_checker:missing_optional",
                           f"Optional parameter {param!r} not provided and not marked as optional.")
    return None


class _CallSpec:
    """What one (function description, possible answer) pair needs at check time, computed once per question."""

    __slots__ = ("name", "properties", "options", "required", "must_give", "language", "_params")

    def __init__(self, description: dict, answer: dict, language: str):
        self.name = description["name"]
        self.properties = description["parameters"]["properties"]
        self.options = next(iter(answer.values()))
        self.required = tuple(description["parameters"].get("required", ()))
        self.must_give = tuple(param for param, allowed in self.options.items() if "" not in allowed)
        self.language = language
        self._params: dict = {}

    def param(self, param):
        """The spec of a parameter that is in both the schema and the answer, else None (unexpected)."""
        spec = self._params.get(param)
        if spec is None:
            if param not in self.properties or param not in self.options:
                return None
            spec = self._params[param] = _ParamSpec(param, self.properties[param], self.options[param], self.language)
        return spec


class _ParamSpec:
    __slots__ = ("name", "schema", "allowed", "language", "type_name", "expected", "item_type", "item_expected",
                 "answer_type", "is_variable", "_strings", "_lists")  # fmt: skip

    def __init__(self, name, schema: dict, allowed: list, language: str):
        self.name, self.schema, self.allowed, self.language = name, schema, allowed, language
        self.type_name = schema["type"]
        self.expected = self.item_type = self.item_expected = None
        self.answer_type = _answer_type(allowed)
        self.is_variable = False
        self._strings = self._lists = None

    def resolve(self) -> None:
        """Declared types, looked up when the parameter is first used (an unknown type fails only then)."""
        language, type_name = self.language, self.type_name
        self.expected = _declared(language, type_name)
        if language == "python":
            if type_name in _PYTHON_NESTED:
                self.item_type = self.schema["items"]["type"]
                self.item_expected = _declared(language, self.item_type)
        elif type_name in NESTED_TYPES:
            self.item_type = self.schema["items"]["type"]
            self.item_expected = _declared(language, self.item_type)
        self.is_variable = self.answer_type is not None and self.answer_type is not self.expected

    def strings(self) -> frozenset:
        if self._strings is None:
            self._strings = frozenset(standardize(a) for a in self.allowed if type(a) is str)
        return self._strings

    def lists(self) -> list:
        if self._lists is None:
            self._lists = [[_std(v) for v in option] for option in self.allowed]
        return self._lists


def _declared(language: str, type_name: str):
    table = PYTHON_TYPES if language == "python" else JAVA_TYPES if language == "java" else JS_TYPES
    if type_name not in table:
        raise CheckFailure("bfcl:unsupported_type", f"type {type_name!r} is not a BFCL {language} type")
    return table[type_name]


def _check_param(spec: _ParamSpec, value) -> dict | None:
    if spec.expected is None:
        spec.resolve()
    param, type_name, expected, item_expected = spec.name, spec.type_name, spec.expected, spec.item_expected
    language, allowed = spec.language, spec.allowed
    if language != "python":
        if type(value) is not str:
            error = "type_error:java" if language == "java" else "type_error:js"
            return verdict(error, f"Incorrect type for parameter {param!r}. Expected type String, got "
                                  f"{type(value).__name__}.")
        try:
            convert = java_value if language == "java" else js_value
            value = convert(value, type_name, spec.item_type) if spec.item_type else convert(value, type_name)
        except (UnsupportedType, ValueError) as exc:
            raise CheckFailure("bfcl:unsupported_type", f"cannot convert {param!r}: {exc}") from None
    elif type_name == "tuple" and type(value) is tuple:
        value = list(value)
    elif type_name == "float" and type(value) is int and -(2**1023) < value < 2**1023:
        value = float(value)  # (BFCL raises OverflowError past float range; such an int stays an int and fails)

    if type(value) is expected and item_expected is None:  # the common case, decided without _type_check
        is_variable = spec.is_variable
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
            if _std(value) not in spec.strings():
                return verdict("value_error:string", f"Invalid value for parameter {param!r}: {value!r}. "
                                                     f"Expected one of {allowed}. Case insensitive.")
            return None
        if expected is list:
            if [_std(v) for v in value] not in spec.lists():
                return verdict("value_error:list/tuple", f"Invalid value for parameter {param!r}: {value!r}. "
                                                         f"Expected one of {allowed}.")
            return None
    if value not in allowed:
        return verdict("value_error:others", f"Invalid value for parameter {param!r}: {value!r}. "
                                             f"Expected one of {allowed}.")
    return None
