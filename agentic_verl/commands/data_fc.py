"""`agentic-verl data fc`: function-calling records (BFCL v4 entries, xLAM / APIGen JSON) -> verl SFT and RL parquet
for the FunReason recipes (recipes/funreason/); `agentic-verl data fc-toy-world`: invented APIs and BFCL-format
questions about them (the FunReason miniature, recipes/funreason/demo.sh).

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

    p = sub.add_parser(
        "fc-toy-world",
        help="invented APIs + BFCL-format questions (simple, multiple, parallel, irrelevance) with gold calls",
        description="Writes OUT/apis.json and, per split (train / dev / test, on disjoint APIs), "
        "OUT/<split>/BFCL_v4_<category>.json and possible_answer/ files that `data fc` and `eval bfcl "
        "--questions` read. The same seed and sizes give byte-identical files.",
    )
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--apis", type=int, nargs=3, default=[24, 8, 8], metavar=("TRAIN", "DEV", "TEST"),
                   help="APIs per split (default 24 8 8)")
    p.add_argument("--questions", type=int, nargs=3, default=[64, 12, 12], metavar=("TRAIN", "DEV", "TEST"),
                   help="questions per kind in each split (default 64 12 12)")
    p.set_defaults(handler=_fc_toy_world)


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


def _fc_toy_world(args) -> int:
    from agentic_verl.data.fc_toy_world import build_world, write_world

    world = build_world(args.seed, apis=tuple(args.apis), questions=tuple(args.questions))
    written = write_world(world, args.out)
    sizes = ", ".join(f"{split} {len(world.questions[split])} questions on {n} APIs"
                      for split, n in zip(("train", "dev", "test"), args.apis, strict=True))
    print(f"fc toy world (seed {args.seed}): {sizes} -> {args.out}")
    for split in ("train", "dev", "test"):
        print(f"  {split:5s} " + " ".join(str(path) for path in written[split]))
    return 0
