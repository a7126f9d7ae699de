"""`python -m agentic_verl.demo.learn`: the steps of `make demo-learn` (recipes/demo/learn.sh) that are Python.

    python -m agentic_verl.demo.learn prepare --out outputs/demo_learn/task      # parquet, reward, SFT start
    python -m agentic_verl.demo.learn env --task outputs/demo_learn/task         # MODEL_PATH=... a line each
    python -m agentic_verl.demo.learn overrides --task outputs/demo_learn/task --lr 0 --steps 6
    python -m agentic_verl.demo.learn report --out outputs/demo_learn \\
        --run "GRPO, lr 5e-3=outputs/demo_learn/grpo/metrics.jsonl@400" \\
        --run "control, lr 0=outputs/demo_learn/control/metrics.jsonl@250"
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentic_verl.demo.learn", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("prepare", help="the task's RL parquet, AST-only reward config and SFT start under --out")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("env", help="the recipe's path variables for the task, NAME=VALUE a line")
    p.add_argument("--task", required=True, type=Path, help="the folder `prepare` wrote")
    p = sub.add_parser("overrides", help="the Hydra overrides of one GRPO run on the task, one a line")
    p.add_argument("--task", required=True, type=Path, help="the folder `prepare` wrote")
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--questions", type=int, default=32, help="questions a step")
    p.add_argument("--samples", type=int, default=4, help="samples a question (the GRPO group)")
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("report", help="the runs' reward per step -> OUT/rewards.json and OUT/report.html")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--run", action="append", required=True, metavar="LABEL=FILE_LOGGER_JSONL@SECONDS",
                   help="a GRPO run's verl file-logger output, the learning run first, then the control")
    p.add_argument("--seconds-total", type=float, default=None)
    p.add_argument("--note", default="", help="a line for the report: what was run and why")
    args = parser.parse_args(argv)
    if args.action == "prepare":
        from agentic_verl.demo.learning import prepare

        print(prepare(args.out, seed=args.seed).model)
    elif args.action == "env":
        from agentic_verl.demo.learning import grpo_env, task_files

        print("\n".join(f"{name}={value}" for name, value in grpo_env(task_files(args.task)).items()))
    elif args.action == "overrides":
        from agentic_verl.demo.learning import grpo_overrides, task_files

        print("\n".join(grpo_overrides(task_files(args.task), lr=args.lr, steps=args.steps,
                                       questions=args.questions, samples=args.samples, seed=args.seed)))
    else:
        from agentic_verl.demo.learning_report import learning_run, write_learning_report
        from agentic_verl.demo.summary import parse_spec

        runs = [learning_run(*parse_spec(text)) for text in args.run]
        html_path, json_path, table = write_learning_report(args.out, runs, args.seconds_total, args.note)
        print(table)
        print(f"\nreport: {html_path}\nreward per step: {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
