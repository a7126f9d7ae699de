"""`dense`: sentence-transformers embeddings searched with faiss by inner product (cosine: embeddings are normalised).

The encoder, the query/passage text conventions (e5, bge, none) and where the model is found: dense_encoder.py.
The index folder's files, the build options and how vectors are written: dense_format.py.

`faiss_index` (faiss_indexes.py has the table of memory and options):
- flat (default): exact search; unsharded, the index is rebuilt from embeddings.npy at load (a memory copy, no file
  twice); sharded, each shard is searched straight from its memory-mapped embeddings.npy.
- hnsw: graph search, sub-linear, ~1.1x the memory of flat; `hnsw_m`, `ef_construction`, `ef_search`.
- ivf:  inverted lists over k-means cells; `ivf_nlist` (default ~4 sqrt(n)), `ivf_nprobe` cells searched.
- ivfpq: ivf with product-quantised codes (`pq_m` bytes a vector): ~1/30 of flat's memory, approximate scores.
With `--shards N` (dense_sharded.py) each shard has its own docstore, embeddings and faiss index (ivf / ivfpq share
one trained quantizer); queries are encoded once and every shard's top-k merged by score (shards.py). Equal scores
rank in corpus order, sharded or not (ranking.py; hnsw / ivf / ivfpq: among the passages the index finds).
`embeddings=DIR` (`--embeddings`): the vectors of an `agentic-verl index encode` folder (Ray workers, GPUs:
encode.py, embeddings.py) are copied instead of encoded, sharded or not; the folder's model and convention become
the index's, so queries are encoded as its passages were.

Needs the extra: pip install 'agentic_verl[dense]'.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from agentic_verl.extras import require
from agentic_verl.retrieval.backends.base import BACKENDS, RetrievalBackend
from agentic_verl.retrieval.backends.dense_encoder import (
    DEFAULT_MODEL,
    PURPOSE,
    Encoder,
    describe,
    resolve_convention,
    stored_convention,
)
from agentic_verl.retrieval.backends.dense_format import (
    EMBEDDINGS_FILE,
    OPTIONS,
    check_faiss_options,
    copy_encoded,
    encode_to_npy,
    open_encoded,
    sample_rows,
)
from agentic_verl.retrieval.backends.faiss_indexes import (
    FAISS_FILE,
    MmapFlatIP,
    add_in_chunks,
    index_settings,
    new_index,
    read_index,
)
from agentic_verl.retrieval.docstore import DocStore
from agentic_verl.retrieval.protocol import Passage
from agentic_verl.retrieval.ranking import exact_topk
from agentic_verl.retrieval.shards import fetch, is_sharded, merge_topk, open_docstores


@BACKENDS.register("dense")
class DenseBackend(RetrievalBackend):
    name = "dense"
    OPTIONS = OPTIONS

    def __init__(self, encoder: Encoder, shards: list[tuple[object, DocStore]], meta: dict):
        """`shards`: (faiss index or MmapFlatIP, its passages) per shard, in corpus order; one when unsharded."""
        self.encoder, self.shards, self.meta = encoder, shards, meta

    @property
    def index(self):
        """The first shard's faiss index (the only one of an unsharded index)."""
        return self.shards[0][0]

    @property
    def docstore(self) -> DocStore:
        return self.shards[0][1]

    @classmethod
    def build(
        cls,
        passages: Iterable[Passage],
        out_dir: Path,
        model: str | None = None,
        convention: str | None = None,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        faiss_index: str = "flat",
        batch_size: int = 64,
        device: str = "cpu",
        progress: bool = True,
        embeddings: str | None = None,
        **options,
    ) -> dict:
        if embeddings is not None and not Path(embeddings).exists():
            raise FileNotFoundError(f"embeddings={embeddings} does not exist")
        if embeddings is not None and not Path(embeddings).is_dir():
            raise ValueError(f"embeddings={embeddings}: a .npy of precomputed vectors needs a sharded build (add "
                             "--shards N); an unsharded build takes an `agentic-verl index encode` folder")
        faiss_options = check_faiss_options(faiss_index, options)
        faiss = require("faiss", PURPOSE)
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        if embeddings is not None:  # vectors from `index encode`: copied, not encoded; the model is its own
            store = open_encoded(embeddings, model, convention, query_prefix, passage_prefix)
            encoded, count = store.encoder_meta, copy_encoded(store, passages, out_dir)
        else:
            model = model or DEFAULT_MODEL
            text = resolve_convention(model, convention or "auto", query_prefix, passage_prefix)
            encoder = Encoder(model, text, batch_size=batch_size, device=device)
            encoded, count = describe(encoder, model), encode_to_npy(encoder, passages, out_dir, progress)
        dim = encoded["dim"]
        vectors = np.load(out_dir / EMBEDDINGS_FILE, mmap_mode="r")
        settings = index_settings(faiss_index, dim, count, **faiss_options)
        index = new_index(settings, dim, lambda n: vectors[sample_rows(count, n)])
        if index is not None:
            add_in_chunks(index, vectors)
            faiss.write_index(index, str(out_dir / FAISS_FILE))
        meta = {**encoded, **settings, "num_embeddings": count}
        if embeddings is not None:
            meta["embeddings_source"] = str(Path(embeddings).resolve())
        return meta

    @classmethod
    def build_sharded(cls, build, **options) -> dict:
        """A sharded, resumable build: encode shard by shard, one shared quantizer (see dense_sharded.py)."""
        from agentic_verl.retrieval.backends.dense_sharded import build_shards

        return build_shards(build, **options)

    @classmethod
    def load(cls, index_dir: Path, meta: dict) -> DenseBackend:
        faiss = require("faiss", PURPOSE)
        index_dir = Path(index_dir)
        options = meta  # build()'s dict sits at the top level of index_meta.json
        encoder = Encoder(options["model"], stored_convention(options))
        if encoder.dim != options["dim"]:
            raise ValueError(f"model {options['model']} gives {encoder.dim}-d vectors, the index has {options['dim']}-d")
        flat = options["faiss_index"] == "flat"
        if not is_sharded(meta):
            if flat:  # a copy in RAM, as before shards existed
                index = faiss.IndexFlatIP(options["dim"])
                add_in_chunks(index, np.load(index_dir / EMBEDDINGS_FILE, mmap_mode="r"))
            else:
                index = read_index(index_dir / FAISS_FILE, options)
            return cls(encoder, [(index, DocStore(index_dir))], meta)
        docstores = open_docstores(index_dir, meta)
        folders = [index_dir / entry["dir"] for entry in meta["shards"]]
        searchers = [MmapFlatIP(f / EMBEDDINGS_FILE) if flat else read_index(f / FAISS_FILE, options) for f in folders]
        return cls(encoder, list(zip(searchers, docstores, strict=True)), meta)

    def search(self, queries: list[str], topk: int) -> list[list[Passage]]:
        if not queries:
            return []
        return self.search_vectors(self.encoder.queries(list(queries)), topk)

    def search_vectors(self, vectors: np.ndarray, topk: int) -> list[list[Passage]]:
        """Best-first passages for already encoded (normalised) query vectors, one row per query."""
        hits: list[list[tuple]] = [[] for _ in vectors]  # per query: (scores, rows) of each shard

        def shard_search(index, queries: list[int], depth: int) -> list[tuple]:
            scores, rows = index.search(np.ascontiguousarray(vectors[queries]), depth)
            return [(s[r >= 0], r[r >= 0]) for s, r in zip(scores, rows, strict=True)]  # faiss pads with -1

        for index, docs in self.shards:
            # faiss orders equal scores its own way: ranking.py makes them corpus order, the k-th tie included
            shard_hits = exact_topk(functools.partial(shard_search, index), len(vectors), int(topk), len(docs))
            for i, found in enumerate(shard_hits):
                hits[i].append(found)
        if len(self.shards) == 1:
            return [self.docstore.get(h[0][1].tolist(), h[0][0].tolist()) for h in hits]
        docstores = [docs for _, docs in self.shards]
        return [fetch(docstores, merge_topk(h, int(topk))) for h in hits]

    def close(self) -> None:
        for _, docs in self.shards:
            docs.close()
