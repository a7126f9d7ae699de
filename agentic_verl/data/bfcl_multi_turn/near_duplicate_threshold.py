"""The measurement behind `near_duplicates.NEAR_THRESHOLD` (docs/funreason_mt.md has the numbers):

    python -m agentic_verl.data.bfcl_multi_turn.near_duplicate_threshold --seeds 0 1 --count 400

prints, as JSON, the distribution of the highest word 3-gram similarity to a BFCL turn of: the user turns of
generated tasks (`--count` task indices per seed, all kinds; needs `.venv-bfcl`); BFCL turns against the other
BFCL turns (BFCL's own variants of a question across its categories, and everything else); and BFCL turns edited
word by word (a word in 10 / 20 / 30 replaced, dropped or added, at least one edit), the light paraphrases the
filter must catch. Each distribution gives the share at or above each threshold of `SWEEP`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys

from agentic_verl.data.bfcl_multi_turn import bridge
from agentic_verl.data.bfcl_multi_turn.core import KINDS
from agentic_verl.data.bfcl_multi_turn.near_duplicates import NEAR_THRESHOLD, NGRAM, TurnIndex, shingles
from agentic_verl.data.bfcl_multi_turn.overlap import bfcl_turns
from agentic_verl.data.function_calling import normalize_text


def edited(text: str, rng: random.Random, rate: float, vocabulary: list[str]) -> str:
    """`text` with about `rate` of its words (at least one) replaced by, dropped for, or preceded by a word from
    `vocabulary`: a light paraphrase."""
    words = normalize_text(text).split()
    for _ in range(max(1, round(rate * len(words)))):
        at, how = rng.randrange(len(words)), rng.choice(("replace", "drop", "add"))
        if how == "replace":
            words[at] = rng.choice(vocabulary)
        elif how == "drop" and len(words) > 1:
            del words[at]
        else:
            words.insert(at, rng.choice(vocabulary))
    return " ".join(words)


SWEEP = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5)


def summary(values: list[float]) -> dict:
    ordered = sorted(values)

    def quantile(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"n": len(ordered), "median": quantile(0.5), "p95": quantile(0.95), "p99": quantile(0.99),
            "max": round(ordered[-1], 3),
            "percent_at_or_above": {str(t): round(100 * sum(v >= t for v in ordered) / len(ordered), 2) for t in SWEEP}}


def measure(bfcl_turns: list[tuple[str, str]], generated_turns: list[str], seed: int = 0) -> dict:
    """The distributions of the module docstring. `bfcl_turns`: (text, label) per BFCL user turn."""
    index = TurnIndex(bfcl_turns)
    texts = list(dict.fromkeys(text for text, _ in bfcl_turns))
    vocabulary = sorted({word for text in texts for word in normalize_text(text).split()})
    rng = random.Random(seed)
    result = {"bfcl_turns": len(bfcl_turns), "bfcl_distinct_turns": len(index), "ngram": NGRAM,
              "threshold": NEAR_THRESHOLD,
              "generated_vs_bfcl": summary([index.nearest(text)[0] for text in generated_turns])}
    others = []
    for text in texts:  # the nearest other text: BFCL's own variants of a turn (other categories) and the rest
        key = shingles(text)
        others.append(index.nearest(text, skip=lambda label, grams, k=key: grams == k)[0])
    result["bfcl_vs_other_bfcl_turns"] = summary(others)
    for rate in (0.1, 0.2, 0.3):
        result[f"bfcl_edited_{int(rate * 100)}pct_vs_bfcl"] = summary(
            [index.nearest(edited(text, rng, rate, vocabulary))[0] for text in texts])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentic_verl.data.bfcl_multi_turn.near_duplicate_threshold",
                                     description="measure turn similarity to BFCL's multi-turn questions")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--count", type=int, default=400, help="generated task indices per seed")
    args = parser.parse_args(argv)
    generated = []
    for seed in args.seeds:
        tasks, _, _ = bridge.generate(seed, 0, args.count, list(KINDS))
        generated += [m["content"] for task in tasks for turn in task["entry"]["question"] for m in turn]
    print(json.dumps({"seeds": args.seeds, "tasks_per_seed": args.count, "generated_turns": len(generated),
                      **measure(bfcl_turns(), generated)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
