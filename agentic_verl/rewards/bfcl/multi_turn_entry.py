"""A BFCL multi-turn entry, read from a row's `extra_info` (the `bfcl_multi_turn` agent loop and reward share it).

The row schema (docs/agent_loops.md, "bfcl_multi_turn"): `extra_info` holds the BFCL entry

- `id`: str, e.g. "multi_turn_base_12" or a generated task's id;
- `question`: one list of `{"role", "content"}` messages per user turn (turn 0 is also the row's `prompt`);
- `initial_config`: `{class_name: {attribute: value}}`; `involved_classes`: `[class_name, ...]`;
- `function`: the function docs of the involved classes, the withheld ones included;
- `missed_function` (optional, BFCL's miss_func): `{"3": ["name", ...]}`, functions withheld until turn 3 (doc
  dicts instead of names are accepted too: BFCL's own loader turns the names into docs);
- `ground_truth`: one list of BFCL call strings per turn (the reward needs it, the loop does not);
- `long_context` (optional bool): when absent, from the id as BFCL decides it (`long_context` or `composite` in
  the category).

Every structured field may be stored as its JSON string: parquet gives all rows of a struct column one schema (a
dict column such as `initial_config` gains every other row's keys as nulls), so the data writes JSON.
Nothing here imports verl (data prep uses it).

>>> entry = parse_entry({"id": "multi_turn_miss_func_0", "question": '[[{"role": "user", "content": "ls"}], []]',
...     "initial_config": {}, "involved_classes": ["GorillaFileSystem"],
...     "function": [{"name": "ls"}, {"name": "cd"}], "missed_function": {"1": ["cd"]}})
>>> [f["name"] for f in entry.functions_at_start()], [f["name"] for f in entry.added_functions(1)]
(['ls'], ['cd'])
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ENTRY_KEYS = ("id", "question", "initial_config", "involved_classes", "function", "missed_function", "ground_truth",
              "long_context")
"""The `extra_info` fields that make up the entry (the row's other extra_info keys are not part of it)."""


class EntryError(ValueError):
    """A row whose BFCL entry cannot be used (a data bug, never a model output)."""


def plain(value: Any, depth: int = 0) -> Any:
    """numpy arrays/scalars (what parquet gives back) -> lists and Python values, recursively."""
    if depth > 64:
        raise EntryError("extra_info nested too deeply")
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(item, depth + 1) for item in value]
    if isinstance(value, Mapping):
        return {key: plain(item, depth + 1) for key, item in value.items()}
    return value


def _field(extra_info: Mapping, name: str, kind: type, *, required: bool = True):
    value = extra_info.get(name)
    if value is None:
        if required:
            raise EntryError(f"extra_info.{name} is missing; a bfcl_multi_turn row carries the BFCL entry "
                             f"({', '.join(ENTRY_KEYS)})")
        return None
    if isinstance(value, str) and kind is not str:
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise EntryError(f"extra_info.{name} is a string but not JSON: {exc}") from None
    value = plain(value)
    if not isinstance(value, kind):
        raise EntryError(f"extra_info.{name} must be a {kind.__name__} (or its JSON), got {type(value).__name__}")
    return value


def _messages(turn: Any, index: int) -> list[dict]:
    if not isinstance(turn, list) or not all(isinstance(m, dict) and "role" in m and "content" in m for m in turn):
        raise EntryError(f"extra_info.question[{index}] must be a list of {{role, content}} messages")
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in turn]


@dataclass(frozen=True)
class BfclEntry:
    id: str
    question: list[list[dict]]
    initial_config: dict
    involved_classes: list[str]
    function: list[dict]
    missed_function: dict[int, list[dict]]  # turn -> the docs it adds
    ground_truth: list[list[str]] | None
    long_context: bool
    raw: dict  # the entry's fields as plain Python values, for the environment's checker

    @property
    def num_turns(self) -> int:
        return len(self.question)

    def withheld_names(self) -> set[str]:
        return {doc["name"] for docs in self.missed_function.values() for doc in docs}

    def functions_at_start(self) -> list[dict]:
        """The docs the model sees from turn 0: every doc but the withheld ones (the system prompt's list)."""
        withheld = self.withheld_names()
        return [doc for doc in self.function if doc.get("name") not in withheld]

    def added_functions(self, turn: int) -> list[dict]:
        """The docs that turn `turn` adds (BFCL's miss_func); [] for most turns."""
        return list(self.missed_function.get(turn, []))


def parse_entry(extra_info: Mapping | None, *, need_ground_truth: bool = False) -> BfclEntry:
    """The BFCL entry of a row's `extra_info`, checked; EntryError says what is wrong."""
    if not isinstance(extra_info, Mapping):
        raise EntryError(f"a bfcl_multi_turn row needs extra_info with the BFCL entry, got {type(extra_info).__name__}")
    entry_id = _field(extra_info, "id", str)
    question = [_messages(turn, i) for i, turn in enumerate(_field(extra_info, "question", list))]
    if not question or not question[0]:
        raise EntryError(f"{entry_id}: extra_info.question needs at least one turn, and turn 0 a message")
    initial_config = _field(extra_info, "initial_config", dict)
    involved_classes = _field(extra_info, "involved_classes", list)
    if not involved_classes or not all(isinstance(name, str) for name in involved_classes):
        raise EntryError(f"{entry_id}: extra_info.involved_classes must be a non-empty list of class names")
    function = _field(extra_info, "function", list)
    if not all(isinstance(doc, dict) and isinstance(doc.get("name"), str) for doc in function):
        raise EntryError(f"{entry_id}: extra_info.function must be a list of function docs with a 'name'")
    docs_by_name = {doc["name"]: doc for doc in function}

    missed_raw = _field(extra_info, "missed_function", dict, required=False)
    missed: dict[int, list[dict]] = {}
    for key, items in (missed_raw or {}).items():
        try:
            turn = int(key)
        except (TypeError, ValueError):
            raise EntryError(f"{entry_id}: extra_info.missed_function key {key!r} is not a turn index") from None
        if not 0 < turn < len(question):
            raise EntryError(f"{entry_id}: extra_info.missed_function adds functions at turn {turn}; turns 1.."
                             f"{len(question) - 1} can (turn 0's functions belong in the system prompt)")
        if question[turn]:
            raise EntryError(f"{entry_id}: turn {turn} adds functions, so its question must be empty (as in BFCL: the "
                             f"turn's user message is the added functions)")
        docs = []
        for item in items if isinstance(items, list) else [items]:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                docs.append(item)
            elif isinstance(item, str) and item in docs_by_name:
                docs.append(docs_by_name[item])
            else:
                raise EntryError(f"{entry_id}: extra_info.missed_function[{key!r}] names {item!r}, which is not a doc "
                                 f"in extra_info.function")
        missed[turn] = docs
    for turn, messages in enumerate(question):
        if not messages and turn not in missed:
            raise EntryError(f"{entry_id}: turn {turn} has no message and adds no functions")

    ground_truth = _field(extra_info, "ground_truth", list, required=need_ground_truth)
    if ground_truth is not None:
        if len(ground_truth) != len(question) or not all(
                isinstance(turn, list) and all(isinstance(call, str) for call in turn) for turn in ground_truth):
            raise EntryError(f"{entry_id}: extra_info.ground_truth must be one list of call strings per turn "
                             f"({len(question)} turns)")

    long_context = extra_info.get("long_context")
    if long_context is None:  # BFCL decides it from the category part of the id
        category = entry_id.rsplit("_", 1)[0]
        long_context = "long_context" in category or "composite" in category
    elif not isinstance(plain(long_context), bool):
        raise EntryError(f"{entry_id}: extra_info.long_context must be a bool, got {long_context!r}")

    raw = {"id": entry_id, "question": question, "initial_config": initial_config,
           "involved_classes": list(involved_classes), "function": function, "long_context": bool(long_context)}
    if missed_raw is not None:
        raw["missed_function"] = missed_raw
    if ground_truth is not None:
        raw["ground_truth"] = ground_truth
    return BfclEntry(id=entry_id, question=question, initial_config=initial_config,
                     involved_classes=list(involved_classes), function=function, missed_function=missed,
                     ground_truth=ground_truth, long_context=bool(long_context), raw=raw)
