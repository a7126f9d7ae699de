"""The one tie rule of every backend: equal scores rank in corpus order (the lower docstore row first).

A backend's own top-k (bm25s's selection, faiss's heaps, Lucene's collector) orders equal scores its own way and,
when the k-th score is tied, keeps whichever tied passages its selection met first. Ranked by corpus position
instead, an index returns the same passages in the same order however it is searched: unsharded, or as shards
whose top-k lists are merged by (score, corpus position) (shards.merge_topk).

`exact_topk` makes any backend's search follow that rule: it asks for k + 1 results, and while the k-th score
equals the last one fetched (the tie may go on past what was fetched), for twice as many, up to every passage;
then it sorts what it has by (score descending, row ascending) and keeps k. A query without a tie at rank k costs
one extra result; a tie of t passages at rank k costs about log2(t / k) more searches for that query.

>>> import numpy as np
>>> scores = np.array([3.0, 2.0, 2.0, 2.0, 2.0, 1.0])  # rows 0-5; the backend below returns ties in reverse row order
>>> def search(queries, depth):
...     order = np.lexsort((-np.arange(6), -scores))[:depth]
...     return [(scores[order], order) for _ in queries]
>>> [(s.tolist(), r.tolist()) for s, r in exact_topk(search, n_queries=1, k=3, n=6)]
[([3.0, 2.0, 2.0], [0, 1, 2])]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Hits = tuple[np.ndarray, np.ndarray]  # (scores, rows) of one query
Search = Callable[[list[int], int], Sequence[Hits]]


def exact_topk(search: Search, n_queries: int, k: int, n: int) -> list[Hits]:
    """Per query, its k best (scores, rows), best first, equal scores in row order; exactly, whatever order the
    backend gives equal scores in.

    `search(queries, depth)` returns, for the query numbers in `queries`, each one's `depth` best (scores, rows)
    (fewer when the backend has no more: results it drops, e.g. score-0 passages or faiss's -1 padding, count as
    not found); `n` is the number of passages it searches, so depth never exceeds it."""
    k, n = int(k), int(n)
    if k < 1 or n < 1 or n_queries == 0:
        return [(np.zeros(0), np.zeros(0, dtype=np.int64)) for _ in range(n_queries)]
    found: list[Hits] = [(np.zeros(0), np.zeros(0, dtype=np.int64))] * n_queries
    pending, depth = list(range(n_queries)), min(k + 1, n)
    while pending:
        hits = search(pending, depth)
        more = []
        for query, (scores, rows) in zip(pending, hits, strict=True):
            scores, rows = np.asarray(scores), np.asarray(rows, dtype=np.int64)
            found[query] = (scores, rows)
            if len(rows) == depth < n and len(rows) > k and _kth_ties_last(scores, k):
                more.append(query)
        pending, depth = more, min(2 * depth, n)
    return [_best(scores, rows, k) for scores, rows in found]


def _kth_ties_last(scores: np.ndarray, k: int) -> bool:
    """Whether the k-th best score equals the lowest one fetched: passages not fetched may tie it too."""
    return bool(np.partition(-scores, k - 1)[k - 1] == -scores.min())


def _best(scores: np.ndarray, rows: np.ndarray, k: int) -> Hits:
    order = np.lexsort((rows, -scores))[:k]  # the last key first: best score, then the lower row
    return scores[order], rows[order]
