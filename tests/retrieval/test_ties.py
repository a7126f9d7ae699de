"""Equal scores rank in corpus order in every backend, sharded or not, the k-th tie included (ranking.py).

The corpus repeats each of 25 texts 12 times, scattered over the corpus, so every score is shared by at least 12
passages and the top-10 of most queries ends inside a tie: which tied passages make the cut, and in which order,
is decided by the tie rule alone. Each backend is compared with a ranking computed here from every passage's score.
"""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

from agentic_verl.retrieval.docstore import DocStore, DocStoreWriter
from agentic_verl.retrieval.index import build_index, load_index
from agentic_verl.retrieval.protocol import Passage
from agentic_verl.retrieval.ranking import exact_topk
from agentic_verl.retrieval.shards import shard_bounds

TEXTS, COPIES = 25, 12
N = TEXTS * COPIES


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    """(corpus path, queries): passage p<i> has text order[i], every text COPIES times."""
    rng = random.Random(0)
    vocab = [f"word{i}" for i in range(40)]
    texts = [" ".join(rng.choices(vocab, k=rng.randint(3, 12))) for _ in range(TEXTS)]
    order = [t for t in range(TEXTS) for _ in range(COPIES)]
    rng.shuffle(order)
    path = tmp_path_factory.mktemp("tied") / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "contents": texts[t]}) + "\n" for i, t in enumerate(order)))
    queries = [" ".join(rng.choices(vocab, k=rng.randint(1, 3))) for _ in range(40)]
    return path, queries


def reference(scores: np.ndarray, k: int, keep=lambda s: s > 0) -> list[tuple[str, float]]:
    """The rule computed here: every kept passage by score, best first, equal scores by corpus row."""
    rows = [r for r in range(len(scores)) if keep(scores[r])]
    rows.sort(key=lambda r: (-scores[r], r))
    return [(f"p{r}", float(scores[r])) for r in rows[:k]]


def ties_at_k(expected: list[list[tuple[str, float]]], every: list[list[tuple[str, float]]], k: int) -> int:
    """How many queries have passages outside their top-k with the k-th score (the cut falls inside a tie)."""
    return sum(len(e) == k and len(a) > k and a[k][1] == e[-1][1] for e, a in zip(expected, every, strict=True))


def pairs(passages: list[Passage]) -> list[tuple[str, float]]:
    return [(p.id, p.score) for p in passages]


@pytest.mark.parametrize("k", [3, 10])
def test_bm25s_sharded_and_unsharded_both_rank_ties_in_corpus_order(tied, tmp_path, k):
    corpus, queries = tied
    build_index(corpus, tmp_path / "one", show_progress=False)
    build_index(corpus, tmp_path / "four", show_progress=False, shards=4)
    single, sharded = load_index(tmp_path / "one"), load_index(tmp_path / "four")
    try:
        backend = single.backend
        ids = backend.tokenizer.tokenize(queries, update_vocab=False, return_as="ids", show_progress=False)
        every = [backend.retriever.get_scores([t for t in q if t != backend._empty_id]) for q in ids]
        expected = [reference(s, k) for s in every]
        assert ties_at_k(expected, [reference(s, N) for s in every], k) >= 10  # the cut really falls in ties
        assert [pairs(hits) for hits in single.search(queries, k)] == expected
        assert [pairs(hits) for hits in sharded.search(queries, k)] == expected  # the same passages, order, scores
        assert sharded.search(queries, k) == single.search(queries, k)
        # one query at a time (no thread pool, another bm25s call) ranks the same
        assert [single.search([q], k)[0] for q in queries[:5]] == single.search(queries[:5], k)
    finally:
        single.close()
        sharded.close()


def _write_docstore(folder, rows) -> DocStore:
    with DocStoreWriter(folder) as writer:
        for r in rows:
            writer.add(Passage(f"p{r}", f"passage {r}"))
    return DocStore(folder)


def test_dense_flat_sharded_and_unsharded_both_rank_ties_in_corpus_order(tmp_path):
    faiss = pytest.importorskip("faiss")
    from agentic_verl.retrieval.backends.dense import DenseBackend
    from agentic_verl.retrieval.backends.faiss_indexes import MmapFlatIP

    rng = np.random.default_rng(0)
    # small integer vectors: every inner product is exact in float32 whatever the summation order, so duplicates
    # tie exactly in faiss (unsharded, in RAM) and in numpy (sharded, memory-mapped)
    distinct = rng.integers(-2, 3, size=(TEXTS, 8)).astype(np.float32)
    vectors = distinct[rng.permutation(np.repeat(np.arange(TEXTS), COPIES))]
    queries = rng.integers(-2, 3, size=(30, 8)).astype(np.float32)
    index = faiss.IndexFlatIP(8)
    index.add(vectors)
    single = DenseBackend(None, [(index, _write_docstore(tmp_path / "one", range(N)))], {})
    shards = []
    for s, (start, stop) in enumerate(shard_bounds(N, 3)):
        np.save(tmp_path / f"{s}.npy", vectors[start:stop])
        shards.append((MmapFlatIP(tmp_path / f"{s}.npy"), _write_docstore(tmp_path / f"s{s}", range(start, stop))))
    sharded = DenseBackend(None, shards, {})
    try:
        every = queries @ vectors.T
        for k in (1, 10):
            expected = [reference(s, k, keep=lambda _: True) for s in every]
            assert ties_at_k(expected, [reference(s, N, keep=lambda _: True) for s in every], k) >= 10
            assert [pairs(hits) for hits in single.search_vectors(queries, k)] == expected
            assert [pairs(hits) for hits in sharded.search_vectors(queries, k)] == expected
    finally:
        single.close()
        sharded.close()


def score_runs(passages: list[Passage], gap: float = 1e-5) -> list[int]:
    """A tie-group number per passage of Anserini's list: its tied scores were lowered by 1e-6 per place (lucene.py),
    so a group is a run of scores less than `gap` apart; groups are 1e-4 apart (4 decimals) or more."""
    groups = [0]
    for above, below in itertools.pairwise(passages):
        groups.append(groups[-1] + (above.score - below.score > gap))
    return groups[: len(passages)]


@pytest.mark.lucene
def test_lucene_ranks_ties_in_corpus_order(tied, tmp_path):
    corpus, queries = tied
    build_index(corpus, tmp_path / "lucene", "lucene", show_progress=False)
    index = load_index(tmp_path / "lucene")
    try:
        expected, cut_in_ties = [], 0
        for hits in index.search(queries, N):  # every passage that matches
            group = dict(zip((p.id for p in hits), score_runs(hits), strict=True))
            ranked = sorted(group, key=lambda pid: (group[pid], int(pid[1:])))  # ties in corpus order
            expected.append(ranked[:10])
            cut_in_ties += len(ranked) > 10 and group[ranked[9]] == group[ranked[10]]
        assert cut_in_ties >= 10  # the cut really falls inside ties
        assert [[p.id for p in hits] for hits in index.search(queries, 10)] == expected  # batched (batch_search)
        assert [[p.id for p in index.search([q], 10)[0]] for q in queries[:8]] == expected[:8]  # one at a time
        assert index.meta["collection_ids"].startswith("docstore rows zero-padded")
    finally:
        index.close()


class ReversedTies:
    """A backend whose top-k puts equal scores in reverse row order and, at the k-th tie, keeps the highest rows."""

    def __init__(self, scores):
        self.scores, self.depths = np.asarray(scores, dtype=np.float64), []

    def __call__(self, queries, depth):
        self.depths.append(depth)
        order = np.lexsort((-np.arange(len(self.scores)), -self.scores))[:depth]
        keep = self.scores[order] > 0  # like bm25s: score-0 passages are not returned
        return [(self.scores[order][keep], order[keep]) for _ in queries]


@pytest.mark.parametrize(
    ("scores", "k", "rows", "depths"),
    [
        # no tie at the k-th score: one search, one result past k
        ([5, 4, 3, 2, 1, 1], 2, [0, 1], [3]),
        # the k-th score ties past what was fetched: fetch twice as many until the tie ends
        ([5, 1, 1, 1, 1, 1, 1, 1, 0.5], 2, [0, 1], [3, 6, 9]),
        # ... also in the middle of the ranking; equal scores above the cut come in row order too
        ([2, 9, 2, 9, 2, 2, 1], 3, [1, 3, 0], [4, 7]),
        # every passage tied: up to the whole corpus
        ([1] * 7, 3, [0, 1, 2], [4, 7]),
        # k >= the corpus: one search for everything
        ([1, 3, 1], 5, [1, 0, 2], [3]),
        # the tie ends in passages the backend drops (score 0): what it returned is complete
        ([3, 1, 1, 1, 0, 0, 0, 0], 2, [0, 1], [3, 6]),
    ],
)
def test_exact_topk_fetches_past_a_tie_at_k_and_orders_ties_by_row(scores, k, rows, depths):
    backend = ReversedTies(scores)
    [(got_scores, got_rows)] = exact_topk(backend, n_queries=1, k=k, n=len(scores))
    assert got_rows.tolist() == rows
    assert got_scores.tolist() == [scores[r] for r in rows]
    assert backend.depths == depths


def test_exact_topk_searches_again_only_the_queries_whose_kth_score_ties():
    calls = []
    ranked = {0: ([9, 8, 7], [0, 1, 2]), 1: ([9, 5, 5], [2, 1, 0])}  # query 1 ties at k=2

    def search(queries, depth):
        calls.append((list(queries), depth))
        return [(np.array(ranked[q][0][:depth]), np.array(ranked[q][1][:depth])) for q in queries]

    got = exact_topk(search, n_queries=2, k=2, n=4)
    assert calls == [([0, 1], 3), ([1], 4)]
    assert [r.tolist() for _, r in got] == [[0, 1], [2, 0]]
