"""/check: bfcl-eval's multi-turn checker through the server agrees with the same checker run directly, on the
ground truths of real BFCL questions of all four multi-turn categories and on mutations of them; per-turn
verdicts; nothing from the request is evaluated beyond literals."""

from __future__ import annotations

import asyncio

import pytest
from _bfcl_env_testlib import (
    CATEGORIES,
    all_cases,
    decoded,
    load_entries,
    official_checks,
    one_step_per_turn,
    post,
    requires_venv,
)

from agentic_verl.bfcl_env.client import BfclEnvClient

pytestmark = requires_venv

PER_CATEGORY = 3


@pytest.fixture(scope="module")
def cases():
    return all_cases(PER_CATEGORY)


async def test_verdicts_agree_with_bfcl_eval_s_checker_run_directly(bfcl_env, cases):
    client = BfclEnvClient(bfcl_env.url)
    ours = await asyncio.gather(*(client.check(entry=entry, model_calls=decoded(strings))
                                  for entry, _, strings in cases))
    theirs = official_checks(cases)
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
    gold = await client.check(entry=entry, model_calls=one_step_per_turn(gt))
    assert gold["valid"] and gold["per_turn"] == [True] * 4 and gold["error_type"] is None

    skipped = one_step_per_turn(gt)
    skipped[2] = []  # turn 2 (sort) left out; it changes no state, so turn 3 still passes
    verdict = await client.check(entry=entry, model_calls=skipped)
    assert not verdict["valid"] and verdict["error_type"] == "multi_turn:empty_turn_model_response"
    assert verdict["per_turn"] == [True, True, False, True]
    assert verdict["per_turn_error_types"] == [None, None, "multi_turn:empty_turn_model_response", None]

    wrong_dir = one_step_per_turn(gt)
    wrong_dir[0][0][1]["arguments"]["dir_name"] = "tmp"  # mkdir(dir_name='tmp'): the state differs from here on
    verdict = await client.check(entry=entry, model_calls=wrong_dir)
    assert verdict["error_type"] == "multi_turn:instance_state_mismatch"
    assert verdict["per_turn"][0] is False
    assert "differences" in verdict["details"]  # bfcl-eval's own report, as JSON

    short = one_step_per_turn(gt)[:3]
    verdict = await client.check(entry=entry, model_calls=short)
    assert verdict["error_type"] == "multi_turn:force_terminated" and verdict["per_turn"] == [False] * 4
    await client.aclose()


async def test_a_turn_whose_ground_truth_calls_nothing_is_not_checked(bfcl_env):
    entry = next(e for e in load_entries("miss_func") if any(not turn for turn in e["ground_truth"]))
    client = BfclEnvClient(bfcl_env.url)
    verdict = await client.check(entry=entry, model_calls=one_step_per_turn(entry["ground_truth"]))
    assert verdict["valid"] and all(verdict["per_turn"])
    await client.aclose()


async def test_nothing_in_a_check_request_is_run_as_code(bfcl_env, tmp_path):
    entry = load_entries("base", 1)[0]
    marker = tmp_path / "pwned"
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    client = BfclEnvClient(bfcl_env.url)
    # a model call named like a builtin, with arguments that would write a file if BFCL's eval ran it
    calls = one_step_per_turn(entry["ground_truth"])
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


CHECK_CALL_STRINGS = """
import json, sys
from agentic_verl.bfcl_env.checker import check_call_strings
from agentic_verl.bfcl_env.protocol import RequestError
entry, steps, bad = json.loads(sys.stdin.read())
refused = []
for text in bad:
    try:
        check_call_strings(entry, [[[text]]] + [[] for _ in entry["ground_truth"][1:]])
    except RequestError as exc:
        refused.append(str(exc))
print(json.dumps({"verdict": check_call_strings(entry, steps), "refused": refused}))
"""


def test_check_call_strings_judges_the_generators_call_strings_and_refuses_non_literal_ones(tmp_path):
    """The task generator's way in (call strings, in `.venv-bfcl`): gold passes, an emptied turn fails, and a
    string that is not one literal call of the entry's methods never reaches bfcl-eval's eval."""
    import json
    import os
    import subprocess

    from agentic_verl.bfcl_env.venv import package_only_path, venv_python

    entry = load_entries("base", 1)[0]
    marker = tmp_path / "pwned"
    bad = ["__import__('os').getcwd()", "print(1)", f"ls(a=open({str(marker)!r}, 'w'))"]
    runs = []
    for steps in ([[turn] for turn in entry["ground_truth"]], [[turn] for turn in entry["ground_truth"][:-1]] + [[]]):
        folder = tmp_path / f"path{len(runs)}"
        folder.mkdir()
        proc = subprocess.run([str(venv_python()), "-c", CHECK_CALL_STRINGS], input=json.dumps([entry, steps, bad]),
                              env={**os.environ, **package_only_path(folder)}, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.splitlines()[-1]))
    assert runs[0]["verdict"] == {"valid": True, "error_type": None, "error_message": None}
    assert runs[1]["verdict"]["error_type"] == "multi_turn:empty_turn_model_response"
    assert len(runs[0]["refused"]) == len(bad) and not marker.exists()
