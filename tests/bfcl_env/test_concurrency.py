"""Concurrent sessions share nothing: two trajectories of the same question run at once end in the states their
own calls make; many sessions at once are all served, none lost; concurrent checks do not see each other."""

from __future__ import annotations

import asyncio

from _bfcl_env_testlib import load_entries, one_step_per_turn, requires_venv

from agentic_verl.bfcl_env.client import BfclEnvClient

pytestmark = requires_venv


def _call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


TRAJECTORY_A = [[_call("cd", folder="document")], [_call("mkdir", dir_name="temp_a")],
                [_call("mv", source="final_report.pdf", destination="temp_a")], [_call("cd", folder="temp_a")],
                [_call("authenticate_twitter", username="analyst_pro", password="Kj8#mP9$vL2")],
                [_call("post_tweet", content="a was here", tags=["#a"])]]
TRAJECTORY_B = [[_call("cd", folder="document")], [_call("touch", file_name="notes_b.txt")],
                [_call("echo", content="b", file_name="notes_b.txt")], [_call("rm", file_name="previous_report.pdf")],
                [_call("post_tweet", content="b was here")]]  # not logged in: refused


async def _run(client: BfclEnvClient, entry: dict, steps: list, pause: float) -> tuple[list, dict]:
    sid = await client.create_session(initial_config=entry["initial_config"],
                                      involved_classes=entry["involved_classes"])
    outputs = []
    for step in steps:
        outputs.append(await client.execute(sid, step))
        await asyncio.sleep(pause)  # the other trajectory's calls land in between
    state = await client.state(sid)
    await client.close(sid)
    return outputs, state


def _document(state: dict) -> dict:
    return state["GorillaFileSystem"]["root"]["contents"]["document"]["contents"]


async def test_two_trajectories_of_one_question_at_once_end_as_their_own_calls_dictate(bfcl_env):
    entry = load_entries("base", 1)[0]
    client = BfclEnvClient(bfcl_env.url)
    (outputs_a, state_a), (outputs_b, state_b) = await asyncio.gather(_run(client, entry, TRAJECTORY_A, 0.01),
                                                                      _run(client, entry, TRAJECTORY_B, 0.013))
    doc_a, doc_b = _document(state_a), _document(state_b)
    assert sorted(doc_a) == ["previous_report.pdf", "temp_a"]
    assert sorted(doc_a["temp_a"]["contents"]) == ["final_report.pdf"]
    assert sorted(doc_b) == ["final_report.pdf", "notes_b.txt"]
    assert doc_b["notes_b.txt"]["content"] == "b"
    assert state_a["GorillaFileSystem"]["root"] != state_b["GorillaFileSystem"]["root"]
    tweets_a, tweets_b = state_a["TwitterAPI"]["tweets"], state_b["TwitterAPI"]["tweets"]
    assert len(tweets_a) == len(tweets_b) + 1 and state_a["TwitterAPI"]["authenticated"]
    assert not state_b["TwitterAPI"]["authenticated"] and "error" in outputs_b[-1][0]
    # the same calls alone, one trajectory after the other, give the same outputs and states
    assert await _run(client, entry, TRAJECTORY_A, 0) == (outputs_a, state_a)
    assert await _run(client, entry, TRAJECTORY_B, 0) == (outputs_b, state_b)
    await client.aclose()


async def test_32_concurrent_sessions_none_lost(bfcl_env):
    entry = load_entries("base", 1)[0]
    client = BfclEnvClient(bfcl_env.url)
    baseline = (await client.health())["sessions"]
    n = 32
    ready = asyncio.Event()
    open_count = []

    async def trajectory(i: int):
        sid = await client.create_session(initial_config=entry["initial_config"],
                                          involved_classes=entry["involved_classes"])
        outputs = [await client.execute(sid, [_call("cd", folder="document")])]
        outputs.append(await client.execute(sid, [_call("mkdir", dir_name=f"d{i}"), _call("cd", folder=f"d{i}"),
                                                  _call("touch", file_name=f"f{i}.txt")]))
        if i == 0:
            await asyncio.sleep(0.2)
            open_count.append((await client.health())["sessions"])
            ready.set()
        await ready.wait()  # every session is open at once before any closes
        state = await client.state(sid)
        await client.close(sid)
        return sid, outputs, state

    results = await asyncio.gather(*(trajectory(i) for i in range(n)))
    assert len({sid for sid, _, _ in results}) == n
    assert open_count == [baseline + n]
    for i, (_, outputs, state) in enumerate(results):
        assert outputs == [['{"current_working_directory": "document"}'],
                           ["None", f'{{"current_working_directory": "d{i}"}}', "None"]]
        document = _document(state)
        assert sorted(document) == sorted(["final_report.pdf", "previous_report.pdf", f"d{i}"])
        assert list(document[f"d{i}"]["contents"]) == [f"f{i}.txt"]
    assert (await client.health())["sessions"] == baseline
    await client.aclose()


async def test_concurrent_checks_of_one_question_do_not_see_each_other(bfcl_env):
    entry = load_entries("base", 1)[0]
    gold = one_step_per_turn(entry["ground_truth"])
    wrong = one_step_per_turn(entry["ground_truth"])
    wrong[0][0][1]["arguments"]["dir_name"] = "elsewhere"
    client = BfclEnvClient(bfcl_env.url)
    verdicts = await asyncio.gather(*(client.check(entry=entry, model_calls=gold if i % 2 else wrong)
                                      for i in range(16)))
    assert [v["valid"] for v in verdicts] == [bool(i % 2) for i in range(16)]
    await client.aclose()
