"""BFCL's multi-turn questions stay evaluation-only: what a generated task must not share with them.

`BfclMultiTurnSet.load()` reads the 800 questions of bfcl-eval's four multi-turn files (`bfcl_eval/data/
BFCL_v4_multi_turn_{base,miss_func,miss_param,long_context}.json` and their possible answers, read as files by
`agentic_verl.bfcl_env.data`) and keeps every user turn (normalised text, `function_calling.normalize_text`:
case, punctuation and spacing ignored; and its word 3-grams, `near_duplicates.TurnIndex`), every class state of
their `initial_config`s, and every question's ground-truth call sequence. `findings(entry)` says what a generated
entry shares with them, each with its kind (`KINDS`):

- `turn_text_equal`: a user turn whose normalised text equals a BFCL turn's;
- `turn_text_near`: a user turn whose word 3-gram Jaccard similarity to a BFCL turn is at least
  `near_duplicates.NEAR_THRESHOLD` (a light paraphrase; the threshold is measured, docs/funreason_mt.md);
- `state_equal`: a class state equal to a BFCL state;
- `call_sequence_equal`: the whole task's ground-truth calls, in order (turn boundaries and empty turns aside),
  equal to a BFCL question's, each call compared by name and keyword arguments (BFCL's positional arguments
  named from the function docs).

The generator drops a task with any finding and counts the dropped tasks by kind (`dataset.generate_tasks`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agentic_verl.bfcl_env.data import multi_turn_entries, parameter_order
from agentic_verl.bfcl_env.protocol import keyword_call
from agentic_verl.data.bfcl_multi_turn.near_duplicates import NEAR_THRESHOLD, TurnIndex
from agentic_verl.data.function_calling import normalize_text

KINDS = ("turn_text_equal", "turn_text_near", "state_equal", "call_sequence_equal")


def bfcl_turns(entries: list[dict] | None = None) -> list[tuple[str, str]]:
    """(text, `<question id> turn <t>`) of every BFCL user turn."""
    return [(m["content"], f"{entry['id']} turn {t}") for entry in entries or multi_turn_entries()
            for t, turn in enumerate(entry["question"]) for m in turn]


def call_sequence(ground_truth: list[list[str]], order: dict[str, list[str]]) -> str | None:
    """A task's ground-truth calls in order as one comparable string (None when a call does not parse or there is
    none)."""
    try:
        calls = [keyword_call(text, order) for turn in ground_truth for text in turn]
    except ValueError:
        return None
    if not calls:
        return None
    return json.dumps([[call["name"], sorted(call["arguments"].items())] for call in calls])


def _state_key(class_name: str, state) -> str:
    return class_name + ":" + json.dumps(state, sort_keys=True)


@dataclass(frozen=True)
class BfclMultiTurnSet:
    turn_texts: frozenset[str]
    states: frozenset[str]
    questions: int
    turns: TurnIndex | None = None
    call_sequences: dict[str, str] | None = None  # comparable call sequence -> a BFCL question id
    order: dict[str, list[str]] | None = None

    @classmethod
    def load(cls) -> BfclMultiTurnSet:
        entries, order = multi_turn_entries(), parameter_order()
        turns = bfcl_turns(entries)
        sequences = {}
        for entry in entries:
            key = call_sequence(entry["ground_truth"], order)
            if key is not None:
                sequences.setdefault(key, entry["id"])
        states = {_state_key(name, state) for entry in entries for name, state in entry["initial_config"].items()}
        return cls(frozenset(normalize_text(text) for text, _ in turns), frozenset(states), len(entries),
                   TurnIndex(turns), sequences, order)

    def findings(self, entry: dict) -> list[tuple[str, str]]:
        """(kind, what) for everything `entry` shares with BFCL's questions (empty: nothing). `entry` needs
        `question` and `initial_config`; `ground_truth` is compared when it has one."""
        found = []
        for t, turn in enumerate(entry["question"]):
            for message in turn:
                if normalize_text(message["content"]) in self.turn_texts:
                    found.append(("turn_text_equal", f"turn {t}"))
                elif self.turns is not None:
                    score, label = self.turns.nearest(message["content"])
                    if score >= NEAR_THRESHOLD:
                        found.append(("turn_text_near", f"turn {t} ~ {label} (3-gram Jaccard {score:.2f})"))
        found += [("state_equal", f"{name} state") for name, state in entry["initial_config"].items()
                  if _state_key(name, state) in self.states]
        if self.call_sequences and entry.get("ground_truth"):
            question = self.call_sequences.get(call_sequence(entry["ground_truth"], self.order or {}))
            if question is not None:
                found.append(("call_sequence_equal", f"calls = {question}'s ground truth"))
        return found

    def overlap(self, entry: dict) -> list[str]:
        """What `entry` shares with BFCL's questions, in words (empty: nothing)."""
        return [what for _, what in self.findings(entry)]
