"""Pieces shared by our agent loops: layered config, the token-level trajectory, stop strings on a token stream.

Token in, token out: `Trajectory` keeps the policy's token ids exactly as the server returned them
(mask 1, with their logprobs) and appends observation token ids (mask 0, logprob 0.0). Only observation
text is ever tokenised. `cut_at_stop` finds where a stop string ends *in the generated token ids* and
cuts there, so a server that ignores stop strings gives the same trajectory as one that honours them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf


# -- config ---------------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True)
    return value


def pop_config_kwargs(config_cls: type, kwargs: dict) -> dict:
    """Remove and return the entries of `kwargs` that are fields of `config_cls` (the agent-loop YAML keys
    hydra passes to the loop's constructor)."""
    names = {f.name for f in dataclasses.fields(config_cls)}
    return {name: _plain(kwargs.pop(name)) for name in list(kwargs) if name in names}


def config_layers(key: str, rollout_config, loop_kwargs: Mapping | None,
                  extra_info: Mapping | None) -> list[tuple[str, Any]]:
    """The three settable layers of a loop's config, lowest first: (where, mapping or None)."""
    custom = _plain(rollout_config.get("custom", None)) if rollout_config is not None else None
    return [
        ("rollout.custom." + key, (custom or {}).get(key) if isinstance(custom, Mapping) else None),
        ("agent loop config", loop_kwargs),
        ("extra_info." + key, (extra_info or {}).get(key) if isinstance(extra_info, Mapping) else None),
    ]


def resolve_config(config_cls: type, key: str, rollout_config, loop_kwargs: Mapping, extra_info: Mapping | None):
    """Build `config_cls` from four layers, later ones winning:

    1. the dataclass defaults;
    2. `actor_rollout_ref.rollout.custom.<key>` (one place for a whole run);
    3. the keys next to the loop's `_target_` in `rollout.agent.agent_loop_config_path` (per registered name);
    4. `extra_info.<key>` of the sample (per sample, e.g. sq vs mq questions in one dataset).

    Unknown keys raise a ValueError that lists the known ones. A field that must not be overridden silently
    (a run-level value against the sample's) is checked with `require_agreement`.
    """
    known = {f.name for f in dataclasses.fields(config_cls)}
    merged: dict[str, Any] = {}
    for where, layer in config_layers(key, rollout_config, loop_kwargs, extra_info):
        layer = _plain(layer)
        if not layer:
            continue
        if not isinstance(layer, Mapping):
            raise ValueError(f"{where} must be a mapping of {config_cls.__name__} fields, got {type(layer).__name__}")
        unknown = sorted(set(layer) - known)
        if unknown:
            raise ValueError(f"unknown {config_cls.__name__} key(s) {unknown} in {where}; known: {sorted(known)}")
        merged.update(layer)
    return config_cls(**merged)


def require_agreement(field: str, key: str, rollout_config, loop_kwargs: Mapping | None,
                      extra_info: Mapping | None, hint: str = "") -> None:
    """Raise a ValueError when the run sets `field` (rollout.custom.<key> or the agent loop config, the latter
    winning) and the sample's extra_info.<key> sets it too, to a different value: for settings where the data
    and the run must agree instead of one silently winning (rag_r1's `mode`: the prompts were written for it)."""
    values = []
    for where, layer in config_layers(key, rollout_config, loop_kwargs, extra_info):
        layer = _plain(layer)
        if isinstance(layer, Mapping) and layer.get(field) is not None:
            values.append((where, layer[field]))
    sample = values.pop() if values and values[-1][0].startswith("extra_info.") else None
    if sample is None or not values:
        return
    run_where, run_value = values[-1]
    if run_value != sample[1]:
        raise ValueError(f"{key}.{field} disagrees: the run sets {run_value!r} ({run_where}) but this sample's "
                         f"{sample[0]}.{field} is {sample[1]!r}. {hint}".rstrip())


# -- stop strings on a token stream ---------------------------------------------------------------
def cut_at_stop(tokenizer, token_ids: Sequence[int], stops: Sequence[str]) -> tuple[int, str | None]:
    """(n, stop): the shortest prefix `token_ids[:n]` whose text contains one of `stops`, and that stop.

    Returns `(len(token_ids), None)` when no stop occurs. The cut is at a token boundary: if the token that
    completes the stop string also carries characters after it (e.g. `>\\n` as one token), they stay —
    cutting inside a token would mean re-tokenising what the policy generated. A binary search over
    prefixes keeps this to O(log n) decodes, and to two when the last token completes the stop (a server
    that honours `stop` ends there).
    """
    ids = list(token_ids)
    if not ids or not stops:
        return len(ids), None

    def first_stop(n: int) -> str | None:
        text = tokenizer.decode(ids[:n], skip_special_tokens=False)
        found = [(text.find(stop), stop) for stop in stops if stop in text]
        return min(found)[1] if found else None

    stop = first_stop(len(ids))
    if stop is None:
        return len(ids), None
    if len(ids) == 1 or first_stop(len(ids) - 1) is None:
        return len(ids), stop
    lo, hi = 1, len(ids)
    while lo < hi:
        mid = (lo + hi) // 2
        if first_stop(mid) is None:
            lo = mid + 1
        else:
            hi = mid
    return lo, first_stop(lo)


def eos_token_ids(tokenizer, generation_config=None) -> set[int]:
    ids: set[int] = set()
    for source in (tokenizer, generation_config):
        value = getattr(source, "eos_token_id", None) if source is not None else None
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return ids


# -- the token-level trajectory -------------------------------------------------------------------
class Trajectory:
    """prompt ids + a response built from policy segments (mask 1) and observation segments (mask 0)."""

    def __init__(self, prompt_ids: list[int], response_length: int):
        self.prompt_ids = list(prompt_ids)
        self.response_length = int(response_length)
        self.response_ids: list[int] = []
        self.response_mask: list[int] = []
        self.logprobs: list[float] | None = []  # None once a policy segment came without logprobs

    @property
    def remaining(self) -> int:
        return self.response_length - len(self.response_ids)

    def add_policy(self, token_ids: Sequence[int], logprobs: Sequence[float] | None) -> None:
        token_ids = [int(t) for t in token_ids]
        self.response_ids += token_ids
        self.response_mask += [1] * len(token_ids)
        if self.logprobs is not None:
            if logprobs is not None and len(logprobs) == len(token_ids):
                self.logprobs += [float(lp) for lp in logprobs]
            elif token_ids:
                self.logprobs = None

    def add_observation(self, token_ids: Sequence[int]) -> None:
        token_ids = [int(t) for t in token_ids]
        self.response_ids += token_ids
        self.response_mask += [0] * len(token_ids)
        if self.logprobs is not None:
            self.logprobs += [0.0] * len(token_ids)

    def drop_observation_tail(self, n: int) -> None:
        """Remove the last `n` response tokens, which must be observation tokens (a chat template's boundary
        handling may replace the end of the previous observation); policy tokens are never removed."""
        if n <= 0:
            return
        if n > len(self.response_ids) or any(self.response_mask[-n:]):
            raise ValueError(f"cannot drop the last {n} response tokens: they are not all observation tokens "
                             "(policy tokens are kept exactly as generated)")
        del self.response_ids[-n:], self.response_mask[-n:]
        if self.logprobs is not None:
            del self.logprobs[-n:]

    def output_fields(self) -> dict[str, Any]:
        """prompt/response ids, mask and logprobs for AgentLoopOutput, cut to `response_length`."""
        n = self.response_length
        has_logprobs = self.logprobs is not None and any(self.response_mask)
        return {
            "prompt_ids": self.prompt_ids,
            "response_ids": self.response_ids[:n],
            "response_mask": self.response_mask[:n],
            "response_logprobs": self.logprobs[:n] if has_logprobs else None,
        }


def server_logprobs(output) -> list[float] | None:
    """The server's logprobs, or None when it did not return one per token (verl's client returns [])."""
    log_probs = getattr(output, "log_probs", None)
    if not log_probs or len(log_probs) != len(output.token_ids):
        return None
    return list(log_probs)


def merge_server_extra_fields(extra_fields: dict, output) -> None:
    """Keep the first generation's extra fields (global_steps, ...) and the latest max_global_steps, as
    verl's ToolAgentLoop does."""
    fields = dict(getattr(output, "extra_fields", None) or {})
    if not extra_fields:
        extra_fields.update(fields)
    elif fields.get("max_global_steps"):
        extra_fields["max_global_steps"] = fields["max_global_steps"]


def output_extra_fields(server_fields: dict, loop_name: str, record: dict, **more: Any) -> dict:
    """AgentLoopOutput.extra_fields as our loops fill them: the server's fields, verl's per-turn reward lists (empty:
    our loops are scored once, at the end), `more` (e.g. gui's image sizes) and the loop's own `record` under its
    name."""
    return {**server_fields, "turn_scores": [], "tool_rewards": [], **more, loop_name: record}


def hit_length_limit(stop_reason: str | None, generated: Sequence[int], max_tokens: int, eos_ids: set[int]) -> bool:
    """The turn ended on its token budget, not on EOS: the server says so, or it used every token without EOS."""
    return stop_reason == "length" or (len(generated) >= max_tokens and (not generated or generated[-1] not in eos_ids))


@dataclasses.dataclass
class PolicyTurn:
    token_ids: list[int]
    text: str  # decoded without special tokens
    latency_s: float
    hit_limit: bool
    server_fields: dict


async def generate_single_turn(server_manager, tokenizer, *, request_id: str, prompt_ids: list[int],
                               sampling_params: dict, max_tokens: int, eos_ids: set[int], traj: Trajectory, trace,
                               **generate_kwargs) -> PolicyTurn:
    """One generation of a single-turn loop (function_call, gui): kept as generated (mask 1) and traced."""
    started = time.perf_counter()
    output = await server_manager.generate(
        request_id=request_id, prompt_ids=prompt_ids, sampling_params={**sampling_params, "max_tokens": max_tokens},
        **generate_kwargs,
    )
    latency = time.perf_counter() - started
    server_fields: dict[str, Any] = {}
    merge_server_extra_fields(server_fields, output)
    generated = list(output.token_ids)
    traj.add_policy(generated, server_logprobs(output))
    trace.add_turn(len(generated), 0, latency, stop_reason=output.stop_reason)
    return PolicyTurn(
        token_ids=generated,
        text=tokenizer.decode(generated, skip_special_tokens=True),
        latency_s=latency,
        hit_limit=hit_length_limit(output.stop_reason, generated, max_tokens, eos_ids),
        server_fields=server_fields,
    )
