"""`agentic-verl data fc`: function-calling records (BFCL v4 entries, xLAM / APIGen JSON) -> verl SFT and RL parquet
for the FunReason recipes (recipes/funreason/).

Registered under the `data` group by `agentic_verl/commands/data.py`.
"""

from __future__ import annotations

import json


def register_subcommands(sub) -> None:
    p = sub.add_parser(
        "fc",
        help="function-calling records (BFCL v4, xLAM) -> SFT + RL parquet, eval questions excluded",
        description="Reads BFCL question files (JSON lines; answers from possible_answer/<same name> "
        "beside them), `bfcl:CATEGORY` (bfcl_eval's own files) or xLAM / APIGen JSON ({query, tools, "
        "answers}, optional reasoning field). Drops records whose id or normalised question text is an "
        "evaluation question, holds out a split, and writes OUT/sft_{train,val}.parquet (messages with "
        "the BFCL prompt and `<think>...</think>\\n\\n[calls]` targets), OUT/rl_{train,val}.parquet "
        "(the function_call loop + bfcl_ast reward) and OUT/stats.json.",
    )
    p.add_argument("--input", required=True, nargs="+", metavar="SPEC", help="files, or bfcl:CATEGORY")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--format", default="auto", choices=("auto", "bfcl", "xlam"), help="input format (default: detect)")
    p.add_argument(
        "--exclude-eval",
        nargs="+",
        default=["bfcl"],
        metavar="SPEC",
        help="evaluation questions no output row may share an id or normalised text with: `bfcl` (every "
        "single-turn BFCL v4 category, the default), bfcl:CATEGORY, files, or `none`",
    )
    p.add_argument("--val-fraction", type=float, default=0.02, help="share of distinct questions held out (0.02)")
    p.add_argument("--seed", type=int, default=0, help="seed of the held-out split")
    p.add_argument(
        "--missing-reasoning",
        choices=("drop", "template"),
        default="drop",
        help="records without a chain of thought: drop them from SFT (default) or give them a "
        "deterministic stand-in naming the calls (smoke runs)",
    )
    p.set_defaults(handler=_fc)


def _fc(args) -> int:
    from agentic_verl.data.fc_parquet import convert

    stats = convert(
        args.input,
        args.out,
        fmt=args.format,
        exclude_eval=args.exclude_eval,
        val_fraction=args.val_fraction,
        seed=args.seed,
        missing_reasoning=args.missing_reasoning,
    )
    files = ", ".join(f"{name} {info['rows']}" for name, info in stats["files"].items())
    print(
        f"data fc: {stats['read']} records read, {stats['kept']} kept ({stats['held_out_records']} held out) -> "
        f"{files} rows in {args.out}"
    )
    if stats["dropped"]:
        print("dropped: " + json.dumps(stats["dropped"]))
    return 0
