"""The hybrid backend: reciprocal-rank fusion of bm25s and dense (real MiniLM), and the fusion function itself."""

from __future__ import annotations

import pytest
from _backends_testlib import KITTEN, PARAPHRASE_QUERY, RARE, built_and_opened, results_before_and_after_reload

from agentic_verl.retrieval.backends.hybrid import reciprocal_rank_fusion
from agentic_verl.retrieval.index import build_index, load_index, read_meta
from agentic_verl.retrieval.protocol import Passage

A, B, C, D = (Passage(x, x.upper()) for x in "abcd")


@pytest.mark.parametrize(
    ("rankings", "rrf_k", "topk", "expected"),
    [
        # in both lists beats first in one list
        ([[A, B], [B, C]], 60, 3, [("b", 1 / 61 + 1 / 62), ("a", 1 / 61), ("c", 1 / 62)]),
        # equal scores: the better best rank first, then the id
        ([[A, B], [C, D]], 60, 4, [("a", 1 / 61), ("c", 1 / 61), ("b", 1 / 62), ("d", 1 / 62)]),
        # ranks 1 + 3 beat ranks 2 + 2 (1/x is convex); a and c tie, a wins on id; topk cuts the list
        ([[A, B, C], [C, B, A]], 60, 2, [("a", 1 / 61 + 1 / 63), ("c", 1 / 61 + 1 / 63)]),
        # k=0: plain reciprocal ranks, the top of one list dominates
        ([[A, B, C], [B, C, A]], 0, 3, [("b", 1 / 2 + 1), ("a", 1 + 1 / 3), ("c", 1 / 3 + 1 / 2)]),
        # a retriever that repeats an id counts it once, at its best rank
        ([[A, A, B]], 60, 2, [("a", 1 / 61), ("b", 1 / 63)]),
        # one retriever found nothing
        ([[], [D]], 60, 3, [("d", 1 / 61)]),
        ([[], []], 60, 3, []),
    ],
)
def test_reciprocal_rank_fusion(rankings, rrf_k, topk, expected):
    fused = reciprocal_rank_fusion(rankings, topk=topk, rrf_k=rrf_k)
    assert [p.id for p in fused] == [pid for pid, _ in expected]
    assert [p.score for p in fused] == pytest.approx([score for _, score in expected])
    assert all(p.contents == p.id.upper() for p in fused)


@pytest.fixture(scope="module")
def hybrid(corpus_path, tmp_path_factory):
    yield from built_and_opened(corpus_path, tmp_path_factory, "hybrid", rrf_k=30, depth=10,
                                **{"sparse.k1": 1.2, "dense.faiss_index": "flat"})


@pytest.mark.dense
def test_fusion_keeps_what_each_retriever_is_good_at(hybrid):
    sparse, dense = hybrid.backend.sparse, hybrid.backend.dense
    # a paraphrase: bm25s finds nothing useful (no shared content word), the dense side ranks it first
    assert [p.id for p in sparse.search([PARAPHRASE_QUERY], 3)[0]][:1] != [KITTEN[0]]
    assert hybrid.search([PARAPHRASE_QUERY], topk=3)[0][0].id == KITTEN[0]
    # an exact rare name: bm25s ranks it first, and the fused list keeps it first
    assert sparse.search(["Rottnest quokka"], 1)[0][0].id == RARE[0]
    fused = hybrid.search(["Rottnest quokka", PARAPHRASE_QUERY], topk=5)
    assert [hits[0].id for hits in fused] == [RARE[0], KITTEN[0]]
    # the fused score is the RRF score of the two sub-rankings (depth 10, k 30)
    rankings = [sparse.search(["Rottnest quokka"], 10)[0], dense.search(["Rottnest quokka"], 10)[0]]
    expected = reciprocal_rank_fusion(rankings, topk=5, rrf_k=30)
    assert [(p.id, p.score) for p in fused[0]] == [(p.id, pytest.approx(p.score)) for p in expected]


@pytest.mark.dense
def test_meta_and_sub_indexes_are_loadable_on_their_own(hybrid):
    hybrid_dir = hybrid.path
    meta = read_meta(hybrid_dir)
    assert meta["backend"] == "hybrid" and meta["passages"] == 203
    assert (meta["rrf_k"], meta["depth"], meta["fusion"]) == (30.0, 10, "reciprocal_rank")
    assert meta["sub_indexes"]["sparse"] == {"backend": "bm25s", "options": {"k1": 1.2}}
    assert meta["sub_indexes"]["dense"] == {"backend": "dense", "options": {"faiss_index": "flat"}}
    sparse_meta, dense_meta = read_meta(hybrid_dir / "sparse"), read_meta(hybrid_dir / "dense")
    assert sparse_meta["bm25"]["k1"] == 1.2 and dense_meta["dim"] == 384
    for folder, query, expected in [("sparse", "Rottnest quokka", RARE[0]), ("dense", PARAPHRASE_QUERY, KITTEN[0])]:
        alone = load_index(hybrid_dir / folder)
        try:
            assert alone.search([query], 1)[0][0].id == expected
        finally:
            alone.close()


@pytest.mark.dense
def test_reload_from_disk_gives_the_same_results(hybrid):
    before, after = results_before_and_after_reload(hybrid, ["Rottnest quokka", PARAPHRASE_QUERY, "plum pie in Dunmore"])
    assert after == before


def test_bad_options_are_errors(corpus_path, tmp_path):
    with pytest.raises(TypeError, match="unknown hybrid build option 'rff_k'"):
        build_index(corpus_path, tmp_path / "a", "hybrid", show_progress=False, rff_k=60)
    with pytest.raises(ValueError, match="sparse backend must be one of"):
        build_index(corpus_path, tmp_path / "b", "hybrid", show_progress=False, sparse="dense")
    with pytest.raises(ValueError, match="depth >= 1"):
        build_index(corpus_path, tmp_path / "c", "hybrid", show_progress=False, depth=0)
