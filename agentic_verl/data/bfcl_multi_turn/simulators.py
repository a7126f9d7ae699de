"""bfcl-eval's multi-turn machinery as the generator uses it (runs in `.venv-bfcl`; imported, never copied): the
function docs of a class, BFCL's executor for gold calls, and a trajectory's verdict.

Everything that touches bfcl-eval's state is the BFCL environment server's own code, shared: instances on private
copies of bfcl-eval's module-level records and executor model names that leave nothing behind
(`bfcl_env.simulators`), the verdict of bfcl-eval's `multi_turn_checker` with its eval runner's pre-steps and the
check that a call string is one literal call of the entry's methods (`bfcl_env.checker`), outputs as BFCL shows
them (`bfcl_env.protocol.format_output`). So a task is the same whatever was generated before it in the process.
bfcl-eval's executor evaluates call strings: the strings given to it are the generator's own `render_call` output
(a method name and literal arguments), or, in `check`, call strings that must parse as exactly that.
"""

from __future__ import annotations

import json
from importlib import resources

from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

from agentic_verl.bfcl_env import checker
from agentic_verl.bfcl_env.protocol import RequestError
from agentic_verl.bfcl_env.simulators import (
    executor_model_name,
    load_classes,
    method_owners,
    new_instances,
    private_records,
)


def load_instances(initial_config: dict, classes: list[str], long_context: bool) -> dict:
    """Fresh instances of `classes` loaded from `initial_config`, as bfcl-eval's executor loads them, sharing
    nothing with any other run."""
    return new_instances(load_classes(), initial_config, classes, long_context)


def function_docs(classes: list[str]) -> list[dict]:
    """The docs of `classes`' functions, in the order bfcl-eval's loader puts them in an entry's `function`."""
    folder = resources.files("bfcl_eval") / "data" / "multi_turn_func_doc"
    docs = []
    for name in classes:
        text = (folder / MULTI_TURN_FUNC_DOC_FILE_MAPPING[name]).read_text(encoding="utf-8")
        docs += [json.loads(line) for line in text.splitlines() if line.strip()]
    return docs


def execute_steps(entry: dict, steps: list[list[list[str]]], long_context: bool) -> list[list[list[str]]]:
    """outputs[turn][step][call] of running `steps` (call strings) through bfcl-eval's executor on a fresh copy of
    the entry's state, one executor call per step, as BFCL's inference does."""
    outputs = []
    with private_records(entry["involved_classes"]), executor_model_name("generate") as model_name:
        for turn in steps:
            outputs.append([execute_multi_turn_func_call(step, entry["initial_config"], entry["involved_classes"],
                                                         model_name, entry["id"], long_context=long_context)[0]
                            for step in turn])
    return outputs


def check(entry: dict, model_steps: list[list[list[str]]]) -> dict:
    """bfcl-eval's multi_turn_checker on `model_steps` (call strings per turn and step) against the entry's
    ground truth, as the environment server's /check gives it: {"valid", "error_type", "error_message"}.
    ValueError for a call string that is not one literal call of a method of the entry's classes."""
    functions = set(method_owners(entry["involved_classes"]))
    try:
        model = [[[checker.checked_call_string(call, functions, f"model_steps[{t}][{s}][{i}]")
                   for i, call in enumerate(step)] for s, step in enumerate(turn)] for t, turn in enumerate(model_steps)]
        gt = [[checker.checked_call_string(call, functions, f"ground_truth[{t}][{i}]") for i, call in enumerate(turn)]
              for t, turn in enumerate(entry["ground_truth"])]
    except RequestError as exc:
        raise ValueError(str(exc)) from None
    checked = {"id": entry["id"], "initial_config": entry["initial_config"],
               "involved_classes": entry["involved_classes"]}
    verdict = checker.check(checked, model, gt)
    return {key: verdict[key] for key in ("valid", "error_type", "error_message")}
