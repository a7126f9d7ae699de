"""Loud reward failures: a reward component that raises is counted in the logs, and stops the run if it keeps raising.

By convention a component never raises on its inputs; one that does has a bug, and until it is fixed every
sample it scores trains on a zero. So `call_component` (used by `ComposedReward` and `verl_compute_score`, the
two ways a component reaches verl):

- scores that sample 0 and marks it: the result carries `reward/<name>/exceptions` = 1.0 (0.0 on every sample the
  component scored, so every sample has the key; verl stacks reward_extra_info key by key), which reaches the
  training-step log as `reward/<name>/exceptions/mean` (agent_loops/trace_sampler.py) and validation's as
  `val-aux/<data_source>/reward/<name>/exceptions/mean@N`;
- after `max_consecutive_exceptions` exceptions of one component in a row in this process (default 16; any
  call that returns resets the count; 0 = never stop) raises `RewardFailFastError` with the last traceback, and
  so does every later call of that component in this process: verl fails those samples and the run stops.

A sample whose ground truth the component cannot use (its error_type ends with `:bad_ground_truth`: a data bug, not
the model's) is counted the same way, as `reward/<name>/bad_ground_truth` (`bad_ground_truth_flag`), and the first
one of each component is logged: it scores 0 like a wrong answer, but never silently.

>>> def broken(solution_str, ground_truth, extra_info=None):
...     return {"score": 1.0 / len(solution_str)}
>>> call_component("doctest_broken", broken, ("", None), limit=2)
(None, ZeroDivisionError('float division by zero'))
>>> call_component("doctest_broken", broken, ("", None), limit=2)
Traceback (most recent call last):
...
agentic_verl.rewards.failures.RewardFailFastError: reward fail-fast: component 'doctest_broken' raised 2 times in a row...
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentic_verl.fail_fast import ConsecutiveFailures, FailFastError

__all__ = [
    "DEFAULT_MAX_CONSECUTIVE_EXCEPTIONS",
    "LIMIT_OPTION",
    "REWARD_EXCEPTIONS",
    "RewardFailFastError",
    "bad_ground_truth_flag",
    "bad_ground_truth_key",
    "call_component",
    "exception_metrics",
    "exceptions_key",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_CONSECUTIVE_EXCEPTIONS = 16
LIMIT_OPTION = "max_consecutive_exceptions"
"""The setting's name: a top-level key of a reward config YAML, and a reward_kwargs key of every reward_fns entry."""


class RewardFailFastError(FailFastError):
    """A reward component raised too many times in a row: the run must stop."""


REWARD_EXCEPTIONS = ConsecutiveFailures(RewardFailFastError)  # this process's streaks, per component name


def exceptions_key(name: str) -> str:
    """The per-sample metric of component `name`: 1.0 when it raised on that sample, else 0.0."""
    return f"reward/{name}/exceptions"


def bad_ground_truth_key(name: str) -> str:
    """The per-sample metric of component `name`: 1.0 when the sample's ground truth was unusable, else 0.0."""
    return f"reward/{name}/bad_ground_truth"


_BAD_GROUND_TRUTH_SUFFIX = ":bad_ground_truth"
_BAD_GROUND_TRUTH_LOGGED: set[str] = set()


def bad_ground_truth_flag(name: str, out: Any) -> float:
    """1.0 when the result `out` of component `name` says its ground truth is unusable (logged the first time per
    component in this process; the metric counts every one), else 0.0."""
    error_type = out.get("error_type") if isinstance(out, Mapping) else None
    if not (isinstance(error_type, str) and error_type.endswith(_BAD_GROUND_TRUTH_SUFFIX)):
        return 0.0
    if name not in _BAD_GROUND_TRUTH_LOGGED:
        _BAD_GROUND_TRUTH_LOGGED.add(name)
        logger.error("reward component %s: a sample's ground truth cannot be used (%s, scored 0); this is a data bug. "
                     "Every such sample is counted as %s (logged once per process)",
                     name, error_type, bad_ground_truth_key(name))
    return 1.0


def call_component(name: str, fn: Callable[..., Any], args: tuple, kwargs: Mapping | None = None, *,
                   limit: int) -> tuple[Any, Exception | None]:
    """`(fn(*args, **kwargs), None)`, or `(None, the exception)` when it raised; raises RewardFailFastError at
    `limit` exceptions in a row of `name` (0 = never), and on every call once that happened."""
    REWARD_EXCEPTIONS.raise_if_tripped(name)
    try:
        out = fn(*args, **(kwargs or {}))
    except Exception as exc:
        last = traceback.format_exc()
        logger.warning("reward component %s raised (%d in a row; scored 0):\n%s",
                       name, REWARD_EXCEPTIONS.count(name) + 1, last)
        try:
            REWARD_EXCEPTIONS.failed(name, limit, lambda count: _message(name, count, last))
        except RewardFailFastError as stop:
            raise stop from exc
        return None, exc
    REWARD_EXCEPTIONS.reset(name)
    return out, None


def _message(name: str, count: int, last_traceback: str) -> str:
    return (f"reward fail-fast: component {name!r} raised {count} times in a row in this process, so every sample "
            f"it scored trained on a 0. Fix it (its last traceback is below) and resume; the limit is "
            f"{LIMIT_OPTION}={count} (0 = never stop), a top-level key of the reward config YAML or "
            f"+reward.custom_reward_function.reward_kwargs.{LIMIT_OPTION}=N.\n"
            f"Last traceback:\n{last_traceback}")


_COUNTED = ("/exceptions", "/bad_ground_truth")


def exception_metrics(reward_extra_infos: Iterable[Any]) -> dict[str, float]:
    """A training step's `reward/<name>/exceptions/mean` and `reward/<name>/bad_ground_truth/mean` from its samples'
    reward_extra_info dicts (anything else, e.g. a sample scored by another reward, is skipped): the share of
    samples each component raised on, and the share whose ground truth it could not use.

    >>> exception_metrics([{"reward/qa_em/exceptions": 1.0, "score": 0.0}, {"reward/qa_em/exceptions": 0.0}, None])
    {'reward/qa_em/exceptions/mean': 0.5}
    """
    values: dict[str, list[float]] = {}
    for info in reward_extra_infos:
        if not isinstance(info, Mapping):
            continue
        for key, value in info.items():
            if isinstance(key, str) and key.startswith("reward/") and key.endswith(_COUNTED):
                values.setdefault(key, []).append(float(value))
    return {f"{key}/mean": sum(vals) / len(vals) for key, vals in values.items()}
