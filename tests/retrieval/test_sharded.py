"""Sharded indexes: the merge, and a sharded bm25s index ranking exactly like the unsharded one (real bm25s).

Ties (equal scores) in corpus order, sharded or not: test_ties.py."""

from __future__ import annotations

import numpy as np
import pytest
from _sharding_testlib import write_zipf_corpus

from agentic_verl.retrieval.backends.faiss_indexes import MmapFlatIP
from agentic_verl.retrieval.index import build_index, load_index
from agentic_verl.retrieval.service import RetrievalService
from agentic_verl.retrieval.shards import merge_topk, shard_bounds


@pytest.mark.parametrize(
    ("hits", "k", "expected"),
    [
        # the best scores over all shards, best first
        ([([0.9, 0.1], [3, 0]), ([0.5], [7])], 2, [(0, 3, 0.9), (1, 7, 0.5)]),
        # equal scores: corpus order (shard, then row)
        ([([0.5, 0.5], [9, 2]), ([0.5], [0])], 3, [(0, 2, 0.5), (0, 9, 0.5), (1, 0, 0.5)]),
        # fewer candidates than k; a shard that found nothing
        ([([], []), ([0.2], [4])], 5, [(1, 4, 0.2)]),
        # nothing at all
        ([([], []), ([], [])], 3, []),
    ],
)
def test_merge_topk(hits, k, expected):
    assert merge_topk([(np.array(s), np.array(r)) for s, r in hits], k) == expected


@pytest.mark.parametrize(
    ("n", "shards", "expected"),
    [
        (10, 1, [(0, 10)]),  # one shard: everything
        (10, 4, [(0, 2), (2, 5), (5, 7), (7, 10)]),  # sizes differ by at most one
        (3, 3, [(0, 1), (1, 2), (2, 3)]),  # a passage each
    ],
)
def test_shard_bounds(n, shards, expected):
    assert shard_bounds(n, shards) == expected


@pytest.mark.parametrize(("n", "shards"), [(3, 4), (5, 0)])
def test_shard_bounds_refuses_empty_shards(n, shards):
    with pytest.raises(ValueError, match="shard"):
        shard_bounds(n, shards)


def test_memory_mapped_flat_search_equals_faiss_flat_and_shards_merge_exactly(tmp_path):
    faiss = pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((500, 16)).astype(np.float32)
    queries = rng.standard_normal((7, 16)).astype(np.float32)
    exact = faiss.IndexFlatIP(16)
    exact.add(vectors)
    want_scores, want_rows = exact.search(queries, 10)
    # three shards, each searched alone from a memory-mapped .npy, then merged
    bounds = shard_bounds(500, 3)
    shards = []
    for i, (start, stop) in enumerate(bounds):
        np.save(tmp_path / f"{i}.npy", vectors[start:stop])
        shards.append(MmapFlatIP(tmp_path / f"{i}.npy"))
    for q in range(len(queries)):
        hits = [shard.search(queries[q : q + 1], 10) for shard in shards]
        merged = merge_topk([(s[0], r[0]) for s, r in hits], 10)
        assert [bounds[shard][0] + row for shard, row, _ in merged] == want_rows[q].tolist()
        np.testing.assert_allclose([score for _, _, score in merged], want_scores[q], rtol=1e-5)


@pytest.fixture(scope="module")
def zipf(tmp_path_factory):
    return write_zipf_corpus(tmp_path_factory.mktemp("zipf") / "corpus.jsonl")


@pytest.mark.parametrize("method", ["lucene", "bm25+"])  # bm25+ also shares the corpus-wide non-occurrence scores
def test_sharded_bm25s_ranks_like_the_unsharded_index(zipf, tmp_path, method):
    corpus, queries = zipf
    build_index(corpus, tmp_path / "one", show_progress=False, method=method)
    meta = build_index(corpus, tmp_path / "four", show_progress=False, method=method, shards=4)
    assert [s["passages"] for s in meta["shards"]] == [100, 100, 100, 100]
    assert meta["bm25"]["corpus_stats"]["documents"] == 400 and meta["passages"] == 400
    single, sharded = load_index(tmp_path / "one"), load_index(tmp_path / "four")
    try:
        expected, got = single.search(queries, 10), sharded.search(queries, 10)
        assert sum(map(len, expected)) > 500  # the queries really retrieve
        # corpus-wide statistics in every shard: the same float32 scores; ties in corpus order both ways (ranking.py):
        # the same passages in the same order (test_ties.py: a corpus where most top-k end inside a tie)
        assert got == expected
        assert got[-2:] == [[], []]  # only stopwords / unknown words: no passages, as unsharded
        assert got[-3][0].id == "p17"  # the title word is in one passage only
    finally:
        single.close()
        sharded.close()


def test_one_shard_is_the_unsharded_index_to_the_bit(zipf, tmp_path):
    corpus, queries = zipf
    build_index(corpus, tmp_path / "one", show_progress=False)
    build_index(corpus, tmp_path / "s1", show_progress=False, shards=1)
    single, sharded = load_index(tmp_path / "one"), load_index(tmp_path / "s1")
    try:
        assert sharded.search(queries, 5) == single.search(queries, 5)
        for name in ("data", "indices", "indptr"):  # the same CSC score matrix
            np.testing.assert_array_equal(np.load(tmp_path / "one" / "bm25s" / f"{name}.csc.index.npy"),
                                          np.load(tmp_path / "s1" / "shards/00000/bm25s" / f"{name}.csc.index.npy"))
    finally:
        single.close()
        sharded.close()


def test_a_sharded_index_is_served_by_the_retrieval_service(zipf, tmp_path):
    corpus, queries = zipf
    build_index(corpus, tmp_path / "three", show_progress=False, shards=3)
    index = load_index(tmp_path / "three")
    assert index.meta["shards"][2] == {"dir": "shards/00002", "start": 266, "passages": 134}
    service = RetrievalService.from_index_dir(tmp_path / "three", cache_size=0)
    try:
        assert service.search_sync(queries[:20], 3) == index.search(queries[:20], 3)
    finally:
        service.close()
        index.close()
