"""bfcl-eval's multi-turn simulator classes, run so that no run sees another's state: the one implementation the
environment server (sessions, checker) and the task generator (`data/bfcl_multi_turn`) share. Runs in
`.venv-bfcl` (imports bfcl-eval).

Two kinds of state outlive a run in bfcl-eval:

- module-level records. With `long_context`, `_load_scenario` merges module data into an instance by reference
  (TravelAPI's CREDIT_CARD_EXTENSION cards and BOOKING_RECORD_EXTENSION bookings), and methods read or write other
  module data (VehicleControlAPI writes LONG_WEATHER_EXTENSION on every weather call, TradingBot hands out its
  MA_*/WATCH_LIST/TRANSACTION_HISTORY lists). A flight booked on an extension card would charge the module's card,
  and every later instance would start from the charged balance. `private_records(classes)` gives each run fresh
  copies of every mutable module-level value of the classes' modules and puts the untouched originals back
  afterwards, so every run starts from bfcl-eval's data as shipped (as a fresh process would). The classes carry
  no mutable class attributes (checked by tests/bfcl_env/test_long_context_isolation.py);
- the executor's instances, which bfcl-eval keeps in module globals named after a model name and the entry id:
  `executor_model_name(tag)` gives a run a model name of its own and removes those globals afterwards.

`execute_steps` runs call strings through bfcl-eval's executor with both in place (the generator's gold calls).

All simulator code runs under `SIMULATOR_LOCK` (re-entrant): the records are swapped module-wide, and the GIL runs
one thread at a time anyway.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import itertools
import threading
from contextlib import contextmanager
from types import ModuleType

from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING, STATELESS_CLASSES
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

from agentic_verl.bfcl_env.protocol import SERVED_CLASSES

SIMULATOR_LOCK = threading.RLock()
MODEL_PREFIX = "agentic_verl_"
_MUTABLE = (dict, list, set, bytearray)
_ATOMS = frozenset({str, int, float, bool, type(None), bytes})
_RUNS = itertools.count()


def simulator_module(class_name: str) -> ModuleType:
    return importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name])


def load_classes() -> dict[str, type]:
    """{class name: class} for every served class; ImportError that names `make bfcl-venv` when one cannot be
    imported (a venv without a package the simulators need, e.g. mpmath for MathAPI)."""
    classes = {}
    for name in SERVED_CLASSES:
        try:
            classes[name] = getattr(simulator_module(name), name)
        except (ImportError, KeyError, AttributeError) as exc:
            raise ImportError(f"bfcl-eval's {name} simulator does not import here ({type(exc).__name__}: {exc}); "
                              "update the venv with `make bfcl-venv`") from exc
    return classes


def public_methods(instance) -> dict:
    """{name: bound method} of an instance's public methods (the functions BFCL exposes to the model)."""
    return {name: method for name, method in inspect.getmembers(instance, predicate=inspect.ismethod)
            if not name.startswith("_")}


def method_owners(classes: list[str]) -> dict[str, str]:
    """{public method name: its class} for `classes`; a later class wins a name two share, as in bfcl-eval's
    executor."""
    owners = {}
    for name in classes:
        class_ = getattr(simulator_module(name), name)
        owners.update({method: name for method, _ in inspect.getmembers(class_, predicate=inspect.isfunction)
                       if not method.startswith("_")})
    return owners


def module_records(classes) -> list[tuple[ModuleType, str]]:
    """(module, name) of every mutable module-level value of the modules that define `classes`."""
    found = []
    for module in dict.fromkeys(simulator_module(name) for name in classes):
        found += [(module, key) for key, value in vars(module).items()
                  if isinstance(value, _MUTABLE) and not key.startswith("__")]
    return found


@contextmanager
def private_records(classes):
    """Within: the classes' modules hold fresh deep copies of their mutable module-level values (one copy per
    object, so values two names share stay shared); on exit the originals are back, untouched by the run. What
    an instance made within took from the copies stays its own."""
    with SIMULATOR_LOCK:
        originals = [(module, key, getattr(module, key)) for module, key in module_records(classes)]
        memo: dict = {}
        for module, key, value in originals:
            setattr(module, key, _fresh_copy(value, memo))
        try:
            yield
        finally:
            for module, key, value in originals:
                setattr(module, key, value)


def _fresh_copy(value, memo: dict):
    """A deep copy of `value`; lists and dicts of plain values (most of the records: thousands of prices, symbols,
    transactions) are copied with one C call each instead of copy.deepcopy's per-item dispatch. `memo` keeps one
    copy per object."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    key = id(value)
    if key in memo:
        return memo[key]
    if kind is list:
        result = memo[key] = []
        result.extend(value if all(type(item) in _ATOMS for item in value) else (_fresh_copy(v, memo) for v in value))
    elif kind is dict:
        result = memo[key] = {}
        plain = all(type(item) in _ATOMS for item in value.values())
        result.update(value if plain else ((k, _fresh_copy(v, memo)) for k, v in value.items()))
    else:
        result = memo[key] = copy.deepcopy(value, memo)
    return result


def new_instances(classes: dict[str, type], initial_config: dict, involved_classes: list[str],
                  long_context: bool) -> dict:
    """{class name: fresh instance}, each loaded from a deep copy of its part of `initial_config`, as bfcl-eval's
    execute_multi_turn_func_call does on a trajectory's first call, on private copies of the module records (the
    instances share nothing with any other run)."""
    instances = {}
    with private_records(involved_classes):
        for name in involved_classes:
            instance = classes[name]()
            if name not in STATELESS_CLASSES:
                instance._load_scenario(copy.deepcopy(initial_config.get(name, {})), long_context=long_context)
            instances[name] = instance
    return instances


def execute_steps(entry: dict, steps: list[list[list[str]]], long_context: bool) -> list[list[list[str]]]:
    """outputs[turn][step][call] of running `steps` (call strings) through bfcl-eval's executor on a fresh copy of
    the entry's state, one executor call per step, as BFCL's inference does. The executor evaluates the strings:
    give it only `protocol.render_call` output (a method name and literal arguments)."""
    outputs = []
    with private_records(entry["involved_classes"]), executor_model_name("generate") as model_name:
        for turn in steps:
            outputs.append([multi_turn_utils.execute_multi_turn_func_call(
                step, entry["initial_config"], entry["involved_classes"], model_name, entry["id"],
                long_context=long_context)[0] for step in turn])
    return outputs


@contextmanager
def executor_model_name(tag: str):
    """A model name for bfcl-eval's executor, unused before; its instances leave bfcl-eval's globals on exit."""
    model_name = f"{MODEL_PREFIX}{tag}_{next(_RUNS)}"
    try:
        yield model_name
    finally:
        names = vars(multi_turn_utils)
        for key in [key for key in list(names) if key.startswith(model_name + "_")]:  # bfcl-eval adds `_...`
            names.pop(key, None)
