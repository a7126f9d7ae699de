"""`hybrid`: reciprocal-rank fusion (RRF) of a BM25 index and a dense index.

RRF (Cormack et al., 2009): every passage gets sum over retrievers of 1 / (rrf_k + rank), rank counted from 1,
over each retriever's top `depth`; the fused list is sorted by that score (ties: better best rank, then id).
It needs no score calibration between BM25 and cosine, which is why it is the usual default.

Index folder: `sparse/` and `dense/`, each a complete index folder of its own backend (with its own
`index_meta.json`, loadable on its own), built from the same passages in the same order. Passages are matched
across the two by id. Each sub-index keeps its own docstore, so the passages are stored twice.

Build options (`agentic-verl index build --backend hybrid -o rrf_k=60 -o dense.faiss_index=hnsw ...`):
  rrf_k (60), depth (candidates per retriever, 20; at least topk), sparse ("bm25s" or "lucene"),
  `sparse.<option>` / `dense.<option>`: options of the sub-backends (or dicts sparse_options / dense_options).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from agentic_verl.retrieval.backends.base import BACKENDS, META_FILE, RetrievalBackend, backend_class
from agentic_verl.retrieval.docstore import DocStore
from agentic_verl.retrieval.protocol import Passage

SPARSE_DIR, DENSE_DIR = "sparse", "dense"
SPARSE_BACKENDS = ("bm25s", "lucene")


def reciprocal_rank_fusion(rankings: list[list[Passage]], topk: int, rrf_k: float = 60.0) -> list[Passage]:
    """Fuse best-first lists of passages into one; each passage's score is its RRF score.

    >>> a, b, c = Passage("a", "A"), Passage("b", "B"), Passage("c", "C")
    >>> [(p.id, round(p.score, 4)) for p in reciprocal_rank_fusion([[a, b], [b, c]], topk=3, rrf_k=60)]
    [('b', 0.0325), ('a', 0.0164), ('c', 0.0161)]
    """
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    passages: dict[str, Passage] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for rank, passage in enumerate(ranking, start=1):
            if passage.id in seen:  # a retriever that repeats an id counts once, at its best rank
                continue
            seen.add(passage.id)
            scores[passage.id] = scores.get(passage.id, 0.0) + 1.0 / (rrf_k + rank)
            best_rank[passage.id] = min(best_rank.get(passage.id, rank), rank)
            passages.setdefault(passage.id, passage)
    order = sorted(scores, key=lambda pid: (-scores[pid], best_rank[pid], pid))[:topk]
    return [Passage(pid, passages[pid].contents, scores[pid]) for pid in order]


@BACKENDS.register("hybrid")
class HybridBackend(RetrievalBackend):
    name = "hybrid"
    OPTIONS = {
        "rrf_k": "reciprocal-rank-fusion constant (60)",
        "depth": "candidates taken from each sub-index per query (20; at least topk)",
        "sparse": "bm25s (default) or lucene",
        "sparse.<option>": "an option of the sparse backend, e.g. sparse.k1=1.2",
        "dense.<option>": "an option of the dense backend, e.g. dense.faiss_index=hnsw",
    }

    def __init__(self, sparse: RetrievalBackend, dense: RetrievalBackend, rrf_k: float, depth: int, meta: dict):
        self.sparse, self.dense, self.rrf_k, self.depth, self.meta = sparse, dense, rrf_k, depth, meta

    @classmethod
    def build(
        cls,
        passages: Iterable[Passage],
        out_dir: Path,
        rrf_k: float = 60,
        depth: int = 20,
        sparse: str = "bm25s",
        sparse_options: dict | None = None,
        dense_options: dict | None = None,
        **options,
    ) -> dict:
        sparse_options, dense_options = dict(sparse_options or {}), dict(dense_options or {})
        for key, value in options.items():
            prefix, _, name = key.partition(".")
            if prefix == "sparse" and name:
                sparse_options[name] = value
            elif prefix == "dense" and name:
                dense_options[name] = value
            else:
                raise TypeError(f"unknown hybrid build option {key!r}; known: rrf_k, depth, sparse, "
                                "sparse.<option>, dense.<option>, sparse_options, dense_options")
        if sparse not in SPARSE_BACKENDS:
            raise ValueError(f"hybrid sparse backend must be one of {SPARSE_BACKENDS}, got {sparse!r}")
        if float(rrf_k) < 0 or int(depth) < 1:
            raise ValueError(f"rrf_k must be >= 0 and depth >= 1, got rrf_k={rrf_k}, depth={depth}")
        out_dir = Path(out_dir)
        subs = {}
        # The sparse build consumes the (one-pass) passage stream; the dense build rereads them from its docstore.
        sub_specs = [
            (SPARSE_DIR, sparse, sparse_options, passages),
            (DENSE_DIR, "dense", dense_options, lambda: _iter_docstore(out_dir / SPARSE_DIR)),
        ]
        for folder, backend, sub_options, source in sub_specs:
            sub_dir = out_dir / folder
            sub_dir.mkdir(parents=True, exist_ok=True)
            sub_meta = backend_class(backend).build(source() if callable(source) else source, sub_dir, **sub_options)
            sub_meta = {**sub_meta, "backend": backend, "options": sub_options}
            (sub_dir / META_FILE).write_text(json.dumps(sub_meta, indent=2, default=str) + "\n")
            subs[folder] = {"backend": backend, "options": sub_options}
        return {"rrf_k": float(rrf_k), "depth": int(depth), "fusion": "reciprocal_rank", "sub_indexes": subs}

    @classmethod
    def load(cls, index_dir: Path, meta: dict) -> HybridBackend:
        from agentic_verl.retrieval.index import load_index

        index_dir = Path(index_dir)
        sparse = load_index(index_dir / SPARSE_DIR).backend
        try:
            dense = load_index(index_dir / DENSE_DIR).backend
        except BaseException:
            sparse.close()
            raise
        return cls(sparse, dense, float(meta["rrf_k"]), int(meta["depth"]), meta)

    def search(self, queries: list[str], topk: int) -> list[list[Passage]]:
        if not queries:
            return []
        depth = max(int(topk), self.depth)
        sparse = self.sparse.search(list(queries), depth)
        dense = self.dense.search(list(queries), depth)
        return [reciprocal_rank_fusion([s, d], int(topk), self.rrf_k) for s, d in zip(sparse, dense, strict=True)]

    def close(self) -> None:
        self.sparse.close()
        self.dense.close()


def _iter_docstore(folder: Path) -> Iterator[Passage]:
    store = DocStore(folder)
    try:
        for row in range(len(store)):
            yield store[row]
    finally:
        store.close()
