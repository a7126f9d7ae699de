"""Throughput of every registered reward component, and BFCL AST match: ours vs the official checker.

    .venv/bin/python benchmarks/bench_rewards.py [--rounds 5] [--bfcl-cases 4000] [--no-official]

Rewards are whatever `agentic_verl.rewards.REWARDS` holds at run time; each known name gets a representative
input (unknown names are listed as skipped). For BFCL, ours (ast_match on the question objects, and the
bfcl_ast component on JSON-string ground truth as stored in parquet) and the official decode + check
(bfcl-eval in `.venv-bfcl`, created on first use) run over the same mix of gold and mutated outputs of every
AST and relevance category, ordered as verl scores a GRPO batch (the outputs of one question adjacent). Each
figure is the best of `--rounds` rounds (the machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "agreement"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentic_verl.rewards import REWARDS  # noqa: E402
from agentic_verl.rewards.bfcl import ast_match  # noqa: E402

THINK = "<think>The question asks for the capital; I know it.</think>"
# name -> (solution_str, ground_truth, extra_info): one representative sample per reward we know about.
REPRESENTATIVE = {
    "qa_em": (f"{THINK}<answer>Beijing</answer>", {"target": ["Beijing", "Peking"]}, None),
    "qa_f1": (f"{THINK}<answer>the city of Beijing</answer>", ["Beijing"], None),
    "qa_cover_em": (f"{THINK}<answer>Beijing, China</answer>", ["Beijing"], None),
    "format": ("<think>need capital</think><search> capital of China </search>", None, None),
    "gui_click_in_box": ("pyautogui.click(x=15, y=25)", [10, 20, 30, 40], None),
    "gui_gaussian_point": ("click(400, 300)", [150, 100, 250, 200], None),
    "gui_gaussian_coverage": ('<answer>{"bbox_2d": [140, 90, 260, 210]}</answer>', [150, 100, 250, 200], None),
}


def best_rate(fn, samples: list, rounds: int, min_seconds: float = 0.2) -> float:
    """Best samples/s over `rounds` rounds; each round repeats the samples for at least `min_seconds`."""
    for sample in samples:  # warm up caches the way an RL run would
        fn(sample)
    best = 0.0
    for _ in range(rounds):
        done, start = 0, time.perf_counter()
        while True:
            for sample in samples:
                fn(sample)
            done += len(samples)
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = max(best, done / elapsed)
    return best


def bench_registered(rounds: int, bfcl_samples: list[tuple]) -> None:
    print("| reward | samples/s | note |\n|---|---|---|")
    for name in REWARDS.names():
        fn = REWARDS.get(name)
        if name == "bfcl_ast":
            samples, note = bfcl_samples, "mixed BFCL gold/mutated outputs, JSON-string ground truth"
        elif name in REPRESENTATIVE:
            samples, note = [REPRESENTATIVE[name]], ""
        else:
            print(f"| {name} | - | skipped: no representative input known to this script |")
            continue
        rate = best_rate(lambda s, fn=fn: fn(s[0], s[1], s[2]), samples, rounds)
        print(f"| {name} | {rate:,.0f} | {note} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--bfcl-cases", type=int, default=4000, help="BFCL outputs in the timed mix")
    parser.add_argument("--no-official", action="store_true", help="skip the official checker (no .venv-bfcl)")
    args = parser.parse_args(argv)

    from _bfcl_cases import all_cases

    cases = all_cases(seed=0, per_question=12)
    random.Random(0).shuffle(cases)
    cases = cases[: args.bfcl_cases]
    # As verl scores a GRPO batch: the rollouts of one prompt are adjacent (stable sort keeps the mix inside).
    order = {qid: i for i, qid in enumerate(dict.fromkeys(case["id"] for case in cases))}
    cases.sort(key=lambda case: order[case["id"]])
    questions = {}
    for case in cases:  # parquet-like rows: ground truth and functions as JSON strings, one per question
        questions.setdefault(case["id"], (json.dumps(case["possible_answer"]), json.dumps(case["functions"])))
    bfcl_samples = [
        (case["output"], questions[case["id"]][0], {"functions": questions[case["id"]][1], "category": case["category"]})
        for case in cases
    ]
    bench_registered(args.rounds, bfcl_samples)

    print(f"\nBFCL AST match, {len(cases)} outputs (all AST + relevance categories, gold and mutated):\n")
    if args.no_official:
        rate = best_rate(lambda c: ast_match(c["output"], c["functions"], c["possible_answer"], c["category"]),
                         cases, args.rounds)  # fmt: skip
        print(f"ours: ast_match (decode + check): {rate:,.0f} samples/s (official skipped)")
        return 0
    from _bfcl_official import throughput
    from bfcl_agreement import official_input

    # Both in one process (the runner in .venv-bfcl imports our pure-stdlib module), alternating every 250
    # outputs, so both see the same load on a shared machine.
    try:
        rates = throughput([official_input(c) for c in cases], args.rounds)["samples_per_s"]
    except (OSError, subprocess.CalledProcessError) as exc:  # e.g. no PyPI to create .venv-bfcl
        print(f"official checker unavailable ({exc}); rerun after `make bfcl-venv`, or pass --no-official")
        return 0
    print("| implementation | samples/s (wall clock) | samples/s (CPU time) |\n|---|---|---|")
    print(f"| ours: ast_match (decode + check) | {rates['ours_wall']:,.0f} | {rates['ours_cpu']:,.0f} |")
    print(f"| official bfcl-eval: decode_ast + ast_checker | {rates['official_wall']:,.0f} | "
          f"{rates['official_cpu']:,.0f} |")
    print(f"\nours / official: {rates['ours_wall'] / rates['official_wall']:.2f}x wall clock, "
          f"{rates['ours_cpu'] / rates['official_cpu']:.2f}x CPU time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
