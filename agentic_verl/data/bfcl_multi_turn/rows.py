"""Generated entries in their written forms: BFCL's own file layout, and verl RL rows for the `bfcl_multi_turn` loop.

- `bfcl_files(entries, folder)`: `gen_multi_turn_{kind}.json` (question entries as bfcl-eval's data files hold them:
  id, question, initial_config, path, involved_classes, missed_function as names; plus `function`, the docs, which
  bfcl-eval's loader would otherwise add) and `possible_answer/gen_multi_turn_{kind}.json` ({id, ground_truth}),
  JSON lines, one pair per kind;
- `rl_row(entry)`: the row schema of docs/agent_loops.md ("bfcl_multi_turn"), checked by `parse_entry`: `prompt`
  is the system prompt with the functions available at turn 0 and turn 0's messages, `extra_info` the entry with its
  structured fields as JSON strings (parquet gives a struct column one schema for all rows).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentic_verl.agent_loops.prompts import bfcl_multi_turn_messages
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry

AGENT_NAME = "bfcl_multi_turn"
DATA_SOURCE = "bfcl_multi_turn_generated"
ABILITY = "function_calling"
_JSON_FIELDS = ("question", "initial_config", "function", "missed_function", "ground_truth")


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def kind_of(entry: dict) -> str:
    """The BFCL category part of a generated id (`gen0_multi_turn_miss_func_3` -> `miss_func`)."""
    return entry["id"].rsplit("_", 1)[0].split("_multi_turn_", 1)[1]


def bfcl_files(entries: list[dict], folder: Path) -> list[Path]:
    """Write the entries in bfcl-eval's data layout under `folder`; returns the files written."""
    written = []
    for kind in sorted({kind_of(entry) for entry in entries}):
        questions, answers = [], []
        for entry in (e for e in entries if kind_of(e) == kind):
            question = {"id": entry["id"], "question": entry["question"], "initial_config": entry["initial_config"],
                        "path": entry["path"],
                        "involved_classes": entry["involved_classes"], "function": entry["function"]}
            if "missed_function" in entry:
                question["missed_function"] = entry["missed_function"]
            questions.append(_dumps(question))
            answers.append(_dumps({"id": entry["id"], "ground_truth": entry["ground_truth"]}))
        for path, lines in ((folder / f"gen_multi_turn_{kind}.json", questions),
                            (folder / "possible_answer" / f"gen_multi_turn_{kind}.json", answers)):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            written.append(path)
    return written


def rl_row(entry: dict, index: int) -> dict:
    """One verl RL row for the `bfcl_multi_turn` loop; EntryError (from `parse_entry`) if the entry is malformed."""
    extra_info = {"id": entry["id"], "involved_classes": list(entry["involved_classes"]),
                  "long_context": bool(entry["long_context"]), "kind": kind_of(entry), "index": index}
    extra_info.update({name: _dumps(entry[name]) if name in entry else None for name in _JSON_FIELDS})
    parsed = parse_entry(extra_info, need_ground_truth=True)
    return {
        "data_source": DATA_SOURCE,
        "prompt": bfcl_multi_turn_messages(parsed.question[0], parsed.functions_at_start()),
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": _dumps(entry["ground_truth"])},
        "extra_info": extra_info,
        "agent_name": AGENT_NAME,
    }
