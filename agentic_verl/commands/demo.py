"""`agentic-verl demo summary`: one demo run's stages and training -> OUT/summary.json and OUT/summary.md;
`agentic-verl demo seeds`: several runs (seeds) -> a row per seed, the mean gain beside one question's worth,
OUT/seeds.md and OUT/seeds.html (plots across seeds). docs/demo_report.md.
`agentic-verl demo learn ACTION`: the steps of `make demo-learn` (recipes/demo/learn.sh) that are Python;
`agentic-verl demo retool ACTION`: those of `make demo-retool` (recipes/retool/demo.sh; agentic_verl/demo/retool_steps.py).

    agentic-verl demo summary --method rag_r1 --seed 0 --out outputs/demo \\
        --stage "before SFT=outputs/demo/eval/0_base/result.json@81" \\
        --stage "after SFT=outputs/demo/eval/1_sft/result.json@260" \\
        --training "GRPO=outputs/demo/logs/grpo_metrics.jsonl@480" \\
        --stage "after GRPO=outputs/demo/eval/2_grpo/result.json@75"
    agentic-verl demo seeds outputs/demo_seeds          # seed*/summary.json inside
    agentic-verl demo learn prepare --out outputs/demo_learn/task      # parquet, reward, SFT start
    agentic-verl demo learn env --task outputs/demo_learn/task         # MODEL_PATH=... a line each
    agentic-verl demo learn overrides --task outputs/demo_learn/task --lr 0 --steps 6
    agentic-verl demo learn report --out outputs/demo_learn \\
        --run "GRPO, lr 5e-3=outputs/demo_learn/grpo/metrics.jsonl@400" \\
        --run "control, lr 0=outputs/demo_learn/control/metrics.jsonl@250"
"""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    from agentic_verl.demo.methods import METHODS

    parser = subparsers.add_parser("demo", help="demo summaries: a table per run (summary) and across seeds (seeds)")
    sub = parser.add_subparsers(dest="demo_command", metavar="ACTION")
    p = sub.add_parser("summary", help="one run: each stage's evaluation result.json (+ training logs) -> "
                                       "OUT/summary.json, OUT/summary.md and the table",
                       description="A stage is LABEL=RESULT_JSON@SECONDS: an `agentic-verl eval qa|bfcl|screenspot` "
                       "result.json (the kind is read from its shape), stages in their order, the first one being "
                       "'before'. A training is LABEL=FILE_LOGGER_JSONL@SECONDS: verl's file-logger output "
                       "(VERL_FILE_LOGGER_PATH) of a GRPO run, read for reward, response length and tool calls per "
                       "step.")
    p.add_argument("--method", required=True, choices=tuple(METHODS))
    p.add_argument("--seed", required=True, type=int)
    p.add_argument("--out", required=True, help="folder for summary.json and summary.md")
    p.add_argument("--stage", action="append", required=True, metavar="LABEL=RESULT_JSON@SECONDS",
                   help="an evaluated stage, in order (repeat)")
    p.add_argument("--training", action="append", default=[], metavar="LABEL=FILE_LOGGER_JSONL@SECONDS",
                   help="a GRPO run's verl file-logger output (repeat)")
    p.add_argument("--timing", action="append", default=[], metavar="LABEL=SECONDS",
                   help="a stage with a duration and nothing to read, e.g. SFT=240 (repeat)")
    p.add_argument("--seconds-total", type=float, default=None,
                   help="the run's wall time (default: the sum of the stages', trainings' and timings' seconds)")
    p.set_defaults(handler=_summary)
    p = sub.add_parser("seeds", help="several runs: a row per seed, the mean gain beside one question's worth, "
                                     "OUT/seeds.md and OUT/seeds.html")
    p.add_argument("inputs", nargs="+", help="a folder with seed*/summary.json, run folders, or summary.json files")
    p.add_argument("--out", default=None, help="folder for seeds.md and seeds.html (default: the one input folder "
                                               "holding seed*/)")
    p.add_argument("--method", choices=tuple(METHODS), default=None, help="fail unless every run is this method's")
    p.set_defaults(handler=_seeds)
    _register_learn(sub.add_parser("learn", help="the Python steps of `make demo-learn`: prepare, env, overrides, "
                                                 "report"))
    _register_retool(sub.add_parser("retool", help="the Python steps of `make demo-retool`: prepare, eval, report"))
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def _register_retool(parser) -> None:
    from agentic_verl.demo import retool_steps
    from agentic_verl.demo.retool_task import PROMPT_LENGTH, RESPONSE_LENGTH, TOOL_CONFIG

    sub = parser.add_subparsers(dest="retool_action", metavar="ACTION", required=True)
    tool = {"default": TOOL_CONFIG, "help": "the tool YAML (verl's tool_config_path)"}
    p = sub.add_parser("prepare", help="train/test RL parquets and the SFT traces")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", required=True, help="the model (folder) whose tokenizer the traces are for")
    p.add_argument("--train", type=int, default=64)
    p.add_argument("--test", type=int, default=32)
    p.add_argument("--tool-config", **tool)
    p.set_defaults(handler=retool_steps.prepare_step)
    p = sub.add_parser("eval", help="greedy runs of the loop on held-out questions")
    p.add_argument("--model", required=True)
    p.add_argument("--questions", required=True, help="an RL parquet written by prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--tool-config", **tool)
    p.add_argument("--prompt-length", type=int, default=PROMPT_LENGTH)
    p.add_argument("--response-length", type=int, default=RESPONSE_LENGTH)
    p.set_defaults(handler=retool_steps.eval_step)
    p = sub.add_parser("report", help="the table of a seed's evaluations")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--run", action="append", default=[], metavar="LABEL=EVAL_JSON[@SECONDS]",
                   help="an evaluation, with the seconds of the training stage that made its model (repeat)")
    p.add_argument("--out")
    p.add_argument("--total-seconds", type=float)
    p.set_defaults(handler=retool_steps.report_step)


def _register_learn(parser) -> None:
    sub = parser.add_subparsers(dest="learn_action", metavar="ACTION", required=True)
    p = sub.add_parser("prepare", help="the task's RL parquet, AST-only reward config and SFT start under --out")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(handler=_learn_prepare)
    p = sub.add_parser("env", help="the recipe's path variables for the task, NAME=VALUE a line")
    p.add_argument("--task", required=True, type=Path, help="the folder `prepare` wrote")
    p.set_defaults(handler=_learn_env)
    p = sub.add_parser("overrides", help="the Hydra overrides of one GRPO run on the task, one a line")
    p.add_argument("--task", required=True, type=Path, help="the folder `prepare` wrote")
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--questions", type=int, default=32, help="questions a step")
    p.add_argument("--samples", type=int, default=4, help="samples a question (the GRPO group)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(handler=_learn_overrides)
    p = sub.add_parser("report", help="the runs' reward per step -> OUT/rewards.json and OUT/report.html")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--run", action="append", required=True, metavar="LABEL=FILE_LOGGER_JSONL@SECONDS",
                   help="a GRPO run's verl file-logger output, the learning run first, then the control")
    p.add_argument("--seconds-total", type=float, default=None)
    p.add_argument("--note", default="", help="a line for the report: what was run and why")
    p.set_defaults(handler=_learn_report)


def _learn_prepare(args) -> int:
    from agentic_verl.demo.learning import prepare

    print(prepare(args.out, seed=args.seed).model)
    return 0


def _learn_env(args) -> int:
    from agentic_verl.demo.learning import grpo_env, task_files

    print("\n".join(f"{name}={value}" for name, value in grpo_env(task_files(args.task)).items()))
    return 0


def _learn_overrides(args) -> int:
    from agentic_verl.demo.learning import grpo_overrides, task_files

    print("\n".join(grpo_overrides(task_files(args.task), lr=args.lr, steps=args.steps, questions=args.questions,
                                   samples=args.samples, seed=args.seed)))
    return 0


def _learn_report(args) -> int:
    from agentic_verl.demo.learning_report import learning_run, write_learning_report
    from agentic_verl.demo.summary import parse_spec

    runs = [learning_run(*parse_spec(text)) for text in args.run]
    html_path, json_path, table = write_learning_report(args.out, runs, args.seconds_total, args.note)
    print(table)
    print(f"\nreport: {html_path}\nreward per step: {json_path}")
    return 0


def _summary(args) -> int:
    from agentic_verl.demo.summary import build_summary, format_run_table, parse_spec, parse_timing, write_summary

    stages = [parse_spec(text) for text in args.stage]
    training = [parse_spec(text) for text in args.training]
    timings = [parse_timing(text) for text in args.timing]
    summary = build_summary(args.method, args.seed, stages, training, seconds_total=args.seconds_total,
                            timings=timings)
    json_path, md_path = write_summary(summary, args.out)
    print(format_run_table(summary))
    print(f"\nwrote {json_path}, {md_path}")
    return 0


def _seeds(args) -> int:
    from agentic_verl.demo.page import render_seeds_page
    from agentic_verl.demo.seeds import format_seeds_markdown, load_summaries

    out = args.out
    if out is None:
        folder = Path(args.inputs[0])
        if len(args.inputs) != 1 or not folder.is_dir() or (folder / "summary.json").exists():
            raise ValueError("--out is needed unless the one input is a folder with seed*/summary.json")
        out = folder
    summaries = load_summaries(args.inputs, method=args.method)
    markdown = format_seeds_markdown(summaries)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "seeds.md").write_text(markdown + "\n", encoding="utf-8")
    (out / "seeds.html").write_text(render_seeds_page(summaries), encoding="utf-8")
    print(markdown)
    print(f"\nwrote {out / 'seeds.md'}, {out / 'seeds.html'}")
    return 0
