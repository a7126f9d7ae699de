"""Composed rewards: a weighted sum of named reward components declared in YAML.

```yaml
max_consecutive_exceptions: 16   # optional; stop the run after this many exceptions of a component in a row
components:
  - name: qa_em            # a registered reward, an agentic_verl.rewards entry point, or "module:attr" / "file.py:attr"
    weight: 1.0
  - name: format
    weight: 0.1
    kwargs: {mode: multi, max_queries: 3}
```

Everything about the config is checked when it is loaded: unknown names (the error lists the known
ones), unknown fields, weights that are not numbers, kwargs the component does not accept, duplicate
output keys, and bad kwarg values (each component is called once on an empty response with no ground
truth; it must not raise, see the reward convention). At reward time a component that raises or returns a
non-finite score counts 0 with ``error_type = "<key>:exception:<Type>"`` / ``"<key>:non_finite_score"``; one that
raises is also counted as ``reward/<key>/exceptions`` (1.0 on that sample, 0.0 on the others), and
``max_consecutive_exceptions`` of them in a row (default 16, 0 = never) stop the run with its traceback
(agentic_verl.rewards.failures). A component whose error_type says the sample's ground truth is unusable
(``<kind>:bad_ground_truth``) is counted as ``reward/<key>/bad_ground_truth``.

The result holds ``score`` (the weighted sum), ``error_type`` (the first failing component's, in
declaration order), each component's score under its key, and its other scalar outputs as
``<key>/<field>`` (``format/error_type``, ``format/num_searches``, ...), so all reach verl's logs. A component
that raised still has all its keys (its fields None), so every sample has the same keys, as verl needs.

>>> reward = load_reward([{"name": "qa_em"}, {"name": "format", "weight": 0.1}])
>>> result = reward("<think>t</think><answer>Paris</answer>", ["Paris"])
>>> result["score"], result["qa_em"], result["format"], result["error_type"], result["reward/qa_em/exceptions"]
(1.1, 1.0, 1.0, None, 0.0)
>>> result["reward/qa_em/bad_ground_truth"]
0.0
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from agentic_verl.fail_fast import check_limit as check_failure_limit
from agentic_verl.registry import RegistryError
from agentic_verl.rewards.failures import (
    DEFAULT_MAX_CONSECUTIVE_EXCEPTIONS,
    LIMIT_OPTION,
    bad_ground_truth_flag,
    bad_ground_truth_key,
    call_component,
    exceptions_key,
)
from agentic_verl.rewards.registry import REWARDS

__all__ = [
    "VERL_CALL_KWARGS",
    "ComposedReward",
    "RewardComponent",
    "RewardConfigError",
    "check_kwargs",
    "load_reward",
    "load_reward_config",
    "verl_compute_score",
]

VERL_CALL_KWARGS = frozenset({"reward_router_address", "reward_model_tokenizer"})
"""Keyword arguments verl's reward managers add to every call (dropped before calling a component)."""

_STANDARD_PARAMS = ("solution_str", "ground_truth", "extra_info")
_COMPONENT_FIELDS = frozenset({"name", "weight", "kwargs", "key"})
_CONFIG_KEYS = frozenset({"components", LIMIT_OPTION})


class RewardConfigError(ValueError):
    """A reward config that cannot work; raised at load time, never for a model output."""


@dataclass(frozen=True)
class RewardComponent:
    name: str
    fn: Callable[..., dict]
    weight: float = 1.0
    kwargs: dict = field(default_factory=dict)
    key: str = ""  # the name in the result dict; defaults to `name` (the attribute for references)
    fields: tuple[str, ...] = ()  # its scalar outputs besides score (from the trial call): None when it raised


def check_kwargs(fn: Callable, kwargs: Mapping, *, what: str) -> None:
    """Raise RewardConfigError if ``fn`` cannot take ``kwargs``.

    A function that declares its options by name gets them checked by name (its ``**kwargs``, kept for
    the registry convention, does not hide typos); a function whose only options are ``**kwargs``
    accepts anything.
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return
    named = [
        name
        for name, p in params.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in _STANDARD_PARAMS
    ]
    has_var_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
    if has_var_kw and not named:
        return
    unknown = sorted(set(kwargs) - set(named))
    if unknown:
        accepted = ", ".join(named) or "(none)"
        raise RewardConfigError(f"{what}: unexpected kwargs {unknown}; accepted: {accepted}")


def check_limit(value, *, what: str) -> int:
    """``max_consecutive_exceptions`` as an int >= 0 (0 = never stop), or RewardConfigError."""
    return check_failure_limit(value, f"{what}: {LIMIT_OPTION}", RewardConfigError)


def verl_compute_score(component: Callable[..., dict], *, what: str | None = None) -> Callable[..., dict]:
    """Wrap a reward component as verl's ``compute_score(data_source, solution_str, ground_truth, extra_info, **kw)``.

    ``kw`` are verl's ``reward.custom_reward_function.reward_kwargs`` (checked against the component's
    options on every call, a bad one raises RewardConfigError) plus verl's own call-time extras, which
    are dropped. ``data_source`` is not used. A score that is not a finite number becomes 0 with
    ``<name>:non_finite_score``. ``max_consecutive_exceptions`` (default 16, 0 = never) is this
    wrapper's own: a component that raises scores 0 and counts in ``reward/<name>/exceptions``, and that many
    exceptions in a row stop the run (agentic_verl.rewards.failures).

    >>> from agentic_verl.rewards.qa import qa_em
    >>> compute_score = verl_compute_score(qa_em)
    >>> compute_score("nq", "<answer>Paris</answer>", {"target": ["paris"]}, {}, reward_router_address=None)
    {'score': 1.0, 'error_type': None, 'reward/qa_em/exceptions': 0.0, 'reward/qa_em/bad_ground_truth': 0.0}
    """
    name = getattr(component, "__name__", None) or what or repr(component)
    label = what or name
    fields_by_options: dict[str, tuple[str, ...]] = {}

    def compute_score(data_source=None, solution_str="", ground_truth=None, extra_info=None, **kwargs) -> dict:
        options = {k: v for k, v in kwargs.items() if k not in VERL_CALL_KWARGS}
        limit = check_limit(options.pop(LIMIT_OPTION, DEFAULT_MAX_CONSECUTIVE_EXCEPTIONS), what=f"{label} reward_kwargs")
        seen = repr(sorted(options.items()))
        if seen not in fields_by_options:
            check_kwargs(component, options, what=f"{label} reward_kwargs")
            fields_by_options[seen] = _output_fields(_trial_call(component, options, what=f"{label} reward_kwargs"),
                                                     scalar_only=False)
        out, exc = call_component(name, component, (solution_str, ground_truth, extra_info), options, limit=limit)
        if exc is not None:
            return {"score": 0.0, **dict.fromkeys(fields_by_options[seen]),
                    "error_type": f"{name}:exception:{type(exc).__name__}", exceptions_key(name): 1.0,
                    bad_ground_truth_key(name): 0.0}
        counts = {exceptions_key(name): 0.0, bad_ground_truth_key(name): bad_ground_truth_flag(name, out)}
        result = {**out, **counts} if isinstance(out, Mapping) else {"score": out, "error_type": None, **counts}
        if not _finite(result.get("score")):  # verl would train on it: a 0 that says why, as in a composition
            result.update(score=0.0, error_type=f"{name}:non_finite_score")
        return result

    compute_score.__doc__ = f"verl's compute_score for the reward component {label}."
    return compute_score


class ComposedReward:
    """Callable with the component signature ``(solution_str, ground_truth, extra_info=None, **kw)``."""

    def __init__(self, components: Sequence[RewardComponent], *,
                 max_consecutive_exceptions: int = DEFAULT_MAX_CONSECUTIVE_EXCEPTIONS):
        if not components:
            raise RewardConfigError("a composed reward needs at least one component")
        self.components = tuple(components)
        self.max_consecutive_exceptions = check_limit(max_consecutive_exceptions, what="a composed reward")

    def __call__(self, solution_str, ground_truth, extra_info=None, **kwargs) -> dict:
        total = 0.0
        first_error = None
        result: dict = {}
        for component in self.components:
            score, outputs, raised = _run(component, solution_str, ground_truth, extra_info,
                                          self.max_consecutive_exceptions)
            total += component.weight * score
            result[component.key] = score
            result[exceptions_key(component.key)] = 1.0 if raised else 0.0
            result[bad_ground_truth_key(component.key)] = bad_ground_truth_flag(component.key, outputs)
            for name, value in outputs.items():
                result[f"{component.key}/{name}"] = value
            if first_error is None and outputs.get("error_type") is not None:
                first_error = outputs["error_type"]
        if not math.isfinite(total):
            total, first_error = 0.0, first_error or "compose:non_finite_score"
        return {"score": total, "error_type": first_error, **result}

    def __repr__(self) -> str:
        parts = ", ".join(f"{c.weight:g} x {c.key}" for c in self.components)
        return f"ComposedReward({parts})"


def _run(component: RewardComponent, solution_str, ground_truth, extra_info, limit: int) -> tuple[float, dict, bool]:
    """(score, outputs, raised); one exception scores 0 and is counted, `limit` in a row stop the run."""
    out, exc = call_component(component.key, component.fn, (solution_str, ground_truth, extra_info),
                              component.kwargs, limit=limit)
    if exc is not None:
        outputs = dict.fromkeys(component.fields)
        outputs["error_type"] = f"{component.key}:exception:{type(exc).__name__}"
        return 0.0, outputs, True
    if isinstance(out, Mapping):
        raw_score = out.get("score", 0.0)
        outputs = {k: v for k, v in out.items() if k != "score" and _is_scalar(v)}
        outputs.setdefault("error_type", None)
    else:
        raw_score, outputs = out, {"error_type": None}
    if _finite(raw_score):
        score = float(raw_score)
    else:
        outputs["error_type"] = f"{component.key}:non_finite_score"
        score = 0.0
    return score, outputs, False


def _finite(score) -> bool:
    try:
        return math.isfinite(float(score))
    except (TypeError, ValueError):
        return False


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def load_reward(spec, *, max_consecutive_exceptions: int | None = None) -> ComposedReward:
    """Build a ComposedReward from a list of component dicts, a dict with ``components`` (and optionally
    ``max_consecutive_exceptions``), or a YAML path. A ``max_consecutive_exceptions`` argument wins over the
    config's (verl's reward_kwargs over the YAML); neither: 16."""
    if isinstance(spec, (str, os.PathLike)):
        return load_reward_config(spec, max_consecutive_exceptions=max_consecutive_exceptions)
    spec = _plain(spec)
    limit = DEFAULT_MAX_CONSECUTIVE_EXCEPTIONS
    if isinstance(spec, Mapping):
        extra = set(spec) - _CONFIG_KEYS
        if "components" not in spec or extra:
            raise RewardConfigError(f"a reward config is a mapping with only 'components' and optionally "
                                    f"'{LIMIT_OPTION}'; got keys {sorted(spec)}")
        limit = check_limit(spec.get(LIMIT_OPTION, limit), what="reward config")
        spec = spec["components"]
    if max_consecutive_exceptions is not None:
        limit = check_limit(max_consecutive_exceptions, what="reward_kwargs")
    if not isinstance(spec, list) or not spec:
        raise RewardConfigError(f"'components' must be a non-empty list, got {type(spec).__name__}")
    components = [_component(entry, index) for index, entry in enumerate(spec)]
    keys = [c.key for c in components]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise RewardConfigError(f"duplicate component keys {duplicates}; give each a distinct 'key'")
    return ComposedReward(components, max_consecutive_exceptions=limit)


def load_reward_config(path: str | os.PathLike, *, max_consecutive_exceptions: int | None = None) -> ComposedReward:
    """Load a YAML reward config (see the module docstring)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as exc:
        raise RewardConfigError(f"cannot read reward config {os.fspath(path)!r}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise RewardConfigError(f"reward config {os.fspath(path)!r} is not valid YAML: {exc}") from exc
    try:
        return load_reward(data, max_consecutive_exceptions=max_consecutive_exceptions)
    except RewardConfigError as exc:
        raise RewardConfigError(f"{os.fspath(path)}: {exc}") from None


def _component(entry, index: int) -> RewardComponent:
    where = f"component {index}"
    if isinstance(entry, str):
        entry = {"name": entry}
    if not isinstance(entry, Mapping):
        raise RewardConfigError(f"{where}: expected a mapping with 'name', got {entry!r}")
    unknown = set(entry) - _COMPONENT_FIELDS
    if unknown:
        raise RewardConfigError(f"{where}: unknown fields {sorted(unknown)}; allowed: {sorted(_COMPONENT_FIELDS)}")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise RewardConfigError(f"{where}: 'name' must be a non-empty string, got {name!r}")
    where = f"component {index} ({name})"
    try:
        fn = REWARDS.get(name)
    except RegistryError as exc:
        raise RewardConfigError(f"{where}: {exc}") from None
    if not callable(fn):
        raise RewardConfigError(f"{where}: {name!r} is not callable")
    weight = entry.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
        raise RewardConfigError(f"{where}: 'weight' must be a finite number, got {weight!r}")
    kwargs = entry.get("kwargs") or {}
    if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
        raise RewardConfigError(f"{where}: 'kwargs' must be a mapping of names to values, got {kwargs!r}")
    check_kwargs(fn, kwargs, what=where)
    key = entry.get("key") or name.rpartition(":")[2]
    if not isinstance(key, str) or "/" in key or key in ("score", "error_type"):
        raise RewardConfigError(f"{where}: bad key {key!r} (a string without '/', not 'score' or 'error_type')")
    fields = _output_fields(_trial_call(fn, kwargs, what=where), scalar_only=True)
    return RewardComponent(name=name, fn=fn, weight=float(weight), kwargs=dict(kwargs), key=key, fields=fields)


def _trial_call(fn: Callable, kwargs: Mapping, *, what: str):
    """``fn`` on an empty response with no ground truth: bad kwarg values (an unknown mode, ...) surface here,
    not in the middle of training."""
    try:
        return fn("", None, None, **kwargs)
    except Exception as exc:
        raise RewardConfigError(
            f"{what}: raised on a trial call with an empty response and no ground truth "
            f"(a reward must never raise on its inputs): {type(exc).__name__}: {exc}"
        ) from exc


def _output_fields(out, *, scalar_only: bool) -> tuple[str, ...]:
    """A component's output names besides ``score`` (the keys a sample it raised on must still have)."""
    if not isinstance(out, Mapping):
        return ("error_type",)
    fields = tuple(k for k, v in out.items() if k != "score" and (_is_scalar(v) or not scalar_only))
    return fields if "error_type" in fields else (*fields, "error_type")


def _plain(value):
    """OmegaConf containers (verl's reward_kwargs) and tuples -> plain dicts and lists."""
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [_plain(v) for v in value]
    return value
