"""Sharded dense builds: encode shard by shard, train one quantizer on the whole corpus, one faiss index per shard.

Steps (resumable, see build.py):
1. `encode <s>`: the shard's passages go to its docstore and its normalised vectors to its `embeddings.npy`
   (streamed: one chunk of 1,024 passages in memory).
2. `train` (ivf / ivfpq only): k-means cells (and PQ codebooks) trained on `train_size` vectors sampled from every
   shard's embeddings, saved to `_build/trained.faiss`; every shard starts from this one trained index, so all
   shards quantize alike and their approximate scores are comparable.
3. `faiss <s>` (hnsw / ivf / ivfpq): the shard's vectors added to its own index, written as its `index.faiss`.

`--embeddings DIR` (`-o embeddings=DIR`, an `agentic-verl index encode` folder: encode.py, embeddings.py) or
`-o embeddings=FILE.npy` (row i = passage i of the corpus) replaces encoding in step 1 by copying vectors encoded
elsewhere (e.g. by Ray workers on GPUs). flat needs no step 2 or 3: a shard is searched from its memory-mapped
embeddings.npy, exactly.
Memory: one encoder batch while encoding; the training sample (train_size x dim x 4 bytes) while training; one shard's
index while adding to it.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from agentic_verl.extras import require
from agentic_verl.retrieval.backends.dense_encoder import DEFAULT_MODEL, PURPOSE, Encoder, describe, resolve_convention
from agentic_verl.retrieval.backends.dense_format import (
    EMBEDDINGS_FILE,
    check_faiss_options,
    encode_to_npy,
    open_encoded,
    sample_rows,
)
from agentic_verl.retrieval.backends.faiss_indexes import FAISS_FILE, add_in_chunks, index_settings, new_index
from agentic_verl.retrieval.docstore import DocStoreWriter
from agentic_verl.retrieval.embeddings import Embeddings

_TRAINED_FILE = "trained.faiss"


def build_shards(build, model: str | None = None, convention: str | None = None, query_prefix: str | None = None,
                 passage_prefix: str | None = None, faiss_index: str = "flat", batch_size: int = 64,
                 device: str = "cpu", progress: bool = True, embeddings: str | None = None, **options) -> dict:
    """dense's `build_sharded`: the steps above; returns the dense part of the meta.

    `embeddings`: an `index encode` folder (its corpus must be this one: sha256 and ids checked; its model and
    convention are the index's), or a .npy of the passages' vectors (row i = passage i, encoded elsewhere with
    `model` and its convention); either is copied instead of encoding, rows L2-normalised."""
    faiss_options = check_faiss_options(faiss_index, options)
    faiss = require("faiss", PURPOSE)
    if embeddings and Path(embeddings).is_dir():
        store = open_encoded(embeddings, model, convention, query_prefix, passage_prefix)
        corpus = build.manifest["corpus"]
        store.check_corpus(corpus["sha256"], build.manifest["passages"], corpus["path"])
        encoded, encode = store.encoder_meta, functools.partial(_copy_shard, source=store)
    else:
        model = model or DEFAULT_MODEL
        encoder = Encoder(model, resolve_convention(model, convention or "auto", query_prefix, passage_prefix),
                          batch_size=batch_size, device=device)
        encoded = describe(encoder, model)
        if embeddings:
            source = _precomputed(embeddings, build.manifest["passages"], encoder.dim)
            encode = functools.partial(_copy_shard, source=source)
        else:
            encode = functools.partial(_encode_shard, encoder=encoder)
    dim = encoded["dim"]
    for shard in range(build.n_shards):
        build.step(f"encode {shard}", functools.partial(encode, build, shard), (build.shard_dir(shard),))
    count = build.manifest["passages"]
    settings = index_settings(faiss_index, dim, count, **faiss_options)
    shard_vectors = [np.load(build.shard_dir(s) / EMBEDDINGS_FILE, mmap_mode="r") for s in range(build.n_shards)]
    if faiss_index in ("ivf", "ivfpq"):
        trained = build.scratch / _TRAINED_FILE
        build.step("train", lambda: _train(settings, dim, build.bounds, shard_vectors, trained), (trained,))
    if faiss_index != "flat":
        bar = build.bar(f"faiss {faiss_index}", build.n_shards, " shards")
        for shard in range(build.n_shards):
            output = build.shard_dir(shard) / FAISS_FILE
            build.step(f"faiss {shard}", lambda s=shard, out=output: _index_shard(faiss, settings, dim,
                                                                                   shard_vectors[s], build, out), (output,))
            bar.update(1)
        bar.close()
    meta = {**encoded, **settings, "num_embeddings": count}
    if embeddings:
        meta["embeddings_source"] = str(Path(embeddings).resolve())
    return meta


def _encode_shard(build, shard: int, encoder: Encoder) -> dict:
    # the corpus bar (build.passages) shows the progress; the encoder's own bar would be a second one
    return {"passages": encode_to_npy(encoder, build.passages(shard), build.shard_dir(shard), progress=False)}


def _precomputed(path: str, passages: int, dim: int) -> np.ndarray:
    vectors = np.load(path, mmap_mode="r")
    if vectors.ndim != 2 or vectors.shape != (passages, dim):
        raise ValueError(f"embeddings {path}: shape {vectors.shape}, the corpus and the model need ({passages}, {dim})")
    return vectors


def _copy_shard(build, shard: int, source) -> dict:
    """A shard from precomputed vectors (a .npy array or an `index encode` folder, whose ids are checked): its
    passages to the docstore, its rows (normalised) to embeddings.npy."""
    start, stop = build.bounds[shard]
    folder = build.shard_dir(shard)
    passages = build.passages(shard)
    with DocStoreWriter(folder) as docs:
        for passage in source.checked(start, passages) if isinstance(source, Embeddings) else passages:
            docs.add(passage)
    target = np.lib.format.open_memmap(folder / EMBEDDINGS_FILE, mode="w+", dtype=np.float32,
                                       shape=(stop - start, source.shape[1]))
    for first in range(0, stop - start, 65536):
        rows = np.asarray(source[start + first : min(start + first + 65536, stop)], dtype=np.float32)
        target[first : first + len(rows)] = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    target.flush()
    del target
    return {"passages": stop - start}


def _train(settings: dict, dim: int, bounds: list[tuple[int, int]], embeddings: list[np.ndarray], out: Path) -> dict:
    faiss = require("faiss", PURPOSE)
    total = bounds[-1][1]

    def sample(size: int) -> np.ndarray:
        rows = sample_rows(total, size)  # global rows -> (shard, row in shard)
        parts = [vectors[rows[(rows >= start) & (rows < stop)] - start]
                 for (start, stop), vectors in zip(bounds, embeddings, strict=True)]
        return np.concatenate(parts)

    faiss.write_index(new_index(settings, dim, sample), str(out))
    return {"train_size": settings["train_size"]}


def _index_shard(faiss, settings: dict, dim: int, embeddings: np.ndarray, build, out: Path) -> dict:
    trained = build.scratch / _TRAINED_FILE
    index = faiss.read_index(str(trained)) if trained.is_file() else new_index(settings, dim, lambda n: None)
    add_in_chunks(index, embeddings)
    faiss.write_index(index, str(out))
    return {"vectors": int(index.ntotal)}
