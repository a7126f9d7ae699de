"""BFCL's multi-turn questions stay evaluation-only: what a generated task must not share with them.

`BfclMultiTurnSet.load()` reads the 800 questions of bfcl-eval's four multi-turn files (`bfcl_eval/data/
BFCL_v4_multi_turn_{base,miss_func,miss_param,long_context}.json`, read as files: nothing of bfcl-eval is imported)
and keeps every user turn's normalised text (`function_calling.normalize_text`: case, punctuation and spacing
ignored) and every class state of their `initial_config`s. `overlap(entry)` names what a generated entry shares
with them: a user turn whose text equals a BFCL turn's, or a class state equal to a BFCL state. A task that shares
either is dropped by the generator (`dataset.generate_tasks`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from agentic_verl.data.function_calling import normalize_text

BFCL_KINDS = ("base", "miss_func", "miss_param", "long_context")


def bfcl_multi_turn_files() -> list[Path]:
    folder = Path(str(resources.files("bfcl_eval") / "data"))
    return [folder / f"BFCL_v4_multi_turn_{kind}.json" for kind in BFCL_KINDS]


def _state_key(class_name: str, state) -> str:
    return class_name + ":" + json.dumps(state, sort_keys=True)


@dataclass(frozen=True)
class BfclMultiTurnSet:
    turn_texts: frozenset[str]
    states: frozenset[str]
    questions: int

    @classmethod
    def load(cls) -> BfclMultiTurnSet:
        texts, states, questions = set(), set(), 0
        for path in bfcl_multi_turn_files():
            for line in path.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                entry = json.loads(line)
                questions += 1
                texts.update(normalize_text(m["content"]) for turn in entry["question"] for m in turn)
                states.update(_state_key(name, state) for name, state in entry["initial_config"].items())
        return cls(frozenset(texts), frozenset(states), questions)

    def overlap(self, entry: dict) -> list[str]:
        """What `entry` shares with BFCL's questions (empty: nothing)."""
        found = [f"turn {i}" for i, turn in enumerate(entry["question"]) for m in turn
                 if normalize_text(m["content"]) in self.turn_texts]
        found += [f"{name} state" for name, state in entry["initial_config"].items()
                  if _state_key(name, state) in self.states]
        return found
