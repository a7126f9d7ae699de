"""How close a user turn comes to BFCL's: word 3-gram Jaccard similarity, the nearest BFCL turn through an index,
and the measurement the threshold comes from. Standard library only.

A turn's shingles are the 3-word windows of its normalised text (`function_calling.normalize_text`: case,
punctuation and spacing ignored); a turn of fewer than three words is one shingle of its words. Two turns'
similarity is the Jaccard index of their shingle sets. `NEAR_THRESHOLD` (0.35) is the similarity from which a
generated turn counts as a copy of a BFCL turn, measured by `near_duplicate_threshold.py`
(docs/funreason_mt.md gives the numbers).

>>> round(similarity("Please move 'a.txt' into the temp folder.", "please MOVE a.txt into the temp folder"), 2)
1.0
>>> round(similarity("move a.txt into the temp folder", "copy a.txt into the temp folder"), 2)
0.67
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from agentic_verl.data.function_calling import normalize_text

NGRAM = 3
NEAR_THRESHOLD = 0.35  # the knee between generated turns and light paraphrases of BFCL's (near_duplicate_threshold)


def shingles(text: str) -> frozenset:
    words = normalize_text(text).split()
    if len(words) < NGRAM:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(zip(*(words[i:] for i in range(NGRAM)), strict=False))


def jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def similarity(first: str, second: str) -> float:
    return jaccard(shingles(first), shingles(second))


class TurnIndex:
    """BFCL's turn texts, searchable by shingle: `nearest(text)` is (similarity, label) of the most similar one."""

    def __init__(self, turns: Iterable[tuple[str, str]]):
        """`turns`: (text, label) pairs; the label names where a text comes from (e.g. `multi_turn_base_3 turn 1`)."""
        self._sets: list[frozenset] = []
        self._labels: list[str] = []
        self._postings: dict[tuple, list[int]] = defaultdict(list)
        seen: dict[frozenset, int] = {}
        for text, label in turns:
            grams = shingles(text)
            if not grams or grams in seen:
                continue
            seen[grams] = len(self._sets)
            for gram in grams:
                self._postings[gram].append(len(self._sets))
            self._sets.append(grams)
            self._labels.append(label)

    def __len__(self) -> int:
        return len(self._sets)

    def nearest(self, text: str, skip=None) -> tuple[float, str | None]:
        """(highest similarity, its label) over the indexed turns that share a shingle with `text` and that
        `skip(label, shingles)` does not exclude; (0.0, None) when none does."""
        grams = shingles(text)
        candidates = {i for gram in grams for i in self._postings.get(gram, ())}
        best = (0.0, None)
        for i in candidates:
            if skip is None or not skip(self._labels[i], self._sets[i]):
                score = jaccard(grams, self._sets[i])
                if score > best[0]:
                    best = (score, self._labels[i])
        return best
