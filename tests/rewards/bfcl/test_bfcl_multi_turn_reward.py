"""The `bfcl_multi_turn` reward: the environment's checker verdict mapped to a score and metrics, BFCL's runner
order (budget- and force-terminated trajectories fail unchecked), and loud failures (a raising or malformed
checker is counted and stops the run; a row without the loop's record raises). A stand-in checker plays the
BFCL environment client; verl's own loader and naive reward manager where the wiring is the point."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from agentic_verl.rewards import REWARDS, load_reward
from agentic_verl.rewards.bfcl import multi_turn
from agentic_verl.rewards.failures import REWARD_EXCEPTIONS, RewardFailFastError

REPO = Path(__file__).resolve().parents[3]
GROUND_TRUTH = [["ls()"], [], ["cd(folder='docs')", "touch(file_name='a.txt')"]]
MODEL_CALLS = [[[{"name": "ls", "arguments": {}}]], [],
               [[{"name": "cd", "arguments": {"folder": "docs"}}], [{"name": "touch", "arguments": {"file_name": "a.txt"}}]]]
TURNS = [{"steps": 2, "calls": 1, "decode_failures": 0, "env_errors": 0, "end": "no_call"},
         {"steps": 1, "calls": 0, "decode_failures": 1, "env_errors": 0, "end": "parse_error"},
         {"steps": 3, "calls": 2, "decode_failures": 0, "env_errors": 1, "end": "no_call"}]


def extra_info(**record):
    """A row's extra_info after verl's reward manager merged the loop's extra_fields into it."""
    info = {
        "id": "multi_turn_base_7",
        "question": json.dumps([[{"role": "user", "content": "List."}], [{"role": "user", "content": "Thanks."}],
                                [{"role": "user", "content": "Create a.txt in docs."}]]),
        "initial_config": json.dumps({"GorillaFileSystem": {"root": {"docs": {}}}}),
        "involved_classes": np.array(["GorillaFileSystem"], dtype=object),  # as parquet gives lists back
        "function": json.dumps([{"name": "ls"}, {"name": "cd"}, {"name": "touch"}]),
        "ground_truth": json.dumps(GROUND_TRUTH),
        "bfcl_multi_turn": {"id": "multi_turn_base_7", "model_calls": MODEL_CALLS, "turns": TURNS,
                            "terminated": None, "num_turns": 3, "env_url": "http://127.0.0.1:7001",
                            "env_api_key_env": None, "env_timeout_s": 30.0, **record},
    }
    return info


class Checker:
    """Stands for BfclEnvClient.check; records its clients and calls."""

    def __init__(self, answer=None, raises: Exception | None = None, hang: bool = False):
        self.answer = answer if answer is not None else {"valid": True, "error_type": None,
                                                         "per_turn": [True, True, True], "details": {}}
        self.raises, self.hang = raises, hang
        self.calls, self.clients = [], []

    async def check(self, *, entry, model_calls):
        self.calls.append({"entry": entry, "model_calls": model_calls})
        if self.hang:
            await asyncio.sleep(3600)
        if self.raises is not None:
            raise self.raises
        return self.answer


@pytest.fixture()
def checker(monkeypatch):
    fake = Checker()

    def new_env_client(url, api_key_env, timeout_s):
        fake.clients.append((url, api_key_env, timeout_s))
        return fake

    monkeypatch.setattr(multi_turn, "new_env_client", new_env_client)
    multi_turn._BACKGROUND.clients.clear()
    REWARD_EXCEPTIONS.clear()
    yield fake
    multi_turn._BACKGROUND.clients.clear()
    REWARD_EXCEPTIONS.clear()


def entry_fn(reward_kwargs=None):
    """reward_fns/bfcl_multi_turn.py as verl 0.9.1 loads it."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": str(REPO / "reward_fns/bfcl_multi_turn.py"), "name": "compute_score",
        "reward_kwargs": reward_kwargs or {}}}})
    return get_custom_reward_fn(config)


def score(fn, info, ground_truth=None):
    return fn(data_source="bfcl_multi_turn", solution_str="ignored", ground_truth=ground_truth, extra_info=info)


def test_a_valid_trajectory_scores_one_with_per_turn_metrics(checker):
    result = score(entry_fn(), extra_info(), ground_truth=json.dumps(GROUND_TRUTH))
    assert result["score"] == 1.0 and result["error_type"] is None
    assert result["bfcl_mt/valid"] == 1.0 and result["bfcl_mt/turn_accuracy"] == 1.0
    assert result["bfcl_mt/turns_passed"] == 3.0 and result["bfcl_mt/first_failed_turn"] == -1.0
    assert json.loads(result["bfcl_mt/per_turn"]) == [True, True, True]
    assert (result["bfcl_mt/steps"], result["bfcl_mt/calls"], result["bfcl_mt/decode_failures"],
            result["bfcl_mt/env_errors"]) == (6.0, 3.0, 1.0, 1.0)
    assert result["reward/bfcl_multi_turn/exceptions"] == 0.0
    # what the checker got: the entry (JSON fields parsed, numpy gone) and the loop's calls, on the loop's server
    [call] = checker.calls
    assert call["model_calls"] == MODEL_CALLS
    assert call["entry"]["ground_truth"] == GROUND_TRUTH and call["entry"]["involved_classes"] == ["GorillaFileSystem"]
    assert call["entry"]["initial_config"] == {"GorillaFileSystem": {"root": {"docs": {}}}}
    assert checker.clients == [("http://127.0.0.1:7001", None, 30.0)]


def test_an_invalid_verdict_keeps_the_checkers_error_type(checker):
    checker.answer = {"valid": False, "error_type": "multi_turn:instance_state_mismatch",
                      "per_turn": [True, True, False], "details": {"turn": 2}}
    result = score(entry_fn(), extra_info())
    assert (result["score"], result["error_type"]) == (0.0, "multi_turn:instance_state_mismatch")
    assert result["bfcl_mt/turn_accuracy"] == pytest.approx(2 / 3) and result["bfcl_mt/first_failed_turn"] == 2.0
    # the server named in reward_kwargs wins over the loop's
    score(entry_fn({"env_url": "http://127.0.0.1:7002", "timeout_s": 5}), extra_info())
    assert checker.clients[-1] == ("http://127.0.0.1:7002", None, 5.0)


@pytest.mark.parametrize("record, error_type", [
    ({"terminated": "max_tokens"}, "bfcl_multi_turn:max_tokens"),
    ({"terminated": "response_budget"}, "bfcl_multi_turn:response_budget"),
    ({"terminated": "step_limit", "model_calls": MODEL_CALLS[:1]}, "multi_turn:force_terminated"),
])
def test_unfinished_trajectories_fail_without_the_checker(record, error_type, checker):
    result = score(entry_fn(), extra_info(**record))
    assert (result["score"], result["error_type"]) == (0.0, error_type)
    assert checker.calls == []


def test_every_result_has_the_same_keys(checker):
    fn = entry_fn()
    results = [score(fn, extra_info()), score(fn, extra_info(terminated="max_tokens")),
               score(fn, extra_info(model_calls=[])), fn("bfcl", "", None, None)]  # the last: the wrappers' trial call
    checker.answer = {"valid": False, "error_type": "multi_turn:empty_turn_model_response", "per_turn": [False]}
    results.append(score(fn, extra_info()))
    assert all(r.keys() == results[0].keys() for r in results)  # verl stacks reward_extra_info key by key
    assert results[3]["error_type"] == "bfcl_multi_turn:no_trajectory"
    composed = load_reward([{"name": "bfcl_multi_turn"}])  # also usable by name in a composition
    assert composed("", None, extra_info())["bfcl_multi_turn/bfcl_mt/valid"] == 0.0


@pytest.mark.parametrize("problem", [
    "checker_raises", "not_a_verdict", "invalid_without_error_type", "per_turn_too_long", "no_record",
    "ground_truths_disagree", "no_server", "hangs",
])
def test_failures_are_counted_and_stop_the_run(problem, checker, monkeypatch):
    info, ground_truth, kwargs = extra_info(), None, {"max_consecutive_exceptions": 2}
    if problem == "checker_raises":
        checker.raises = RuntimeError("502 from the BFCL environment server")
    elif problem == "not_a_verdict":
        checker.answer = {"ok": True}
    elif problem == "invalid_without_error_type":
        checker.answer = {"valid": False, "error_type": None, "per_turn": []}
    elif problem == "per_turn_too_long":
        checker.answer = {"valid": True, "error_type": None, "per_turn": [True] * 4}
    elif problem == "no_record":
        del info["bfcl_multi_turn"]
    elif problem == "ground_truths_disagree":
        ground_truth = json.dumps([["ls()"], [], []])
    elif problem == "no_server":
        info["bfcl_multi_turn"]["env_url"] = ""
    else:
        checker.hang = True
        monkeypatch.setattr(multi_turn, "_MARGIN_S", 0.0)
        kwargs["timeout_s"] = 0.2
    fn = entry_fn(kwargs)
    first = score(fn, info, ground_truth)  # counted: 0 with the exception marked, never a quiet 0
    assert first["score"] == 0.0 and first["reward/bfcl_multi_turn/exceptions"] == 1.0
    assert first["error_type"].startswith("bfcl_multi_turn:exception:")
    with pytest.raises(RewardFailFastError, match="component 'bfcl_multi_turn' raised 2 times in a row"):
        score(fn, info, ground_truth)
    with pytest.raises(RewardFailFastError):  # and every later call of the process
        score(fn, extra_info())


def test_through_verls_naive_reward_manager(checker):
    """verl merges the loop's extra_fields (tool_extra_fields) into extra_info and keeps our keys as reward_extra_info."""
    import torch
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

    info = extra_info()
    record = info.pop("bfcl_multi_turn")
    tokens = torch.tensor([[1, 2, 3]])
    non_tensors = {"data_source": np.array(["bfcl"], dtype=object), "reward_model": np.empty(1, dtype=object),
                   "extra_info": np.empty(1, dtype=object), "tool_extra_fields": np.empty(1, dtype=object)}
    non_tensors["reward_model"][0] = {"ground_truth": json.dumps(GROUND_TRUTH)}
    non_tensors["extra_info"][0] = info
    non_tensors["tool_extra_fields"][0] = {"bfcl_multi_turn": record, "turn_scores": []}
    data = DataProto.from_dict(tensors={"prompts": tokens, "responses": tokens, "input_ids": torch.cat([tokens] * 2, 1),
                                        "attention_mask": torch.ones(1, 6, dtype=torch.long)}, non_tensors=non_tensors)

    class Tokenizer:
        def decode(self, ids, skip_special_tokens=True):
            return "".join(map(str, ids.tolist()))

    async def run():
        manager = get_reward_manager_cls("naive")(config=OmegaConf.create({}), tokenizer=Tokenizer(),
                                                  compute_score=entry_fn())
        return await manager.run_single(data)

    result = asyncio.run(run())
    assert result["reward_score"] == 1.0
    assert result["reward_extra_info"]["bfcl_mt/turn_accuracy"] == 1.0
    assert checker.calls[0]["model_calls"] == MODEL_CALLS


def test_registered_by_name():
    assert REWARDS.get("bfcl_multi_turn") is multi_turn.bfcl_multi_turn
