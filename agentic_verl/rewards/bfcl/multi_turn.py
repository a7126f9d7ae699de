"""The `bfcl_multi_turn` reward component: bfcl-eval's own multi-turn checker on a `bfcl_multi_turn` trajectory.

The trajectory is what the `bfcl_multi_turn` agent loop recorded (`extra_fields["bfcl_multi_turn"]`, which verl's
reward manager merges into `extra_info`): `model_calls[turn][step]`, the calls the environment executed. The
verdict comes from the BFCL environment server (`BfclEnvClient.check`, bfcl-eval's `multi_turn_checker`: state
and response checks, turn by turn), in the order of BFCL's evaluation runner:

1. the loop ended the trajectory for lack of tokens (`terminated` "max_tokens" or "response_budget"): the model
   did not finish, 0.0 with error_type `bfcl_multi_turn:<terminated>`; the checker is not asked;
2. fewer turns than the entry has (the loop force-quit after `max_steps_per_turn` steps, as BFCL's inference
   does): 0.0 with BFCL's own `multi_turn:force_terminated`; BFCL's runner does not run the checker either;
3. otherwise the checker's verdict: 1.0 when valid, else 0.0 with its error type (`multi_turn:instance_state_mismatch`,
   `multi_turn:execution_response_mismatch`, `multi_turn:empty_turn_model_response`, ...).

Every result has the same keys (verl stacks reward_extra_info key by key): `score`, `error_type`, and
`bfcl_mt/valid`, `bfcl_mt/turn_accuracy` (turns the checker passed / turns of the entry), `bfcl_mt/turns_passed`,
`bfcl_mt/first_failed_turn` (-1 when none failed), `bfcl_mt/per_turn` (the checker's per-turn verdicts as JSON, for
turn-level credit later), and the loop's counts over the trajectory: `bfcl_mt/steps`, `bfcl_mt/calls`,
`bfcl_mt/decode_failures`, `bfcl_mt/env_errors`, `bfcl_mt/terminated`.

Failures are loud, never a 0 that looks like the model's: a trajectory whose environment failed during the rollout
(`terminated` "env_error"), a checker that raises (server down, `BfclEnvError`), an
answer without a verdict, a row without the loop's record, ground truths that disagree all raise, and the reward
wrappers (`verl_compute_score`, `ComposedReward`) count them as `reward/bfcl_multi_turn/exceptions` and stop the run
after `max_consecutive_exceptions` in a row (agentic_verl.rewards.failures). Only the wrappers' trial call
(`extra_info=None`) scores 0 without a trajectory (error_type `bfcl_multi_turn:no_trajectory`).

The component is synchronous, as every reward component is (verl runs it in a thread pool); the environment client
is asynchronous, so its calls run on one event loop of this module's own, in a background thread.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping
from typing import Any

from agentic_verl.bfcl_env.client import BfclEnvClient
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry, plain
from agentic_verl.rewards.registry import REWARDS

RECORD_KEY = "bfcl_multi_turn"  # the loop's extra_fields key (and agent name)
BUDGET_TERMINATIONS = ("max_tokens", "response_budget")
ENV_ERROR = "env_error"  # the loop's `terminated` when the environment failed mid-trajectory
FORCE_TERMINATED = "multi_turn:force_terminated"  # BFCL's runner's verdict on a trajectory with turns missing
COUNT_KEYS = ("steps", "calls", "decode_failures", "env_errors")
_MARGIN_S = 5.0  # waiting for a check: the client's own timeout plus this


def new_env_client(url: str, api_key_env: str | None, timeout_s: float):
    """A `BfclEnvClient` (the loop and the reward make theirs here; tests replace this function)."""
    return BfclEnvClient(url, api_key_env=api_key_env, timeout_s=float(timeout_s))


class _BackgroundLoop:
    """One event loop in a daemon thread, where this process's checker clients live."""

    def __init__(self):
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.clients: dict[tuple, Any] = {}

    def run(self, make_coroutine, timeout_s: float):
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="bfcl-mt-reward", daemon=True).start()
        future = asyncio.run_coroutine_threadsafe(make_coroutine(), self._loop)
        try:
            return future.result(timeout_s)
        except TimeoutError:
            future.cancel()
            raise TimeoutError(f"the BFCL environment's check did not answer in {timeout_s:.0f} s") from None


_BACKGROUND = _BackgroundLoop()


def _check(url: str, api_key_env: str | None, timeout_s: float, entry: dict, model_calls: list) -> Any:
    key = (url, api_key_env, float(timeout_s))

    async def check():
        client = _BACKGROUND.clients.get(key)
        if client is None:
            client = _BACKGROUND.clients[key] = new_env_client(url, api_key_env, timeout_s)
        return await client.check(entry=entry, model_calls=model_calls)

    return _BACKGROUND.run(check, float(timeout_s) + _MARGIN_S)


def _result(score: float, error_type: str | None, *, valid: bool = False, per_turn: list[bool] | None = None,
            num_turns: int = 0, record: Mapping | None = None) -> dict:
    per_turn = list(per_turn or [])
    turns = (record or {}).get("turns") or []
    failed = [i for i, ok in enumerate(per_turn) if not ok]
    result = {
        "score": float(score),
        "error_type": error_type,
        "bfcl_mt/valid": 1.0 if valid else 0.0,
        "bfcl_mt/turn_accuracy": sum(per_turn) / num_turns if num_turns else 0.0,
        "bfcl_mt/turns_passed": float(sum(per_turn)),
        "bfcl_mt/first_failed_turn": float(failed[0]) if failed else -1.0,
        "bfcl_mt/per_turn": json.dumps(per_turn),
    }
    result.update({f"bfcl_mt/{key}": float(sum(int(turn.get(key, 0)) for turn in turns)) for key in COUNT_KEYS})
    result["bfcl_mt/terminated"] = (record or {}).get("terminated")
    return result


def _verdict(answer: Any, num_turns: int) -> tuple[bool, str | None, list[bool]]:
    if not isinstance(answer, Mapping) or not isinstance(answer.get("valid"), bool):
        raise ValueError(f"the BFCL environment's check answered {answer!r}, not {{'valid': bool, ...}}")
    per_turn = answer.get("per_turn", [])
    if not isinstance(per_turn, list) or not all(isinstance(ok, bool) for ok in per_turn) or len(per_turn) > num_turns:
        raise ValueError(f"the BFCL environment's check answered per_turn={per_turn!r} for {num_turns} turns")
    error_type = answer.get("error_type")
    if not answer["valid"] and not error_type:
        raise ValueError(f"the BFCL environment's check says invalid without an error type: {answer!r}")
    return answer["valid"], (None if answer["valid"] else str(error_type)), per_turn


@REWARDS.register("bfcl_multi_turn")
def bfcl_multi_turn(solution_str, ground_truth, extra_info=None, *, env_url: str | None = None,
                    api_key_env: str | None = None, timeout_s: float | None = None, **kwargs) -> dict:
    """Reward component (see the module docstring). `solution_str` is not read: the trajectory's calls are in
    `extra_info["bfcl_multi_turn"]`. `ground_truth` (verl's reward_model.ground_truth), when given, must equal
    `extra_info.ground_truth`, which is the one scored.

    Options (reward_kwargs):
    - env_url (str, default: the loop's, recorded with the trajectory): the BFCL environment server that checks;
    - api_key_env (str, default: the loop's): the variable holding that server's token;
    - timeout_s (float, default: the loop's): the client's timeout for one check.
    """
    if extra_info is None:  # the reward wrappers' trial call: nothing to check
        return _result(0.0, "bfcl_multi_turn:no_trajectory")
    record = extra_info.get(RECORD_KEY) if isinstance(extra_info, Mapping) else None
    if not isinstance(record, Mapping) or "model_calls" not in record:
        raise ValueError("extra_info has no bfcl_multi_turn trajectory (extra_info['bfcl_multi_turn']['model_calls']): "
                         "score rows rolled out by the bfcl_multi_turn agent loop (agent_name), through a reward "
                         "manager that merges the loop's extra_fields (verl's naive one, or agentic_trace)")
    entry = parse_entry(extra_info, need_ground_truth=True)
    if ground_truth is not None and ground_truth != "":
        given = json.loads(ground_truth) if isinstance(ground_truth, str) else plain(ground_truth)
        if given != entry.ground_truth:
            raise ValueError(f"{entry.id}: reward_model.ground_truth and extra_info.ground_truth disagree; the row "
                             f"writer must give both the same calls")
    model_calls = plain(record["model_calls"])
    terminated = record.get("terminated")
    if terminated == ENV_ERROR:  # not the model's doing: loud (the reward wrappers count it), never a 0
        raise RuntimeError(f"{entry.id}: the BFCL environment failed during the rollout ({record.get('env_failure')}); "
                           "the trajectory is no model behaviour to score")
    if terminated in BUDGET_TERMINATIONS:
        return _result(0.0, f"bfcl_multi_turn:{terminated}", num_turns=entry.num_turns, record=record)
    if not isinstance(model_calls, list) or len(model_calls) > entry.num_turns:
        raise ValueError(f"{entry.id}: model_calls must be a list of at most {entry.num_turns} turns, got "
                         f"{type(model_calls).__name__} of {len(model_calls) if isinstance(model_calls, list) else '?'}")
    if len(model_calls) < entry.num_turns:
        return _result(0.0, FORCE_TERMINATED, num_turns=entry.num_turns, record=record)

    url = env_url or record.get("env_url")
    if not url:
        raise ValueError("bfcl_multi_turn reward: no environment server (the trajectory records none; set "
                         "+reward.custom_reward_function.reward_kwargs.env_url=http://127.0.0.1:PORT)")
    key_env = api_key_env if api_key_env is not None else record.get("env_api_key_env")
    timeout = float(timeout_s if timeout_s is not None else record.get("env_timeout_s") or 30.0)
    answer = _check(url, key_env, timeout, entry.raw, model_calls)
    valid, error_type, per_turn = _verdict(answer, entry.num_turns)
    return _result(1.0 if valid else 0.0, error_type, valid=valid, per_turn=per_turn, num_turns=entry.num_turns,
                   record=record)
