"""The ReTool-style miniature's Python steps (recipes/retool/demo.sh), on the task of agentic_verl/demo/retool_task.py,
run as `agentic-verl demo retool ...` (agentic_verl/commands/demo.py):

    agentic-verl demo retool prepare --out DIR --seed N --model MODEL   # parquets + SFT traces
    agentic-verl demo retool eval --model MODEL --questions DIR/test.parquet --out FILE.json
    agentic-verl demo retool report --seed N --run "before SFT=FILE.json@SECONDS" ...

`eval` writes {"accuracy", "tool_calls_per_question", "questions", "failures", "seconds"}; `report` prints one
Markdown table row per run (seed, stage, tool calls per question, accuracy, the evaluation's seconds and those of
the training stage that made the model, when given) and writes them as JSON.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from agentic_verl.demo import retool_task


def prepare_step(args) -> int:
    started = time.perf_counter()
    files = retool_task.prepare(Path(args.out), args.seed, args.model, n_train=args.train, n_test=args.test,
                                tool_config_path=args.tool_config)
    print(f"prepare: {files.train}, {files.test}, {files.sft} ({time.perf_counter() - started:.0f} s)")
    return 0


def eval_step(args) -> int:
    started = time.perf_counter()
    items = retool_task.load_problems(Path(args.questions))
    result = retool_task.evaluate(args.model, items, args.tool_config, response_length=args.response_length,
                                  prompt_length=args.prompt_length)
    result["seconds"] = round(time.perf_counter() - started, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"eval {args.model}: accuracy {result['accuracy']:.3f}, tool calls/question "
          f"{result['tool_calls_per_question']:.2f} on {result['questions']} questions; failures {result['failures']}")
    return 0


def report_step(args) -> int:
    rows = []
    for run in args.run:
        label, _, rest = run.partition("=")
        path, at, seconds = rest.rpartition("@")
        path = path if at else rest
        result = json.loads(Path(path).read_text())
        rows.append({"seed": args.seed, "stage": label, "tool_calls_per_question": result["tool_calls_per_question"],
                     "accuracy": result["accuracy"], "questions": result["questions"],
                     "eval_seconds": result.get("seconds"), "training_seconds": float(seconds) if at else None})
    print("| seed | stage | tool calls / question | accuracy | questions | eval s | training stage s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        training = "-" if r["training_seconds"] is None else f"{r['training_seconds']:.0f}"
        print(f"| {r['seed']} | {r['stage']} | {r['tool_calls_per_question']:.2f} | {r['accuracy']:.3f} | "
              f"{r['questions']} | {r['eval_seconds']} | {training} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"seed": args.seed, "rows": rows, "total_seconds": args.total_seconds},
                                             indent=1) + "\n")
    return 0
