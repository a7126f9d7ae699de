"""/check: bfcl-eval's multi-turn checker through the server agrees with the same checker run directly, on the
ground truths of real BFCL questions of all four multi-turn categories and on mutations of them; per-turn
verdicts; nothing from the request is evaluated beyond literals."""

from __future__ import annotations

import asyncio
import copy

import pytest
from _bfcl_env_testlib import (
    CATEGORIES,
    as_calls,
    load_entries,
    official,
    one_step_per_turn,
    parameter_order,
    post,
    requires_venv,
)

from agentic_verl.bfcl_env.client import BfclEnvClient
from agentic_verl.bfcl_env.protocol import keyword_call

pytestmark = requires_venv

ORDER = parameter_order()
PER_CATEGORY = 3


def _write(call: dict) -> str:
    """A decoded call as the text a model would write (independent of the server's own rendering)."""
    return f"{call['name']}({', '.join(f'{k}={v!r}' for k, v in call['arguments'].items())})"


def _mutations(gt: list[list[str]]) -> dict[str, list[list[list[str]]]]:
    """{name: model call strings [turn][step][call]}: the ground truth and ways of getting it wrong."""
    gold = [[list(turn)] if turn else [] for turn in gt]
    busy = [t for t, turn in enumerate(gt) if turn]
    cases = {"gold": gold}
    dropped = copy.deepcopy(gold)
    dropped[busy[-1]][0] = dropped[busy[-1]][0][:-1]
    dropped[busy[-1]] = [step for step in dropped[busy[-1]] if step]
    cases["drop_last_call"] = dropped
    changed = copy.deepcopy(gold)
    middle = busy[len(busy) // 2]
    for i, text in enumerate(changed[middle][0]):
        call = keyword_call(text, ORDER)
        strings = [k for k, v in call["arguments"].items() if isinstance(v, str)]
        if strings:
            call["arguments"][strings[0]] = "zz_changed"
            changed[middle][0][i] = _write(call)
            break
    cases["changed_argument"] = changed
    empty = copy.deepcopy(gold)
    empty[busy[0]] = []
    cases["empty_turn"] = empty
    extra = copy.deepcopy(gold)
    extra[busy[0]].append(["no_such_function(x=1)", "ls(a=True)"])  # an unknown name and a harmless extra step
    cases["extra_calls"] = extra
    return cases


def _decoded(strings: list[list[list[str]]]) -> list[list[list[dict]]]:
    return [[as_calls(step, ORDER) for step in turn] for turn in strings]


@pytest.fixture(scope="module")
def cases():
    found = []
    for category in CATEGORIES:
        for entry in load_entries(category, PER_CATEGORY):
            for kind, strings in _mutations(entry["ground_truth"]).items():
                found.append((entry, kind, strings))
    return found


async def test_verdicts_agree_with_bfcl_eval_s_checker_run_directly(bfcl_env, cases):
    client = BfclEnvClient(bfcl_env.url)
    ours = await asyncio.gather(*(client.check(entry=entry, model_calls=_decoded(strings))
                                  for entry, _, strings in cases))
    theirs = official([{"op": "check", "model": strings, "gt": entry["ground_truth"],
                        "entry": {k: entry[k] for k in ("id", "initial_config", "involved_classes")}}
                       for entry, _, strings in cases])
    for (entry, kind, _), mine, official_verdict in zip(cases, ours, theirs, strict=True):
        assert (mine["valid"], mine["error_type"]) == (official_verdict["valid"], official_verdict["error_type"]), \
            (entry["id"], kind, mine["error_message"])
        assert mine["valid"] == all(mine["per_turn"])
        assert len(mine["per_turn"]) == len(entry["ground_truth"])
    by_kind = {}
    for (_, kind, _), mine in zip(cases, ours, strict=True):
        by_kind.setdefault(kind, []).append(mine["valid"])
    n = PER_CATEGORY * len(CATEGORIES)
    assert by_kind["gold"] == [True] * n and by_kind["extra_calls"] == [True] * n
    assert by_kind["empty_turn"] == [False] * n
    assert by_kind["drop_last_call"].count(False) >= n - 2 and by_kind["changed_argument"].count(False) >= n - 2
    await client.aclose()


async def test_per_turn_verdicts_go_on_after_the_first_failed_turn(bfcl_env):
    entry = load_entries("base", 1)[0]  # 4 turns; each turn's calls depend on the file moves before
    gt = entry["ground_truth"]
    client = BfclEnvClient(bfcl_env.url)
    gold = await client.check(entry=entry, model_calls=one_step_per_turn(gt, ORDER))
    assert gold["valid"] and gold["per_turn"] == [True] * 4 and gold["error_type"] is None

    skipped = one_step_per_turn(gt, ORDER)
    skipped[2] = []  # turn 2 (sort) left out; it changes no state, so turn 3 still passes
    verdict = await client.check(entry=entry, model_calls=skipped)
    assert not verdict["valid"] and verdict["error_type"] == "multi_turn:empty_turn_model_response"
    assert verdict["per_turn"] == [True, True, False, True]
    assert verdict["per_turn_error_types"] == [None, None, "multi_turn:empty_turn_model_response", None]

    wrong_dir = one_step_per_turn(gt, ORDER)
    wrong_dir[0][0][1]["arguments"]["dir_name"] = "tmp"  # mkdir(dir_name='tmp'): the state differs from here on
    verdict = await client.check(entry=entry, model_calls=wrong_dir)
    assert verdict["error_type"] == "multi_turn:instance_state_mismatch"
    assert verdict["per_turn"][0] is False
    assert "differences" in verdict["details"]  # bfcl-eval's own report, as JSON

    short = one_step_per_turn(gt, ORDER)[:3]
    verdict = await client.check(entry=entry, model_calls=short)
    assert verdict["error_type"] == "multi_turn:force_terminated" and verdict["per_turn"] == [False] * 4
    await client.aclose()


async def test_a_turn_whose_ground_truth_calls_nothing_is_not_checked(bfcl_env):
    entry = next(e for e in load_entries("miss_func") if any(not turn for turn in e["ground_truth"]))
    client = BfclEnvClient(bfcl_env.url)
    verdict = await client.check(entry=entry, model_calls=one_step_per_turn(entry["ground_truth"], ORDER))
    assert verdict["valid"] and all(verdict["per_turn"])
    await client.aclose()


async def test_nothing_in_a_check_request_is_run_as_code(bfcl_env, tmp_path):
    entry = load_entries("base", 1)[0]
    marker = tmp_path / "pwned"
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    client = BfclEnvClient(bfcl_env.url)
    # a model call named like a builtin, with arguments that would write a file if BFCL's eval ran it
    calls = one_step_per_turn(entry["ground_truth"], ORDER)
    calls[0][0].append({"name": "open", "arguments": {"file": str(marker), "mode": "w"}})
    calls[0][0].append({"name": "cd", "arguments": {"folder": code}})  # code as a string value stays a string
    calls[0][0].append({"name": "cd", "arguments": {"folder": "'); " + code + "; ('"}})
    verdict = await client.check(entry=entry, model_calls=calls)
    assert verdict["error_type"] in (None, "multi_turn:instance_state_mismatch")
    assert not marker.exists()

    entry_body = {k: entry[k] for k in ("id", "initial_config", "involved_classes", "ground_truth")}
    for bad_entry, words in [
        ({**entry_body, "ground_truth": [[f"cd(folder={code})"], [], [], []]}, "every argument must be a literal"),
        ({**entry_body, "ground_truth": [["__import__('os')"], [], [], []]}, "not a function of the entry"),
        ({**entry_body, "ground_truth": [["cd(folder='a'); " + code], [], [], []]}, "is not a call"),
        ({**entry_body, "id": "x')." + code + ".('"}, "entry.id"),
        ({**entry_body, "involved_classes": ["os"]}, "unknown class"),
        ({**entry_body, "long_context": True}, "long_context"),
    ]:
        status, answer = post(bfcl_env.url, "/check", {"entry": bad_entry, "model_calls": [[], [], [], []]})
        assert status == 422 and words in answer["error"], answer
    assert not marker.exists()
    await client.aclose()
