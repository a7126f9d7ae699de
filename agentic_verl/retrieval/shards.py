"""Sharded indexes: the corpus split into N consecutive shards, each searched alone, the top-k lists merged.

Layout of a sharded index folder (written by `agentic-verl index build --shards N`, see build.py):

    index_meta.json        written last; "shards": [{"dir": "shards/00000", "start": 0, "passages": n0}, ...]
    shards/00000/          shard 0: its docstore (passages.jsonl + offsets) and its backend's arrays
    shards/00001/ ...
    (shared files)         what every shard uses, e.g. bm25s's tokenizer/ (one vocabulary for all shards)

Shard s holds the corpus passages [start_s, start_s + passages_s), in corpus order. A query goes to every shard
(one after another, in this process); each returns its own top-k with the backend's own scores, and the merged
top-k is the k best of those. That is exactly the unsharded ranking as long as a shard scores a passage exactly
as the unsharded index would: dense inner products do by construction; BM25 does because every shard is built
from corpus-wide statistics (bm25s_sharded.py). Equal scores are ordered by corpus position (shard, then row), as
within every shard's own top-k, the k-th tie included (ranking.py): ties cannot make the two rankings differ.

>>> import numpy as np
>>> merge_topk([(np.array([0.9, 0.5]), np.array([4, 1])), (np.array([0.7, 0.5]), np.array([0, 2]))], k=3)
[(0, 4, 0.9), (1, 0, 0.7), (0, 1, 0.5)]
>>> shard_bounds(10, 3)
[(0, 3), (3, 6), (6, 10)]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from agentic_verl.retrieval.docstore import DocStore
from agentic_verl.retrieval.protocol import Passage

SHARDS_DIR = "shards"


def shard_dir_name(shard: int) -> str:
    """The folder of shard `shard`, relative to the index folder."""
    return f"{SHARDS_DIR}/{shard:05d}"


def shard_bounds(n_passages: int, n_shards: int) -> list[tuple[int, int]]:
    """Split rows [0, n_passages) into `n_shards` consecutive ranges of (nearly) equal size."""
    if n_shards < 1:
        raise ValueError(f"the number of shards must be >= 1, got {n_shards}")
    if n_shards > n_passages:
        raise ValueError(f"{n_shards} shards for {n_passages} passages: a shard needs at least one passage")
    cuts = [n_passages * i // n_shards for i in range(n_shards + 1)]
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def merge_topk(hits: Sequence[tuple[np.ndarray, np.ndarray]], k: int) -> list[tuple[int, int, float]]:
    """The k best (shard, row, score) over every shard's (scores, rows); ties in corpus order."""
    scores = np.concatenate([np.asarray(s, dtype=np.float64) for s, _ in hits]) if hits else np.zeros(0)
    if scores.size == 0:
        return []
    rows = np.concatenate([np.asarray(r, dtype=np.int64) for _, r in hits])
    shards = np.concatenate([np.full(len(r), i, dtype=np.int64) for i, (_, r) in enumerate(hits)])
    order = np.lexsort((rows, shards, -scores))[:k]  # last key first: best score, then shard, then row
    return [(int(shards[i]), int(rows[i]), float(scores[i])) for i in order]


def fetch(docstores: Sequence[DocStore], picks: list[tuple[int, int, float]]) -> list[Passage]:
    """The passages of merge_topk's picks, scores attached."""
    return [docstores[shard].get([row], [score])[0] for shard, row, score in picks]


def open_docstores(index_dir: Path, meta: dict) -> list[DocStore]:
    """Every shard's docstore, checked against the passage counts in index_meta.json."""
    stores: list[DocStore] = []
    try:
        for shard, entry in enumerate(meta["shards"]):
            folder = Path(index_dir) / entry["dir"]
            if not folder.is_dir():
                raise FileNotFoundError(f"{index_dir}: shard {shard} ({entry['dir']}) is missing; the index folder "
                                        "was changed after its build, rebuild it")
            stores.append(DocStore(folder))
            if len(stores[-1]) != entry["passages"]:
                raise ValueError(f"{index_dir}: shard {shard} ({entry['dir']}) has {len(stores[-1])} passages, "
                                 f"index_meta.json says {entry['passages']}; rebuild the index")
    except BaseException:
        for store in stores:
            store.close()
        raise
    return stores


def is_sharded(meta: dict) -> bool:
    """Whether index_meta.json describes a sharded folder (older indexes have the backend's files at the top)."""
    return bool(meta.get("shards"))
