"""bfcl-eval's multi-turn machinery, as the generator uses it (runs in `.venv-bfcl`; imported, never copied):
simulator instances loaded from an `initial_config`, the function docs of a class, BFCL's executor for gold calls
and its `multi_turn_checker` for a trajectory's verdict.

bfcl-eval keeps the executor's instances in module globals named after a "model name" and the entry id; every run
here uses a model name of its own and removes those globals afterwards (`isolated`), so runs never share state.
bfcl-eval's executor evaluates call strings: the strings given to it are the generator's own `render_call` output
(a method name and literal arguments), or, in `check`, call strings that must parse as exactly that.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import itertools
import json
from contextlib import contextmanager
from importlib import resources
from typing import Any

from bfcl_eval.constants.executable_backend_config import (
    CLASS_FILE_PATH_MAPPING,
    MULTI_TURN_FUNC_DOC_FILE_MAPPING,
    STATELESS_CLASSES,
)
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

MULTI_TURN_CLASSES = ("GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI", "TradingBot",
                      "TravelAPI", "VehicleControlAPI")  # fmt: skip
_RUNS = itertools.count()


def load_instances(initial_config: dict, classes: list[str], long_context: bool) -> dict[str, Any]:
    """Fresh instances of `classes` loaded from `initial_config`, as bfcl-eval's executor loads them."""
    instances = {}
    for name in classes:
        instance = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[name]), name)()
        if name not in STATELESS_CLASSES:
            instance._load_scenario(copy.deepcopy(initial_config.get(name, {})), long_context=long_context)
        instances[name] = instance
    return instances


def methods_of(classes: list[str]) -> dict[str, str]:
    """{public method name: its class} for `classes` (the functions an entry's calls may name)."""
    owners = {}
    for name in classes:
        class_ = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[name]), name)
        owners.update({method: name for method, _ in inspect.getmembers(class_, predicate=inspect.isfunction)
                       if not method.startswith("_")})
    return owners


def function_docs(classes: list[str]) -> list[dict]:
    """The docs of `classes`' functions, in the order bfcl-eval's loader puts them in an entry's `function`."""
    folder = resources.files("bfcl_eval") / "data" / "multi_turn_func_doc"
    docs = []
    for name in classes:
        text = (folder / MULTI_TURN_FUNC_DOC_FILE_MAPPING[name]).read_text(encoding="utf-8")
        docs += [json.loads(line) for line in text.splitlines() if line.strip()]
    return docs


def format_result(result: Any) -> str:
    """A method's result as bfcl-eval's executor shows it (execute_multi_turn_func_call)."""
    if type(result) is str:  # noqa: E721 (the exact type test bfcl-eval makes)
        return result
    if type(result) is dict:  # noqa: E721
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


@contextmanager
def isolated(tag: str):
    """A model name for bfcl-eval's executor; its instances are dropped from bfcl-eval's globals on exit."""
    model_name = f"agentic_verl_{tag}_{next(_RUNS)}"
    try:
        yield model_name
    finally:
        names = vars(multi_turn_utils)
        for key in [key for key in list(names) if key.startswith(model_name)]:
            names.pop(key, None)


def execute_steps(entry: dict, steps: list[list[list[str]]], long_context: bool) -> list[list[list[str]]]:
    """outputs[turn][step][call] of running `steps` (call strings) through bfcl-eval's executor on a fresh copy of
    the entry's state, one executor call per step, as BFCL's inference does."""
    outputs = []
    with isolated("generate") as model_name:
        for turn in steps:
            outputs.append([execute_multi_turn_func_call(step, entry["initial_config"], entry["involved_classes"],
                                                         model_name, entry["id"], long_context=long_context)[0]
                            for step in turn])
    return outputs


def check(entry: dict, model_steps: list[list[list[str]]]) -> dict:
    """bfcl-eval's multi_turn_checker on `model_steps` (call strings per turn and step) against the entry's
    ground truth: {"valid", "error_type", "error_message"}. Steps without calls are dropped first and a trajectory
    with a different number of turns is force-terminated, as bfcl-eval's evaluation runner does."""
    methods = methods_of(entry["involved_classes"])
    for turn in model_steps:
        for step in turn:
            for call in step:
                _check_call_string(call, methods)
    if len(model_steps) != len(entry["ground_truth"]):
        return {"valid": False, "error_type": "multi_turn:force_terminated", "error_message": "turn count differs"}
    model_steps = [[step for step in turn if step] for turn in model_steps]
    with isolated("check") as model_name:
        verdict = multi_turn_checker(copy.deepcopy(model_steps), entry["ground_truth"], copy.deepcopy(entry), "",
                                     model_name)
    return {"valid": bool(verdict["valid"]), "error_type": verdict.get("error_type"),
            "error_message": verdict.get("error_message")}


def _check_call_string(text: str, methods: dict[str, str]) -> None:
    """A call string the executor may evaluate: one call of a method of the entry's classes, literal arguments."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ValueError(f"{text!r} is not a call") from None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in methods):
        raise ValueError(f"{text!r} is not a call of a method of the entry's classes")
    if any(keyword.arg is None for keyword in node.keywords):
        raise ValueError(f"{text!r} unpacks keyword arguments")
    for value in [*node.args, *(keyword.value for keyword in node.keywords)]:
        ast.literal_eval(value)  # ValueError for anything but a literal
