"""The faiss index types of the dense backend, built from stored embeddings (inner product on normalised vectors).

| type  | search                          | memory to serve, n vectors of d dims          | options                          |
|-------|---------------------------------|-----------------------------------------------|----------------------------------|
| flat  | exact                           | 4 d n bytes (the embeddings)                  | -                                |
| hnsw  | graph, approximate, sub-linear  | ~(4 d + 8 hnsw_m + 8) n bytes                 | hnsw_m, ef_construction, ef_search |
| ivf   | k-means cells, approximate      | (4 d + 8) n bytes + the centroids             | ivf_nlist, ivf_nprobe, train_size |
| ivfpq | cells + product-quantised codes | (pq_m pq_nbits / 8 + 8) n bytes + centroids   | + pq_m, pq_nbits                 |

ivfpq is the one for Wikipedia scale: 21M 768-d e5 vectors take 64.5 GB flat and ~2.2 GB as IVF-PQ with pq_m 96
(96 bytes a vector), for approximate scores (the PQ reconstruction of the inner product; ivf_nprobe sets the
recall/speed trade-off). ivf and ivfpq are trained on `train_size` vectors sampled from the whole corpus (default
max(40 ivf_nlist, 10,000), all when fewer), so a sharded index shares one quantizer across its shards.

Indexes are written as `index.faiss` and read memory-mapped (faiss IO_FLAG_MMAP); a sharded flat index is searched
straight from the memory-mapped embeddings.npy (`MmapFlatIP`), so loading copies nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agentic_verl.extras import require

FAISS_INDEXES = ("flat", "hnsw", "ivf", "ivfpq")
FAISS_FILE = "index.faiss"
PURPOSE = "the dense retrieval backend"
_BLOCK = 65536  # vectors per step when adding to an index or scanning a memory-mapped flat index


def index_settings(kind: str, dim: int, count: int, hnsw_m: int = 32, ef_construction: int = 200,
                   ef_search: int = 128, ivf_nlist: int | None = None, ivf_nprobe: int = 16,
                   pq_m: int | None = None, pq_nbits: int = 8, train_size: int | None = None) -> dict:
    """The settings of a `kind` index over `count` vectors of `dim` dims, defaults filled in (recorded in the meta).

    >>> index_settings("ivfpq", 384, 1_000_000)
    {'faiss_index': 'ivfpq', 'ivf_nlist': 4000, 'ivf_nprobe': 16, 'train_size': 160000, 'pq_m': 48, 'pq_nbits': 8}
    """
    if kind not in FAISS_INDEXES:
        raise ValueError(f"unknown faiss_index {kind!r}; known: {', '.join(FAISS_INDEXES)}")
    settings: dict = {"faiss_index": kind}
    if kind == "hnsw":
        settings.update(hnsw_m=int(hnsw_m), ef_construction=int(ef_construction), ef_search=int(ef_search))
    elif kind in ("ivf", "ivfpq"):
        nlist = int(ivf_nlist or max(1, min(int(4 * math.sqrt(count)), count // 39 or 1)))
        size = min(count, int(train_size or max(40 * nlist, 10_000)))
        settings.update(ivf_nlist=nlist, ivf_nprobe=min(int(ivf_nprobe), nlist), train_size=size)
    if kind == "ivfpq":
        m = int(pq_m or next(m for m in range(max(1, dim // 8), 0, -1) if dim % m == 0))
        if dim % m:
            raise ValueError(f"pq_m must divide the embedding dimension {dim}, got {m}")
        if 2 ** int(pq_nbits) > settings["train_size"]:
            raise ValueError(f"ivfpq with pq_nbits={pq_nbits} needs at least {2 ** int(pq_nbits)} training vectors, "
                             f"there are {settings['train_size']}; use a smaller pq_nbits or another faiss_index")
        settings.update(pq_m=m, pq_nbits=int(pq_nbits))
    return settings


def new_index(settings: dict, dim: int, sample: Callable[[int], np.ndarray]):
    """An empty (trained, for ivf / ivfpq) faiss index; `sample(n)` gives n training vectors. None for flat."""
    faiss = require("faiss", PURPOSE)
    kind = settings["faiss_index"]
    if kind == "flat":
        return None
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, settings["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = settings["ef_construction"]
        return index
    quantizer = f"IVF{settings['ivf_nlist']}"
    codes = f"PQ{settings['pq_m']}x{settings['pq_nbits']}" if kind == "ivfpq" else "Flat"
    index = faiss.index_factory(dim, f"{quantizer},{codes}", faiss.METRIC_INNER_PRODUCT)
    index.train(np.ascontiguousarray(sample(settings["train_size"]), dtype=np.float32))
    return index


def add_in_chunks(index, embeddings: np.ndarray) -> None:
    for start in range(0, len(embeddings), _BLOCK):
        index.add(np.ascontiguousarray(embeddings[start : start + _BLOCK], dtype=np.float32))


def read_index(path: Path, settings: dict):
    """A written index, memory-mapped, with its query-time settings applied."""
    faiss = require("faiss", PURPOSE)
    index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP)
    if settings["faiss_index"] == "hnsw":
        index.hnsw.efSearch = settings["ef_search"]
    else:
        faiss.extract_index_ivf(index).nprobe = settings["ivf_nprobe"]
    return index


class MmapFlatIP:
    """Exact inner-product search over a memory-mapped (n, d) float32 array, block by block; faiss's search API."""

    def __init__(self, path: Path):
        self.vectors = np.load(path, mmap_mode="r")
        self.ntotal = len(self.vectors)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = min(int(k), self.ntotal)
        best_scores = np.empty((len(queries), 0), dtype=np.float32)
        best_rows = np.empty((len(queries), 0), dtype=np.int64)
        for start in range(0, self.ntotal, _BLOCK):
            scores = queries @ np.asarray(self.vectors[start : start + _BLOCK]).T
            keep = min(k, scores.shape[1])
            top = np.argpartition(-scores, keep - 1, axis=1)[:, :keep]
            best_scores = np.concatenate([best_scores, np.take_along_axis(scores, top, 1)], axis=1)
            best_rows = np.concatenate([best_rows, top + start], axis=1)
            if best_scores.shape[1] > k:
                top = np.argpartition(-best_scores, k - 1, axis=1)[:, :k]
                best_scores, best_rows = np.take_along_axis(best_scores, top, 1), np.take_along_axis(best_rows, top, 1)
        order = np.lexsort((best_rows, -best_scores), axis=1) if best_scores.size else best_rows
        return np.take_along_axis(best_scores, order, 1), np.take_along_axis(best_rows, order, 1)
