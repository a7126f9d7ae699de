"""Helpers for the backend tests (imported by the tests and conftest.py): a small deterministic corpus, and a way
to run code with a package made unimportable.

The corpus is ~200 template sentences about towns, trades and foods (real English words, so the dense model
sees ordinary text), plus a few passages that the tests look for:
- RARE: the only passage with the words "quokka" and "Rottnest" (a sparse retriever must rank it first);
- KITTEN: the target of a paraphrase query that shares no content word with it (a dense retriever must find it);
- DOG: a near distractor for the paraphrase (another pet, another room).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

RARE = ("rare", "Rottnest Island\nThe quokka is a small marsupial found on Rottnest Island near Perth.")
KITTEN = ("kitten", "Afternoon\nA kitten sleeps curled up on the warm windowsill in the sunshine.")
DOG = ("dog", "Evening\nAn old dog barks loudly at the mail carrier from the garden gate.")
PARAPHRASE_QUERY = "young cat napping by the window"

_TOWNS = ["Arden", "Belmont", "Corvale", "Dunmore", "Eastwick", "Fairhaven", "Glenrock", "Hollowmere", "Ironbridge",
          "Juniper Falls"]
_TRADES = ["weaving wool", "building boats", "brewing cider", "printing books", "forging iron", "making cheese",
           "cutting stone", "growing apples", "repairing clocks", "tanning leather"]
_FOODS = ["barley soup", "smoked fish", "honey bread", "plum pie", "roast lamb"]


def make_passages(n_filler: int = 200, seed: int = 0) -> list[tuple[str, str]]:
    """(id, contents) pairs: deterministic filler + RARE, KITTEN, DOG at fixed positions."""
    rng = random.Random(seed)
    passages = []
    for i in range(n_filler):
        town, trade, food = rng.choice(_TOWNS), rng.choice(_TRADES), rng.choice(_FOODS)
        year = 1700 + rng.randrange(300)
        passages.append((f"p{i}", f"{town}\n{town} has been known for {trade} since {year}; visitors "
                                  f"often try the local {food}."))
    for position, passage in zip((17, 101, 150), (RARE, KITTEN, DOG), strict=True):
        passages.insert(position, passage)
    return passages


def write_corpus(path: Path, passages: list[tuple[str, str]]) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for pid, contents in passages:
            f.write(json.dumps({"id": pid, "contents": contents}) + "\n")
    return path


def run_without(modules: list[str], code: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter in which importing any of `modules` fails as if not installed."""
    blocker = textwrap.dedent(f"""
        import sys
        class _Blocker:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {sorted(modules)!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, _Blocker())
    """)
    return subprocess.run([sys.executable, "-c", blocker + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)
