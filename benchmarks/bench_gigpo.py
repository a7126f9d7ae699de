"""GiGPO's cost per training step against verl's GRPO, on batches shaped like long multi-turn rollouts.

    .venv/bin/python benchmarks/bench_gigpo.py [--repeats 5] [--json PATH]

Each batch: `prompts` uid groups of `n` trajectories, turns per trajectory long-tailed (1 + a geometric number,
mean `mean_turns`, capped at `max_turns`), each turn 40-400 policy tokens followed by 20-800 observation tokens,
cut to `response_length`; one final score per trajectory; each later turn's anchor state drawn from 4 per turn
position, so step groups form as they would on a shared environment. What is timed is the advantage step alone,
as verl's trainer runs it on the driver: verl's `compute_grpo_outcome_advantage` against our `gigpo_advantages`
(which includes that GRPO call), the median of `--repeats` runs after one warm-up. Single-threaded torch, CPU.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import numpy as np
import torch

from agentic_verl.training.gigpo import START, GigpoSettings, gigpo_advantages

SHAPES = [  # (prompts, n, response_length, mean_turns, max_turns)
    (32, 8, 4096, 3, 12),
    (64, 8, 16384, 6, 30),
    (128, 8, 16384, 10, 60),
]


def make_batch(prompts: int, n: int, length: int, mean_turns: int, max_turns: int, seed: int = 0):
    rng = random.Random(seed)
    rows = prompts * n
    rewards, mask = torch.zeros(rows, length), torch.zeros(rows, length)
    index, anchors, turns_total = [], [], 0
    for row in range(rows):
        turns = 1
        while turns < max_turns and rng.random() > 1 / mean_turns:
            turns += 1
        position, row_anchors = 0, []
        for turn in range(turns):
            if position >= length:
                break
            span = rng.randint(40, 400)
            mask[row, position:position + span] = 1
            row_anchors.append(START if turn == 0 else f"{turn}:{rng.randint(0, 3)}")
            position += span + rng.randint(20, 800)
        end = min(position, length) - 1
        rewards[row, end] = float(rng.random() < 0.5)
        turns_total += len(row_anchors)
        index.append(f"q{row // n}")
        anchors.append(row_anchors)
    return rewards, mask, np.array(index, dtype=object), anchors, turns_total / rows


def timed(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv=None) -> int:
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    settings = GigpoSettings()
    rows = []
    print("| trajectories | response tokens | turns/trajectory (mean) | GRPO (ms) | GiGPO (ms) | GiGPO / GRPO |")
    print("|---|---|---|---|---|---|")
    for prompts, n, length, mean_turns, max_turns in SHAPES:
        rewards, mask, index, anchors, turns = make_batch(prompts, n, length, mean_turns, max_turns)
        grpo = timed(lambda: compute_grpo_outcome_advantage(rewards, mask, index), args.repeats)  # noqa: B023
        gigpo = timed(lambda: gigpo_advantages(rewards, mask, index, anchors, settings), args.repeats)  # noqa: B023
        rows.append({"trajectories": prompts * n, "response_length": length, "turns": round(turns, 2),
                     "grpo_ms": round(grpo * 1e3, 1), "gigpo_ms": round(gigpo * 1e3, 1)})
        print(f"| {prompts * n} | {length} | {turns:.1f} | {grpo * 1e3:.1f} | {gigpo * 1e3:.1f} | "
              f"{gigpo / grpo:.1f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
