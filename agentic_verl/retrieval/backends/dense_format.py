"""The dense index format, shared by the one-folder build (dense.py) and the sharded one (dense_sharded.py): the files
a folder holds, the build options, and how the passages' vectors get into `embeddings.npy` (encoded here, or copied
from an `agentic-verl index encode` folder: embeddings.py).

Index folder (a shard folder when sharded): the docstore, `embeddings.npy` (float32, one normalised row per
passage, so the faiss index can be rebuilt in another type without re-encoding) and, for hnsw/ivf/ivfpq,
`index.faiss` (faiss_indexes.FAISS_FILE, read memory-mapped).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

import numpy as np

from agentic_verl.extras import require
from agentic_verl.retrieval.backends.dense_encoder import DEFAULT_MODEL, PURPOSE, Encoder, resolve_convention
from agentic_verl.retrieval.backends.faiss_indexes import FAISS_INDEXES
from agentic_verl.retrieval.docstore import DocStoreWriter
from agentic_verl.retrieval.embeddings import Embeddings
from agentic_verl.retrieval.protocol import Passage

EMBEDDINGS_FILE = "embeddings.npy"
# index_settings's keyword options (faiss_indexes.py)
FAISS_OPTIONS = ("hnsw_m", "ef_construction", "ef_search", "ivf_nlist", "ivf_nprobe", "pq_m", "pq_nbits", "train_size")
CHUNK = 1024  # passages read, stored and encoded per step while building
OPTIONS = {
    "model": f"sentence-transformers model name or folder ({DEFAULT_MODEL}, offline copy)",
    "convention": "query/passage text: auto (default, from the model name), none, e5, bge",
    "query_prefix": "replaces the convention's query prefix (recorded as convention custom)",
    "passage_prefix": "replaces the convention's passage prefix (recorded as convention custom)",
    "faiss_index": "flat (default, exact), hnsw, ivf or ivfpq (approximate, for large corpora; faiss_indexes.py)",
    "batch_size": "passages per encoder batch (64)",
    "hnsw_m": "hnsw: links per node (32)",
    "ef_construction": "hnsw: build-time search width (200)",
    "ef_search": "hnsw: query-time search width (128)",
    "ivf_nlist": "ivf: number of cells (default ~4 sqrt(n))",
    "ivf_nprobe": "ivf: cells searched per query (16)",
    "train_size": "ivf / ivfpq: training vectors (default max(40 ivf_nlist, 10,000), at most all)",
    "pq_m": "ivfpq: sub-quantizers, bytes per vector at 8 bits (default dim / 8; must divide dim)",
    "pq_nbits": "ivfpq: bits per sub-quantizer code (8)",
    "embeddings": "an `index encode` folder (or, with --shards, a .npy, row i = passage i) of precomputed "
                  "passage vectors, indexed instead of encoding; model and convention are read from the folder",
    "device": "torch device for encoding (cpu)",
    "progress": "show an encoding progress bar when not built through build_index (true)",
}


def open_encoded(folder: str | Path, model: str | None, convention: str | None, query_prefix: str | None,
                 passage_prefix: str | None):
    """An `index encode` folder (embeddings.Embeddings) for a build; a model or convention given that differs from
    the folder's is refused (None: not given, the folder's own is used)."""
    store = Embeddings(folder)
    given = (convention, query_prefix, passage_prefix) != (None, None, None)
    text = resolve_convention(model or store.manifest["model"], convention or "auto", query_prefix,
                              passage_prefix) if given else None
    store.check_encoder(model, text)
    return store


def copy_encoded(store, passages: Iterable[Passage], out_dir: Path) -> int:
    """An unsharded index's docstore and embeddings.npy from an `index encode` folder, its ids checked row by row."""
    target = np.lib.format.open_memmap(out_dir / EMBEDDINGS_FILE, mode="w+", dtype=np.float32, shape=store.shape)
    count = 0
    with DocStoreWriter(out_dir) as docstore:
        for chunk in _chunks(store.checked(0, passages), CHUNK):
            for passage in chunk:
                docstore.add(passage)
            target[count : count + len(chunk)] = store[count : count + len(chunk)]
            count += len(chunk)
    if count != len(store):
        raise ValueError(f"the corpus has {count} passages, {store.folder} holds the vectors of {len(store)}")
    target.flush()
    del target
    return count


def check_faiss_options(faiss_index: str, options: dict) -> dict:
    """The faiss options among a build's keyword options; anything else is an error."""
    unknown = sorted(set(options) - set(FAISS_OPTIONS))
    if unknown:
        raise TypeError(f"unknown dense build options: {unknown}; known: {sorted(OPTIONS)}")
    if faiss_index not in FAISS_INDEXES:
        raise ValueError(f"unknown faiss_index {faiss_index!r}; known: {', '.join(FAISS_INDEXES)}")
    return options


def sample_rows(count: int, size: int) -> np.ndarray:
    """`size` distinct rows of [0, count), sorted, the same for the same arguments (training samples)."""
    return np.sort(np.random.default_rng(0).choice(count, size=size, replace=False))


def _chunks(items: Iterable[Passage], size: int) -> Iterator[list[Passage]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def encode_to_npy(encoder: Encoder, passages: Iterable[Passage], out_dir: Path, progress: bool) -> int:
    """Stream passages into the docstore and their embeddings into embeddings.npy; returns the count.

    The count is unknown up front (passages may be a generator), so vectors go to a raw file first and are
    copied into a .npy of the final shape at the end: memory stays at one chunk."""
    tqdm = require("tqdm", PURPOSE).tqdm
    raw_path = out_dir / (EMBEDDINGS_FILE + ".tmp")
    if isinstance(passages, tqdm):
        progress = False  # build_index already shows one; it advances as chunks are consumed and encoded
    try:
        total = len(passages)
    except TypeError:
        total = None
    count = 0
    with DocStoreWriter(out_dir) as docstore, open(raw_path, "wb") as raw:
        bar = tqdm(total=total, unit="passage", desc="encoding", disable=not progress)
        for chunk in _chunks(passages, CHUNK):
            for passage in chunk:
                docstore.add(passage)
            raw.write(encoder.passages([p.contents for p in chunk]).tobytes())
            count += len(chunk)
            bar.update(len(chunk))
        bar.close()
    source = np.memmap(raw_path, dtype=np.float32, mode="r", shape=(count, encoder.dim)) if count else None
    target = np.lib.format.open_memmap(out_dir / EMBEDDINGS_FILE, mode="w+", dtype=np.float32, shape=(count, encoder.dim))
    for start in range(0, count, 65536):
        target[start : start + 65536] = source[start : start + 65536]
    target.flush()
    del source, target
    os.remove(raw_path)
    return count
