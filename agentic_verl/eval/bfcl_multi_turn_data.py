"""BFCL's own multi-turn questions (bfcl-eval's data files) as `bfcl_multi_turn` rows: EVALUATION AND TESTS ONLY.

BFCL's 800 multi-turn questions are its test set. These rows exist to run the `bfcl_multi_turn` loop and reward on
them (evaluation, integration tests); never train on them. Training rows come from `agentic-verl data
bfcl-multi-turn`, which generates its own tasks and drops any that equals a BFCL question. The rows say what they
are: `data_source` is `bfcl_multi_turn_eval` and `extra_info.split` is `"bfcl_eval_only"`.

    entries = load_bfcl_multi_turn_entries("multi_turn_miss_func", limit=3)   # BFCL's entries + docs + answers
    rows = [bfcl_eval_row(entry) for entry in entries]                          # the loop's row schema

An entry is BFCL's question line with its `ground_truth` (possible_answer/) and `function`: the docs of its
involved classes (multi_turn_func_doc/, the files bfcl-eval's loader reads), the withheld ones included, as the
row schema wants them (agentic_verl.rewards.bfcl.multi_turn_entry); `missed_function` stays BFCL's
`{turn: [names]}`. Only bfcl-eval's data files and one constants module are read (no simulator is imported).
"""

from __future__ import annotations

import json
from importlib import resources

from agentic_verl.agent_loops.prompts import bfcl_multi_turn_messages
from agentic_verl.rewards.bfcl.multi_turn_entry import parse_entry

MULTI_TURN_CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
DATA_SOURCE = "bfcl_multi_turn_eval"
EVAL_ONLY_SPLIT = "bfcl_eval_only"
_VERSION = "BFCL_v4"
_INSTALL = "pip install --no-deps bfcl-eval==2026.3.23"
_JSON_FIELDS = ("question", "initial_config", "function", "missed_function", "ground_truth")


def _data_dir():
    try:
        return resources.files("bfcl_eval") / "data"
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"BFCL's multi-turn questions come from the bfcl-eval package: {_INSTALL}") from None


def _read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def function_docs(involved_classes: list[str]) -> list[dict]:
    """The docs of the classes' functions, in the order bfcl-eval's loader concatenates them."""
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    docs = []
    for name in involved_classes:
        if name not in MULTI_TURN_FUNC_DOC_FILE_MAPPING:
            raise ValueError(f"{name!r} is not one of bfcl-eval's multi-turn classes")
        docs += _read_jsonl(_data_dir() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[name])
    return docs


def load_bfcl_multi_turn_entries(category: str, limit: int | None = None, ids: list[str] | None = None) -> list[dict]:
    """BFCL's `category` questions (the first `limit`, or those named in `ids`) with `function` and `ground_truth`."""
    if category not in MULTI_TURN_CATEGORIES:
        raise ValueError(f"unknown BFCL multi-turn category {category!r}; known: {', '.join(MULTI_TURN_CATEGORIES)}")
    name = f"{_VERSION}_{category}.json"
    answers = {e["id"]: e["ground_truth"] for e in _read_jsonl(_data_dir() / "possible_answer" / name)}
    entries = _read_jsonl(_data_dir() / name)
    if ids is not None:
        missing = sorted(set(ids) - {e["id"] for e in entries})
        if missing:
            raise ValueError(f"{category} has no question {missing}")
        entries = [e for e in entries if e["id"] in ids]
    return [{**entry, "function": function_docs(entry["involved_classes"]), "ground_truth": answers[entry["id"]]}
            for entry in entries[:limit]]


def bfcl_eval_row(entry: dict) -> dict:
    """A `bfcl_multi_turn` row (docs/agent_loops.md) of a BFCL entry from `load_bfcl_multi_turn_entries`, checked by
    `parse_entry`; for evaluation only (see the module docstring)."""
    extra_info = {"id": entry["id"], "involved_classes": list(entry["involved_classes"]), "split": EVAL_ONLY_SPLIT}
    extra_info.update({name: json.dumps(entry[name]) for name in _JSON_FIELDS if name in entry})
    parsed = parse_entry(extra_info, need_ground_truth=True)
    extra_info["long_context"] = parsed.long_context
    return {
        "data_source": DATA_SOURCE,
        "prompt": bfcl_multi_turn_messages(parsed.question[0], parsed.functions_at_start()),
        "ability": "function_calling",
        "reward_model": {"style": "rule", "ground_truth": extra_info["ground_truth"]},
        "extra_info": extra_info,
        "agent_name": "bfcl_multi_turn",
    }
