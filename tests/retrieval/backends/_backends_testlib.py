"""Helpers for the backend tests (imported by the tests and conftest.py): a small deterministic corpus, an index
built once per test module, and a way to build or open one with a package made unimportable.

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
from collections.abc import Iterator
from pathlib import Path

from agentic_verl.retrieval.index import Index, build_index, load_index

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


def built_and_opened(corpus_path: Path, tmp_path_factory, backend: str, **options) -> Iterator[Index]:
    """The body of a module's index fixture: a `backend` index of `corpus_path` built in a fresh temporary folder
    (its `.path`), opened, and closed at the fixture's teardown."""
    out = tmp_path_factory.mktemp(backend) / "index"
    build_index(corpus_path, out, backend, show_progress=False, **options)
    opened = load_index(out)
    yield opened
    opened.close()


def results_before_and_after_reload(index: Index, queries: list[str], digits: int | None = None):
    """Each query's top 5 as (id, score) from `index`, then from its folder opened again (scores rounded to
    `digits` places when given)."""

    def top5(opened: Index) -> list[list[tuple[str, float]]]:
        return [[(p.id, p.score if digits is None else round(p.score, digits)) for p in hits]
                for hits in opened.search(queries, topk=5)]

    before = top5(index)
    reopened = load_index(index.path)
    try:
        return before, top5(reopened)
    finally:
        reopened.close()


def run_without(modules: list[str], call: str) -> subprocess.CompletedProcess:
    """Run the one line `call` (build_index and load_index imported) in a fresh interpreter in which importing any
    of `modules` fails as if not installed; the MissingExtraError it raises is printed as `ERROR: <message>`."""
    code = textwrap.dedent(f"""
        import sys
        class _Blocker:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {sorted(modules)!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, _Blocker())
        from agentic_verl.extras import MissingExtraError
        from agentic_verl.retrieval.index import build_index, load_index
        try:
            {call}
        except MissingExtraError as exc:
            print("ERROR:", exc)
    """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
