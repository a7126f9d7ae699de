"""Sharded bm25s builds: corpus-wide BM25 statistics, one score matrix per shard, memory bounded by a shard.

BM25 scores a passage with corpus-wide numbers: the number of passages N, the average passage length avgdl and
each term's document frequency df (its idf). A shard built alone would use its own N, avgdl and df, and its scores
would not be comparable with another shard's. So the build runs in two passes:

1. `tokenize <s>` for each shard in corpus order: read the shard's passages, write them to its docstore, tokenize
   them with one tokenizer whose vocabulary grows over the whole corpus, write the token ids to a temporary file
   (`_build/tokens-<s>.i32`, 4 bytes a token) and add to the running statistics: df per term id, total length, N.
   After each shard, the vocabulary and the statistics so far are saved (`_build/state-<s>/`), so an interrupted
   pass resumes at the next shard.
2. `score <s>` for each shard: read its token ids back and compute its bm25s score matrix (documents x the global
   vocabulary) with the final, corpus-wide N, avgdl and idf; then the token file is deleted.

Every shard's matrix holds exactly the scores the unsharded index would hold for its passages (the same bm25s
formulas, in the same float64-then-float32 arithmetic), so the merged top-k is the unsharded top-k.

Memory: pass 1 holds the vocabulary (Python dicts, ~0.3 KB a distinct word) and a chunk of passages; pass 2 about
40 bytes per (passage, distinct term) pair of one shard (~2-3 GB for 1M 100-word passages): pick `--shards` so
that a shard has at most ~1-2M passages. Disk: the token files need ~4 bytes per token until their shard is scored.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np

from agentic_verl.retrieval.backends.bm25s_format import BM25_DIR, OPTIONS, TOKENIZER_DIR, describe, make_tokenizer
from agentic_verl.retrieval.docstore import DocStoreWriter

_CHUNK = 8192  # passages per statistics update (pass 1) and per scoring block (pass 2)
_STATS_FILE = "stats.json"
_DF_FILE = "df.npy"


class _Stats:
    """Corpus-wide statistics accumulated shard by shard: df per term id, total token count, passages."""

    def __init__(self):
        self.df = np.zeros(0, dtype=np.int64)
        self.total_length = 0
        self.documents = 0

    def add(self, chunk: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Count a chunk of tokenized passages; return (flat token ids int32, lengths int32)."""
        lengths = np.fromiter(map(len, chunk), dtype=np.int64, count=len(chunk))
        flat = np.fromiter(itertools.chain.from_iterable(chunk), dtype=np.int64, count=int(lengths.sum()))
        doc = np.repeat(np.arange(len(chunk), dtype=np.int64), lengths)
        terms = np.unique((doc << 32) | flat) & 0xFFFFFFFF  # each (passage, term) pair once
        counts = np.bincount(terms, minlength=len(self.df))
        if len(counts) > len(self.df):
            self.df = np.concatenate([self.df, np.zeros(len(counts) - len(self.df), dtype=np.int64)])
        self.df += counts
        self.total_length += int(lengths.sum())
        self.documents += len(chunk)
        return flat.astype(np.int32), lengths.astype(np.int32)

    def save(self, folder: Path, tokenizer) -> None:
        folder.mkdir(parents=True)
        tokenizer.save_vocab(str(folder))
        np.save(folder / _DF_FILE, self.df)
        (folder / _STATS_FILE).write_text(json.dumps({"total_length": self.total_length, "documents": self.documents}))

    def load(self, folder: Path, tokenizer) -> None:
        tokenizer.load_vocab(str(folder))
        self.df = np.load(folder / _DF_FILE)
        stats = json.loads((folder / _STATS_FILE).read_text())
        self.total_length, self.documents = stats["total_length"], stats["documents"]


def build_shards(build, k1: float = 1.5, b: float = 0.75, method: str = "lucene", stopwords: str = "en",
                 stemmer: str = "english", n_threads: int | None = None, **unknown) -> dict:
    """bm25s's `build_sharded`: the two passes above as resumable steps; returns the bm25s part of the meta."""
    if unknown:
        raise ValueError(f"unknown bm25s option(s) {sorted(unknown)}; known: {sorted(OPTIONS)}")
    import bm25s  # noqa: F401 - fail before reading the corpus if it is missing

    k1, b = float(k1), float(b)
    tokenizer, stats = make_tokenizer(stopwords, stemmer), _Stats()
    done = [s for s in range(build.n_shards) if build.is_done(f"tokenize {s}")]
    if done != list(range(len(done))):
        raise ValueError(f"{build.out_dir}: the build manifest lists tokenize steps out of order ({done}); "
                         "start again with --overwrite")
    if done:
        stats.load(_state_dir(build, done[-1]), tokenizer)
    for shard in range(len(done), build.n_shards):
        outputs = (build.shard_dir(shard), _tokens_path(build, shard), _lengths_path(build, shard),
                   _state_dir(build, shard))
        build.step(f"tokenize {shard}", lambda s=shard: _tokenize_shard(build, s, tokenizer, stats), outputs)
        if shard > 0:  # the previous state is no longer needed once this shard's is recorded
            shutil.rmtree(_state_dir(build, shard - 1), ignore_errors=True)

    avg_doc_len = np.float64(stats.total_length) / np.float64(stats.documents)  # == bm25s's lengths.mean()
    retriever = bm25s.BM25(k1=k1, b=b, method=method)
    scoring, doc_frequencies = _scoring(), dict(enumerate(stats.df.tolist()))
    idf_fn = scoring._select_idf_scorer(retriever.idf_method)
    idf = scoring._build_idf_array(doc_frequencies=doc_frequencies, n_docs=stats.documents, compute_idf_fn=idf_fn)
    nonoccurrence = None
    if method in retriever.methods_requiring_nonoccurrence:
        nonoccurrence = scoring._build_nonoccurrence_array(
            doc_frequencies=doc_frequencies, n_docs=stats.documents, compute_idf_fn=idf_fn,
            calculate_tfc_fn=scoring._select_tfc_scorer(method), l_d=avg_doc_len, l_avg=avg_doc_len, k1=k1, b=b,
            delta=retriever.delta)
    del doc_frequencies
    bar = build.bar("score shards", build.n_shards, " shards")
    for shard in range(build.n_shards):
        build.step(f"score {shard}", lambda s=shard: _score_shard(build, s, retriever, idf, avg_doc_len, nonoccurrence),
                   (build.shard_dir(shard) / BM25_DIR,))
        _tokens_path(build, shard).unlink(missing_ok=True)
        _lengths_path(build, shard).unlink(missing_ok=True)
        bar.update(1)
    bar.close()
    build.step("tokenizer", lambda: _save_tokenizer(tokenizer, build.out_dir / TOKENIZER_DIR),
               (build.out_dir / TOKENIZER_DIR,))
    meta = describe(tokenizer, stopwords, stemmer, k1, b, method, n_threads)
    meta["bm25"]["corpus_stats"] = {
        "documents": stats.documents, "avg_doc_len": float(avg_doc_len), "vocabulary": len(idf),
        "shared": "N, avgdl and every term's df are computed over the whole corpus (tokenize steps) and every "
                  "shard's scores use them",
    }
    return meta


def _scoring():
    # bm25s's own idf / term-frequency formulas (bm25s is pinned in pyproject.toml), so a shard's scores are the
    # unsharded index's to the bit; tests/retrieval/test_sharded.py compares the two.
    from bm25s import scoring

    return scoring


def _tokenize_shard(build, shard: int, tokenizer, stats: _Stats) -> dict:
    tokens = 0
    with DocStoreWriter(build.shard_dir(shard)) as docs, open(_tokens_path(build, shard), "wb") as out:

        def texts():
            for passage in build.passages(shard):
                docs.add(passage)
                yield passage.contents

        lengths = []
        ids = tokenizer.streaming_tokenize(texts(), update_vocab=True)
        while chunk := list(itertools.islice(ids, _CHUNK)):
            flat, chunk_lengths = stats.add(chunk)
            out.write(flat.tobytes())
            lengths.append(chunk_lengths)
            tokens += len(flat)
    np.save(_lengths_path(build, shard), np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int32))
    stats.save(_state_dir(build, shard), tokenizer)
    return {"passages": len(docs), "tokens": tokens}


def _score_shard(build, shard: int, retriever, idf: np.ndarray, avg_doc_len: np.float64, nonoccurrence) -> dict:
    """The shard's score matrix (CSC: one column per vocabulary term, rows = the shard's passages), saved by bm25s."""
    tokens = np.fromfile(_tokens_path(build, shard), dtype=np.int32)
    lengths = np.load(_lengths_path(build, shard)).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    tfc_fn = _scoring()._select_tfc_scorer(retriever.method)
    data, rows, cols = [], [], []
    for first in range(0, len(lengths), _CHUNK):
        last = min(first + _CHUNK, len(lengths))
        doc = np.repeat(np.arange(first, last, dtype=np.int64), lengths[first:last])
        pairs, tf = np.unique((doc << 32) | tokens[offsets[first]:offsets[last]], return_counts=True)
        doc, term = pairs >> 32, pairs & 0xFFFFFFFF
        # as bm25s: tf float32, document length an integer, avgdl float64 -> float64 scores, stored as float32
        tfc = tfc_fn(tf_array=tf.astype(np.float32), l_d=lengths[doc], l_avg=avg_doc_len, k1=retriever.k1,
                     b=retriever.b, delta=retriever.delta)
        scores = idf[term] * tfc
        if nonoccurrence is not None:
            scores -= nonoccurrence[term]
        data.append(scores.astype(np.float32))
        rows.append(doc.astype(np.int32))
        cols.append(term.astype(np.int32))
    del tokens
    data, rows, cols = (np.concatenate(x) for x in (data, rows, cols))
    order = np.argsort(cols, kind="stable")  # by term, then passage (the pairs are in passage order)
    indptr = np.zeros(len(idf) + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=len(idf)), out=indptr[1:])
    retriever.scores = {"data": data[order], "indices": rows[order], "indptr": indptr, "num_docs": len(lengths)}
    retriever.vocab_dict = {}  # the vocabulary is the index's tokenizer/, shared by every shard
    retriever.nonoccurrence_array = nonoccurrence
    retriever.save(str(build.shard_dir(shard) / BM25_DIR))
    retriever.scores = None
    return {"passages": len(lengths), "postings": int(len(data))}


def _save_tokenizer(tokenizer, folder: Path) -> None:
    tokenizer.save_vocab(str(folder))
    tokenizer.save_stopwords(str(folder))


def _tokens_path(build, shard: int) -> Path:
    return build.scratch / f"tokens-{shard:05d}.i32"


def _lengths_path(build, shard: int) -> Path:
    return build.scratch / f"lengths-{shard:05d}.npy"


def _state_dir(build, shard: int) -> Path:
    return build.scratch / f"state-{shard:05d}"
