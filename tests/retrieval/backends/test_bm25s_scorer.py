"""The bm25s backend scores with numba when it is installed; results must equal the numpy path's."""

from __future__ import annotations

import random

import pytest

from agentic_verl.retrieval.backends.bm25s_backend import SCORER_ENV
from agentic_verl.retrieval.index import build_index, load_index


@pytest.fixture(scope="module")
def zipf_index(tmp_path_factory):
    # a few hundred passages over a skewed vocabulary, so queries share terms and ranks are non-trivial
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(400)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    corpus = tmp_path_factory.mktemp("zipf") / "corpus.jsonl"
    with corpus.open("w") as out:
        for i in range(300):
            words = rng.choices(vocab, weights, k=rng.randint(8, 40))
            out.write(f'{{"id": "p{i}", "contents": "T{i}\\n{" ".join(words)}"}}\n')
    queries = [" ".join(rng.choices(vocab, weights, k=rng.randint(1, 5))) for _ in range(100)]
    index_dir = tmp_path_factory.mktemp("zipf_index")
    build_index(corpus, index_dir, "bm25s", overwrite=True)
    return index_dir, queries


def _search(index_dir, queries, scorer, monkeypatch, batched):
    monkeypatch.setenv(SCORER_ENV, scorer)
    index = load_index(index_dir)
    try:
        if batched:
            return index.search(queries, 5)
        return [index.search([query], 5)[0] for query in queries]
    finally:
        index.close()


@pytest.mark.parametrize("batched", [False, True])  # one query per call, and one call for all (threads >= 64)
def test_numba_and_numpy_scorers_agree(zipf_index, monkeypatch, batched):
    pytest.importorskip("numba")
    index_dir, queries = zipf_index
    fast = _search(index_dir, queries, "numba", monkeypatch, batched)
    slow = _search(index_dir, queries, "numpy", monkeypatch, batched)
    for fast_passages, slow_passages in zip(fast, slow, strict=True):
        # same scores in the same order; ids may swap only within ties (equal scores)
        assert [p.score for p in fast_passages] == pytest.approx([p.score for p in slow_passages], rel=1e-5)
        assert _by_score(fast_passages) == _by_score(slow_passages)
    assert sum(map(len, fast)) > 200  # the queries really retrieve


def _by_score(passages):
    groups: dict[float, set[str]] = {}
    for p in passages:
        groups.setdefault(round(p.score, 4), set()).add(p.id)
    cutoff = min(groups) if groups else None  # the last tie group may be cut by topk differently
    return {score: ids for score, ids in groups.items() if score != cutoff}


def test_numba_is_the_default_when_installed(zipf_index, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.delenv(SCORER_ENV, raising=False)
    index = load_index(zipf_index[0])
    try:
        assert index.backend.retriever.backend == "numba"
    finally:
        index.close()


def test_bad_scorer_setting_is_a_clear_error(zipf_index, monkeypatch):
    monkeypatch.setenv(SCORER_ENV, "gpu")
    with pytest.raises(ValueError, match="must be auto, numba or numpy"):
        load_index(zipf_index[0])
