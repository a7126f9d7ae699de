"""Helpers for the sharding tests (imported by test_sharded.py and test_build.py)."""

from __future__ import annotations

import json
import random


def write_zipf_corpus(path, n=400, seed=0):
    """Passages over a skewed vocabulary (some empty), so queries share terms and many scores differ."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(300)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    with path.open("w") as out:
        for i in range(n):
            words = rng.choices(vocab, weights, k=rng.randint(0, 40))
            out.write(json.dumps({"id": f"p{i}", "contents": f"T{i}\n{' '.join(words)}"}) + "\n")
    queries = [" ".join(rng.choices(vocab, weights, k=rng.randint(1, 5))) for _ in range(60)]
    return path, queries + ["t17 w3", "the of", "unknownword"]

