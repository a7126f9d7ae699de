"""BFCL's value comparisons: string standardisation, the one-level type check, dict and list-of-dict checks.

>>> standardize("April 1, 2024") == standardize("april 1 2024")
True
"""

from __future__ import annotations

import re
from functools import lru_cache

_STANDARDIZE = re.compile(r"[ ,./\-_*^]")


def standardize(text: str) -> str:
    """BFCL's string normalisation. Short strings are cached: answers and typical values repeat across samples.

    >>> standardize("April 1, 2024") == standardize("april 1 2024")
    True
    """
    return _standardize_short(text) if len(text) <= 256 else _STANDARDIZE.sub("", text).lower().replace("'", '"')


@lru_cache(maxsize=1 << 15)
def _standardize_short(text: str) -> str:
    return _STANDARDIZE.sub("", text).lower().replace("'", '"')


def _std(value):
    return standardize(value) if type(value) is str else value


BAD_GROUND_TRUTH = "bfcl:bad_ground_truth"


class CheckFailure(Exception):
    """Ends a check with a verdict (raised deep inside the value checks)."""

    def __init__(self, error_type: str, message: str):
        super().__init__(message)
        self.error_type = error_type


def bad_ground_truth(message: str) -> CheckFailure:
    """The failure for a question whose schema or possible answers cannot be checked (a data bug, not the model's):
    raised where the checker reads the part that is wrong, so that any other exception is a checker bug."""
    return CheckFailure(BAD_GROUND_TRUTH, message)


def verdict(error_type: str | None = None, *errors: str) -> dict:
    return {"valid": error_type is None, "error_type": error_type, "errors": list(errors)}


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
        if type(option) is not dict or not all(type(options) is list for options in option.values()):
            raise bad_ground_truth(f"a dict parameter's possible answer must be a dict of option lists, got {option!r}")
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
        if not isinstance(option, (list, str)):  # "" (the optional marker) is compared as BFCL does, by length
            raise bad_ground_truth(f"a list-of-dicts parameter's possible answer must be a list, got {option!r}")
        if len(value) != len(option):
            result = verdict("value_error:list_dict_count", "Wrong number of dictionaries in the list.")
            continue
        for item, expected in zip(value, option, strict=True):
            result = _dict_check(item, [expected])
            if result is not None:
                break
        else:
            return None
    return result
