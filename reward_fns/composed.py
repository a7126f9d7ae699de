"""verl entry: a weighted sum of reward components declared in YAML (agentic_verl.rewards.compose).

    reward.custom_reward_function.path=reward_fns/composed.py
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.config=reward_fns/configs/rag_r1_em_format.yaml

or inline, in a YAML config: ``reward_kwargs: {components: [{name: qa_em}, {name: format, weight: 0.1}]}``.
A component ``name`` is one of ours, an installed package's (its ``agentic_verl.rewards`` entry point: found in
every reward worker with nothing imported first), or a ``module:attr`` / ``file.py:attr`` reference (docs/extending.md).
A relative ``config`` path is tried from the working directory, then from the repository root (the
parent of reward_fns/). The config is loaded and checked on the first call and cached (reloaded when
the file changes); a bad config raises RewardConfigError on every call, a bad model output never does.
Every component's score reaches verl's reward_extra_info (and so the logs) under its key, and whether it raised
under ``reward/<key>/exceptions``. ``reward_kwargs.max_consecutive_exceptions=N`` overrides the config's limit of
exceptions in a row before the run stops (default 16, 0 = never; see agentic_verl.rewards.failures).
"""

import os
import threading

from agentic_verl.rewards.compose import VERL_CALL_KWARGS, ComposedReward, RewardConfigError, load_reward

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CACHE: dict = {}
_LOCK = threading.Lock()


def compute_score(data_source, solution_str, ground_truth, extra_info=None, config=None, components=None,
                  max_consecutive_exceptions=None, **kwargs):
    unknown = sorted(set(kwargs) - VERL_CALL_KWARGS)
    if unknown:
        raise RewardConfigError(
            f"reward_fns/composed.py: unexpected reward_kwargs {unknown}; use 'config' or 'components' "
            "(and optionally 'max_consecutive_exceptions')"
        )
    return _reward(config, components, max_consecutive_exceptions)(solution_str, ground_truth, extra_info)


def _reward(config, components, limit) -> ComposedReward:
    if (config is None) == (components is None):
        raise RewardConfigError(
            "reward_fns/composed.py needs exactly one of reward_kwargs.config (a YAML path) "
            "or reward_kwargs.components (an inline list)"
        )
    if config is not None:
        path = _resolve(str(config))
        key = ("config", path, os.path.getmtime(path), limit)
    else:
        key = ("inline", repr(components), limit)
    with _LOCK:
        reward = _CACHE.get(key)
        if reward is None:
            reward = _CACHE[key] = load_reward(path if config is not None else components,
                                               max_consecutive_exceptions=limit)
    return reward


def _resolve(path: str) -> str:
    candidates = [path] if os.path.isabs(path) else [path, os.path.join(_REPO_ROOT, path)]
    for candidate in candidates:
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    raise RewardConfigError(f"reward config {path!r} not found (tried {candidates})")
