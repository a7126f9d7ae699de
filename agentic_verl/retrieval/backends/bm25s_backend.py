"""`bm25s`: pure-Python BM25 (the default backend; no JVM, no GPU).

Text is lower-cased, split on `\\w\\w+`, English stopwords removed and stemmed with PyStemmer (Snowball
English); the tokenizer settings, its vocabulary and the BM25 parameters are saved with the index, so queries
are tokenized exactly like the corpus (the folder's files, the options and the tokenizer: bm25s_format.py). Passages are kept in a memory-mapped docstore (see docstore.py).

Build options (`agentic-verl index build --backend bm25s -o k1=0.9 ...`):
  k1 (1.5), b (0.75), method ("lucene"; also "robertson", "atire", "bm25l", "bm25+"),
  stopwords ("en" or "none"), stemmer ("english" or any PyStemmer language, or "none"),
  n_threads (search threads for large batches; default min(4, cpus)).

Scoring runs in bm25s's numba kernels when numba is installed (a dependency of agentic_verl): ~30x the
queries/s of its numpy path on 2 cores (12k vs 0.45k single queries/s on 100k passages), same scores.
`AGENTIC_VERL_BM25S_SCORER=numpy` forces the numpy path. The kernels are compiled when an index is loaded.

Building in one folder holds every passage's token ids in memory (4 bytes a token: ~0.3 KB a 100-word passage)
and bm25s's score matrix; the passages themselves are streamed to disk. For millions of passages, build with
`--shards N` (bm25s_sharded.py): bounded memory, resumable, and every shard scored with corpus-wide statistics, so
the merged top-k equals the unsharded one. A loaded index searches its shards one after another (one tokenizer and
vocabulary for all) and merges their top-k (shards.py); an index built without shards is one shard.

Queries with no indexed term (only stopwords, unknown words, empty) get no passages; passages with score 0
(no term in common with the query) are never returned, so a query may get fewer than topk. Equal scores rank in
corpus order, sharded or not (ranking.py), so a sharded index returns exactly the unsharded ranking.
"""

from __future__ import annotations

import array
import functools
import os
from collections.abc import Iterable
from pathlib import Path

from agentic_verl.retrieval.backends.base import BACKENDS, RetrievalBackend
from agentic_verl.retrieval.backends.bm25s_format import BM25_DIR, OPTIONS, TOKENIZER_DIR, describe, make_tokenizer
from agentic_verl.retrieval.docstore import DocStore, DocStoreWriter
from agentic_verl.retrieval.protocol import Passage
from agentic_verl.retrieval.ranking import exact_topk
from agentic_verl.retrieval.shards import fetch, is_sharded, merge_topk, open_docstores

_MIN_BATCH_FOR_THREADS = 64  # below this a thread pool costs more than it saves
SCORER_ENV = "AGENTIC_VERL_BM25S_SCORER"


@BACKENDS.register("bm25s")
class BM25sBackend(RetrievalBackend):
    name = "bm25s"
    OPTIONS = OPTIONS

    def __init__(self, tokenizer, shards: list[tuple[object, DocStore]], n_threads: int):
        """`shards`: (bm25s.BM25, its passages) per shard, in corpus order; one for an unsharded index."""
        self.tokenizer = tokenizer
        self.shards = shards
        self.n_threads = n_threads
        self._empty_id = tokenizer.get_vocab_dict().get("")

    @property
    def retriever(self):
        """The first shard's bm25s.BM25 (the only one of an unsharded index)."""
        return self.shards[0][0]

    @property
    def docs(self) -> DocStore:
        return self.shards[0][1]

    @classmethod
    def build(cls, passages: Iterable[Passage], out_dir: Path, k1: float = 1.5, b: float = 0.75,
              method: str = "lucene", stopwords: str = "en", stemmer: str = "english",
              n_threads: int | None = None, **unknown) -> dict:
        if unknown:
            raise ValueError(f"unknown bm25s option(s) {sorted(unknown)}; known: {sorted(cls.OPTIONS)}")
        import bm25s

        out_dir = Path(out_dir)
        tokenizer = make_tokenizer(stopwords, stemmer)
        with DocStoreWriter(out_dir) as writer:

            def texts():
                for passage in passages:
                    writer.add(passage)
                    yield passage.contents

            # int32 arrays, not lists of Python ints: ~9x less memory for the corpus's token ids (bm25s holds them
            # all while indexing), for ~30% more indexing time
            token_ids = [array.array("i", ids) for ids in tokenizer.streaming_tokenize(texts(), update_vocab=True)]
        if not token_ids:
            raise ValueError("the corpus has no passages")
        retriever = bm25s.BM25(k1=float(k1), b=float(b), method=method)
        retriever.index((token_ids, tokenizer.get_vocab_dict()), show_progress=False)
        retriever.save(str(out_dir / BM25_DIR))
        tokenizer.save_vocab(str(out_dir / TOKENIZER_DIR))
        tokenizer.save_stopwords(str(out_dir / TOKENIZER_DIR))
        return describe(tokenizer, stopwords, stemmer, k1, b, method, n_threads)

    @classmethod
    def load(cls, index_dir: Path, meta: dict) -> BM25sBackend:
        import bm25s

        index_dir = Path(index_dir)
        tokenizer_meta = meta.get("tokenizer", {})
        stemmer = tokenizer_meta.get("stemmer", "none")
        stemmer = stemmer.split(" ", 1)[1] if stemmer.startswith("PyStemmer ") else "none"
        tokenizer = make_tokenizer("none", stemmer)
        tokenizer.load_stopwords(str(index_dir / TOKENIZER_DIR))
        tokenizer.load_vocab(str(index_dir / TOKENIZER_DIR))
        scorer = os.environ.get(SCORER_ENV, "auto")
        n_threads = int(meta.get("n_threads") or min(4, os.cpu_count() or 1))
        if not is_sharded(meta):
            retriever = bm25s.BM25.load(str(index_dir / BM25_DIR), mmap=True, show_progress=False)
            _select_scorer(retriever, scorer)
            return cls(tokenizer, [(retriever, DocStore(index_dir))], n_threads)
        docstores = open_docstores(index_dir, meta)
        # One vocabulary for every shard: the tokenizer's dict and a range (bm25s only asks `id in ...`) replace the
        # per-shard copies bm25s would load (a Wikipedia vocabulary is millions of entries).
        vocab = tokenizer.get_vocab_dict()
        shards = []
        for entry, docs in zip(meta["shards"], docstores, strict=True):
            retriever = bm25s.BM25.load(str(index_dir / entry["dir"] / BM25_DIR), mmap=True, load_vocab=False,
                                        show_progress=False)
            retriever.vocab_dict, retriever.unique_token_ids_set = vocab, range(len(vocab))
            _select_scorer(retriever, scorer)
            shards.append((retriever, docs))
        return cls(tokenizer, shards, n_threads)

    @classmethod
    def build_sharded(cls, build, **options) -> dict:
        """A sharded, resumable build in bounded memory (see bm25s_sharded.py and build.py)."""
        from agentic_verl.retrieval.backends.bm25s_sharded import build_shards

        return build_shards(build, **options)

    def search(self, queries: list[str], topk: int) -> list[list[Passage]]:
        results: list[list[Passage]] = [[] for _ in queries]
        if not queries or int(topk) < 1:
            return results
        token_ids = self.tokenizer.tokenize(list(queries), update_vocab=False, return_as="ids", show_progress=False)
        token_ids = [[t for t in ids if t != self._empty_id] for ids in token_ids]
        rows = [i for i, ids in enumerate(token_ids) if ids]
        if not rows:
            return results
        hits: list[list[tuple]] = [[] for _ in rows]  # per query: (scores, rows) of each shard

        def shard_search(retriever, queries: list[int], depth: int) -> list[tuple]:
            n_threads = self.n_threads if len(queries) >= _MIN_BATCH_FOR_THREADS else 0
            found, scores = retriever.retrieve([token_ids[rows[q]] for q in queries], k=depth, show_progress=False,
                                               n_threads=n_threads, return_as="tuple")
            return [(s[s > 0], f[s > 0]) for f, s in zip(found, scores, strict=True)]  # score 0: no common term

        for retriever, docs in self.shards:
            # bm25s orders equal scores its own way: ranking.py makes them corpus order, the k-th tie included
            shard_hits = exact_topk(functools.partial(shard_search, retriever), len(rows), int(topk), len(docs))
            for row, found in enumerate(shard_hits):
                hits[row].append(found)
        for row, i in enumerate(rows):
            if len(self.shards) == 1:
                scores, found = hits[row][0]
                results[i] = self.docs.get(found, scores)
            else:
                results[i] = fetch([docs for _, docs in self.shards], merge_topk(hits[row], int(topk)))
        return results

    def close(self) -> None:
        for _, docs in self.shards:
            docs.close()


def _select_scorer(retriever, scorer: str) -> None:
    """Switch a loaded retriever to bm25s's numba kernels (BM25.load always picks numpy) and compile them."""
    if scorer not in ("auto", "numba", "numpy"):
        raise ValueError(f"{SCORER_ENV} must be auto, numba or numpy, got {scorer!r}")
    if scorer == "numpy":
        return
    try:
        import numba  # noqa: F401
    except ImportError:
        if scorer == "numba":
            raise ValueError(f"{SCORER_ENV}=numba but numba is not installed: pip install numba") from None
        return
    retriever.backend = "numba"
    retriever.activate_numba_scorer()
    # compile now (a few seconds), not inside the first request; n_threads=0 runs serially (thread-safe)
    retriever.retrieve([[0]], k=1, show_progress=False, return_as="tuple", n_threads=0)

