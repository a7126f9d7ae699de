"""A trajectory's verdict from bfcl-eval's own multi-turn checker, with a verdict for every turn.

Runs in `.venv-bfcl`. `check(entry, model_strings, gt_strings)` (the outputs of `parse_check_request`):

- the verdict (`valid`, `error_type`, `error_message`, `details`) is bfcl-eval's `multi_turn_checker`'s, after the
  two steps its eval runner (`_evaluate_single_multi_turn_entry`, which cannot be imported without its vendor SDKs)
  takes first: a trajectory whose number of turns differs from the ground truth's is `multi_turn:force_terminated`,
  and steps without calls are dropped;
- `per_turn[t]`: whether turn t passes the same three checks (a response when the ground truth calls, the
  simulators' state, the ground truth's outputs among the model's so far) run with bfcl-eval's own
  `state_checker` / `response_checker` and executor, continuing after a failed turn (the official checker stops
  at the first, whose turn and error type these are); a turn whose ground truth has no calls is not checked by
  BFCL and counts as passed.

bfcl-eval's executor runs call *strings* with `eval`. The strings it gets here are built by the server from
parsed data, never taken from the request: a model call becomes `name(key=repr(value), ...)` only when `name` is a
public method of the entry's classes and every value is a JSON literal (protocol.render_call); any other name
becomes a call of an undefined placeholder (an error output, as an unknown name is in BFCL); each ground-truth
string is parsed with `ast`, accepted only as a call of one of those methods with literal arguments, and written
back from its literals (protocol.parse_call_string / render_parsed); the entry id, which bfcl-eval puts into the
names it evaluates, must match a plain pattern. So nothing from the request is evaluated beyond literals.

The model's calls run once per check: bfcl-eval's checker runs the turns up to its verdict (the first failed turn,
or all of them), its executor's outputs recorded on the way; the per-turn checks go on from the next turn with the
same instances and those outputs. Every check runs on private copies of bfcl-eval's module-level records, under a
model name of its own whose instances are removed afterwards (simulators.private_records / executor_model_name):
a check changes nothing a later check or session sees. Within one check, the model's and the ground truth's
instances share the check's copy of the records, as they share the module's in bfcl-eval's own runs (a charge on
a long-context extension card shows on both sides).
"""

from __future__ import annotations

import copy
import importlib
from contextlib import contextmanager

from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (
    multi_turn_checker,
    response_checker,
    state_checker,
)
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
    execute_multi_turn_func_call,
    is_empty_execute_response,
)

from agentic_verl.bfcl_env.protocol import (
    RequestError,
    check_entry_id,
    long_context_of,
    parse_call_string,
    parse_calls,
    parse_classes,
    parse_object,
    render_call,
    render_parsed,
    require,
    to_jsonable,
)
from agentic_verl.bfcl_env.simulators import SIMULATOR_LOCK, executor_model_name, method_owners, private_records

# the module whose `execute_multi_turn_func_call` multi_turn_checker calls (the package exports a function that
# shadows the submodule's name, hence import_module)
_CHECKER_MODULE = importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
_GROUND_TRUTH_SUFFIX = "_ground_truth"  # what multi_turn_checker appends to the model name for the ground truth
# What a call of a name that is not one of the entry's functions becomes: evaluating it raises NameError, an error
# output, as BFCL's evaluation of an unknown name does (the name itself is never put into evaluated text).
UNKNOWN_FUNCTION_PLACEHOLDER = "agentic_verl_unknown_function()"
FORCE_TERMINATED = "multi_turn:force_terminated"
EMPTY_TURN = "multi_turn:empty_turn_model_response"


def parse_check_request(body: dict, methods_of: dict[str, set[str]]) -> tuple[dict, list, list]:
    """(the entry bfcl-eval's checker gets, model call strings [turn][step][call], ground-truth call strings
    [turn][call]) from a /check body `{"entry": {...}, "model_calls": [turn][step][{"name", "arguments"}]}`;
    RequestError(422) says what is wrong. `methods_of`: {class name: its public method names}."""
    entry = parse_object(body.get("entry"), "entry")
    entry_id = check_entry_id(entry.get("id"))
    initial_config = entry.get("initial_config", {})
    require(isinstance(initial_config, dict), "entry.initial_config", "a JSON object")
    classes = parse_classes(entry.get("involved_classes"), "entry.involved_classes")
    if "long_context" in entry and bool(entry["long_context"]) != long_context_of(entry_id):
        raise RequestError(422, f"entry.long_context is {bool(entry['long_context'])} but bfcl-eval's checker "
                                f"decides it from the id, and {entry_id!r} means {long_context_of(entry_id)}; "
                                "name long-context entries like multi_turn_long_context_N")
    functions = set().union(*(methods_of[name] for name in classes))
    ground_truth = entry.get("ground_truth")
    require(isinstance(ground_truth, list) and all(isinstance(t, list) and all(isinstance(c, str) for c in t)
                                                   for t in ground_truth),
            "entry.ground_truth", "a list of turns, each a list of call strings")
    gt_strings = [[checked_call_string(text, functions, f"entry.ground_truth[{t}][{i}]") for i, text in enumerate(turn)]
                  for t, turn in enumerate(ground_truth)]
    model_calls = body.get("model_calls")
    require(isinstance(model_calls, list) and all(isinstance(turn, list) for turn in model_calls), "model_calls",
            "a list of turns, each a list of steps, each a list of calls")
    model_strings = [[[_model_call(name, arguments, functions)
                       for name, arguments in parse_calls(step, f"model_calls[{t}][{s}]")]
                      for s, step in enumerate(turn)] for t, turn in enumerate(model_calls)]
    checked_entry = {"id": entry_id, "initial_config": initial_config, "involved_classes": classes}
    return checked_entry, model_strings, gt_strings


def _model_call(name: str, arguments: dict, functions: set[str]) -> str:
    if name not in functions:
        return UNKNOWN_FUNCTION_PLACEHOLDER
    try:
        return render_call(name, arguments)
    except ValueError as exc:
        raise RequestError(422, f"model call {name}: {exc}") from None


def checked_call_string(text: str, functions: set[str], where: str) -> str:
    """A BFCL call string written back from its literals, when it is one call of one of `functions` with literal
    arguments; RequestError(422) saying why not."""
    try:
        name, args, kwargs = parse_call_string(text)
    except ValueError as exc:
        raise RequestError(422, f"{where}: {exc}") from None
    if name not in functions:
        raise RequestError(422, f"{where}: {name!r} is not a function of the entry's classes")
    return render_parsed(name, args, kwargs)


def check_call_strings(entry: dict, model_steps: list[list[list[str]]]) -> dict:
    """The verdict {"valid", "error_type", "error_message"} of `check` on call strings [turn][step][call] against
    the entry's `ground_truth` (the task generator's gold); RequestError(422) for a string that is not one literal
    call of a method of the entry's classes."""
    functions = set(method_owners(entry["involved_classes"]))
    model = [[[checked_call_string(call, functions, f"model_steps[{t}][{s}][{i}]") for i, call in enumerate(step)]
              for s, step in enumerate(turn)] for t, turn in enumerate(model_steps)]
    gt = [[checked_call_string(call, functions, f"ground_truth[{t}][{i}]") for i, call in enumerate(turn)]
          for t, turn in enumerate(entry["ground_truth"])]
    checked = {"id": entry["id"], "initial_config": entry["initial_config"],
               "involved_classes": entry["involved_classes"]}
    verdict = check(checked, model, gt)
    return {key: verdict[key] for key in ("valid", "error_type", "error_message")}


def check(entry: dict, model_strings: list, gt_strings: list) -> dict:
    """`{"valid", "error_type", "error_message", "per_turn", "per_turn_error_types", "details"}` (see the module
    docstring) for the outputs of `parse_check_request`."""
    n_turns = len(gt_strings)
    if len(model_strings) != n_turns:  # bfcl-eval's eval runner, before its checker
        message = (f"Model was force-terminated during inference phase. The length of the model result turns "
                   f"({len(model_strings)}) does not match the length of the ground truth turns ({n_turns}).")
        return {"valid": False, "error_type": FORCE_TERMINATED, "error_message": message, "per_turn": [False] * n_turns,
                "per_turn_error_types": [FORCE_TERMINATED] * n_turns, "details": {}}
    # bfcl-eval's eval runner drops the steps that decode to no call
    model_strings = [[step for step in turn if not is_empty_execute_response(step)] for turn in model_strings]
    with SIMULATOR_LOCK, private_records(entry["involved_classes"]), executor_model_name("check") as model_name, \
            _recorded_executor() as record:
        official = multi_turn_checker(copy.deepcopy(model_strings), gt_strings, copy.deepcopy(entry), "", model_name)
        per_turn = _per_turn_verdicts(official, record, model_strings, gt_strings, entry, model_name)
    valid = bool(official["valid"])
    details = {**(official.get("details") or {}),  # bfcl-eval's report (differences, states, outputs), one level
               **{k: v for k, v in official.items() if k not in ("valid", "error_type", "error_message", "details")}}
    return {"valid": valid, "error_type": None if valid else official.get("error_type"),
            "error_message": official.get("error_message"), "per_turn": [ok for ok, _ in per_turn],
            "per_turn_error_types": [error for _, error in per_turn], "details": to_jsonable(details)}


@contextmanager
def _recorded_executor():
    """bfcl-eval's executor as multi_turn_checker calls it, with what it ran recorded: {"model_outputs": every
    output of the model's calls in order, "turns": how many turns' ground truths ran (the turns it checked)}."""
    record = {"model_outputs": [], "turns": 0}

    def execute(*args, **kwargs):
        outputs, instances = execute_multi_turn_func_call(*args, **kwargs)
        if kwargs["model_name"].endswith(_GROUND_TRUTH_SUFFIX):
            record["turns"] += 1
        else:
            record["model_outputs"].extend(outputs)
        return outputs, instances

    _CHECKER_MODULE.execute_multi_turn_func_call = execute
    try:
        yield record
    finally:
        _CHECKER_MODULE.execute_multi_turn_func_call = execute_multi_turn_func_call


def _per_turn_verdicts(official: dict, record: dict, model_strings: list, gt_strings: list, entry: dict,
                       model_name: str) -> list:
    """[(passed, error type or None)] per turn: the official checker's for the turns it checked (all passed but the
    last, if it failed), then its three checks on each later turn, with the same instances, not stopping at a
    failure. A turn whose ground truth calls nothing counts as passed (BFCL checks nothing there)."""
    checked = record["turns"]
    verdicts = [(True, None)] * checked
    if not official["valid"]:
        verdicts[-1] = (False, official.get("error_type"))
    long_context = long_context_of(entry["id"])
    all_model_outputs = list(record["model_outputs"])

    def run(calls: list, name: str) -> tuple[list, dict]:
        return execute_multi_turn_func_call(calls, entry["initial_config"], entry["involved_classes"], name,
                                            entry["id"], long_context=long_context, is_evaL_run=True)

    for turn, gt_calls in list(zip(model_strings, gt_strings, strict=True))[checked:]:
        for step in turn:
            outputs, _ = run(step, model_name)
            all_model_outputs.extend(outputs)
        _, model_instances = run([], model_name)  # the instances after this turn (also when it made no call)
        gt_outputs, gt_instances = run(gt_calls, model_name + _GROUND_TRUTH_SUFFIX)
        if not gt_calls:
            verdicts.append((True, None))
        elif not turn:
            verdicts.append((False, EMPTY_TURN))
        elif not state_checker(model_instances, gt_instances)["valid"]:
            verdicts.append((False, "multi_turn:instance_state_mismatch"))
        elif not (result := response_checker(all_model_outputs, gt_outputs, len(verdicts)))["valid"]:
            verdicts.append((False, result["error_type"]))
        else:
            verdicts.append((True, None))
    return verdicts
