"""The bfcl_multi_turn row schema: parse_entry reads a BFCL entry from extra_info in every form a row can take
(dicts, JSON strings, what parquet gives back), turns miss_func names into the docs a turn adds, and refuses
rows the loop cannot run; the multi-turn prompt builders."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from agentic_verl.agent_loops.prompts import (
    bfcl_added_functions_message,
    bfcl_multi_turn_messages,
    bfcl_multi_turn_system_prompt,
)
from agentic_verl.rewards.bfcl.multi_turn_entry import EntryError, parse_entry

DOCS = [{"name": "ls", "parameters": {}}, {"name": "cd", "parameters": {}}, {"name": "mv", "parameters": {}}]
ENTRY = {
    "id": "multi_turn_miss_func_3",
    "question": [[{"role": "user", "content": "Go to docs."}], [], [{"role": "user", "content": "Rename it."}]],
    "initial_config": {"GorillaFileSystem": {"root": {"docs": {}}}, "TwitterAPI": {"username": "x"}},
    "involved_classes": ["GorillaFileSystem", "TwitterAPI"],
    "function": DOCS,
    "missed_function": {"1": ["cd"]},
    "ground_truth": [["ls()"], ["cd(folder='docs')"], []],
}


def as_json(entry: dict) -> dict:
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in entry.items()}


def test_every_stored_form_gives_the_same_entry(tmp_path):
    # parquet: the structured fields as JSON strings, involved_classes as a list column (numpy when read back)
    rows = [{**as_json(ENTRY), "involved_classes": ENTRY["involved_classes"]},
            {**as_json({**ENTRY, "id": "multi_turn_base_0", "missed_function": {}}),
             "involved_classes": ["GorillaFileSystem"]}]
    pd.DataFrame({"extra_info": rows}).to_parquet(tmp_path / "rows.parquet")
    from_parquet = pd.read_parquet(tmp_path / "rows.parquet")["extra_info"][0]
    entries = [parse_entry(ENTRY), parse_entry(as_json(ENTRY)), parse_entry(from_parquet)]
    assert all(e == entries[0] for e in entries)
    entry = entries[0]
    assert entry.raw["initial_config"] == ENTRY["initial_config"] and entry.raw["missed_function"] == {"1": ["cd"]}
    assert [d["name"] for d in entry.functions_at_start()] == ["ls", "mv"]
    assert entry.added_functions(1) == [DOCS[1]] and entry.added_functions(2) == []
    assert entry.long_context is False and entry.num_turns == 3


def test_bfcls_own_forms_and_long_context():
    # BFCL's loader replaces the missed names by their docs and takes them out of `function`
    populated = {**ENTRY, "function": [DOCS[0], DOCS[2]], "missed_function": {"1": [DOCS[1]]}}
    assert parse_entry(populated).added_functions(1) == [DOCS[1]]
    assert parse_entry({**ENTRY, "id": "multi_turn_long_context_5"}).long_context is True
    assert parse_entry({**ENTRY, "id": "multi_turn_long_context_5", "long_context": False}).long_context is False


@pytest.mark.parametrize("change, message", [
    ({"missed_function": {"1": ["rm"]}}, "names 'rm', which is not a doc"),
    ({"missed_function": {"0": ["cd"]}}, "turn 0's functions belong in the system prompt"),
    ({"missed_function": {"2": ["cd"]}}, "turn 2 adds functions, so its question must be empty"),
    ({"missed_function": {}}, "turn 1 has no message and adds no functions"),
    ({"ground_truth": [["ls()"]]}, "one list of call strings per turn"),
    ({"initial_config": "{not json"}, "initial_config is a string but not JSON"),
    ({"involved_classes": []}, "involved_classes must be a non-empty list"),
    ({"question": []}, "needs at least one turn"),
    ({"id": None}, "extra_info.id is missing"),
])
def test_rows_the_loop_cannot_run_are_refused(change, message):
    with pytest.raises(EntryError, match=message):
        parse_entry({**ENTRY, **change})


def test_ground_truth_is_required_only_for_the_reward():
    entry = {k: v for k, v in ENTRY.items() if k != "ground_truth"}
    assert parse_entry(entry).ground_truth is None
    with pytest.raises(EntryError, match="extra_info.ground_truth is missing"):
        parse_entry(entry, need_ground_truth=True)


def test_multi_turn_prompts():
    system = bfcl_multi_turn_system_prompt(DOCS[:1])
    assert "answer without one; that ends the turn" in system and '"name": "ls"' in system
    messages = bfcl_multi_turn_messages([{"role": "system", "content": "Be brief."},
                                         {"role": "user", "content": "Go."}], DOCS[:1])
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == system + "\n\nBe brief."  # the turn's own system text follows ours
    added = bfcl_added_functions_message([DOCS[1]])
    assert added["role"] == "user" and json.loads(added["content"].split("\nI have updated")[0]) == [DOCS[1]]
