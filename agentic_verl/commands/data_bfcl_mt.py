"""`agentic-verl data bfcl-multi-turn`: generated BFCL multi-turn tasks (bfcl-eval's simulators in `.venv-bfcl`)
-> BFCL-layout entries, RL parquet for the `bfcl_multi_turn` loop, SFT parquet of the gold trajectories.

Registered under the `data` group by `agentic_verl/commands/data.py`.
"""

from __future__ import annotations

import json

from agentic_verl.data.bfcl_multi_turn.core import CLASSES, KINDS  # standard library only: cheap at CLI start

# argparse's help formatter folds the line breaks of this text into spaces
DESCRIPTION = """Builds tasks on bfcl-eval's own API simulators (in .venv-bfcl, `make bfcl-venv`): random initial
states, sampled chains of valid calls, user turns from templates, gold calls executed and judged valid by bfcl-eval's
multi-turn checker. Writes OUT/bfcl/ (bfcl-eval's data layout), OUT/trajectories.jsonl, OUT/rl.parquet (the
bfcl_multi_turn loop and reward), OUT/sft.parquet (the gold trajectories in the loop's token layout; needs
--tokenizer) and OUT/stats.json. A task that shares a user turn (equal, or a near copy: word 3-gram Jaccard >= 0.35),
a class state or its whole call sequence with one of BFCL's 800 multi-turn questions is dropped (counted by kind).
The same seed, count and kinds give byte-identical files."""


def register_subcommands(sub) -> None:
    p = sub.add_parser("bfcl-multi-turn", description=DESCRIPTION,
                       help="generated BFCL multi-turn tasks (never BFCL's own questions) -> BFCL files, RL and SFT "
                            "parquet")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--seed", type=int, required=True, help="generation seed (>= 0)")
    p.add_argument("--count", type=int, required=True, help="number of tasks (>= 1)")
    p.add_argument("--kinds", nargs="+", default=list(KINDS), metavar="KIND",
                   help=f"task kinds, taking turns ({', '.join(KINDS)}; default: all)")
    p.add_argument("--classes", nargs="+", default=None, metavar="CLASS",
                   help=f"the simulators tasks may use ({', '.join(CLASSES)}; default: all); a task uses one or two, "
                        "and each adds its function docs to the system prompt (2-6k tokens each)")
    sft = p.add_mutually_exclusive_group(required=True)
    sft.add_argument("--tokenizer", help="HF tokenizer folder of the model to train: writes OUT/sft.parquet")
    sft.add_argument("--no-sft", action="store_true", help="write no SFT parquet")
    p.add_argument("--sft-max-tokens", type=int, default=None,
                   help="leave SFT rows longer than this out (counted in stats.json; long-context rows reach ~90k)")
    p.add_argument("--endpoint", default=None,
                   help="optional: an OpenAI-compatible server whose model rewrites the templated user turns")
    p.add_argument("--model-name", default=None, help="the rewriting model's name (with --endpoint)")
    p.add_argument("--api-key-env", default=None, help="the variable holding the endpoint's token")
    p.add_argument("--cache-dir", default=None, help="judge reply cache (default OUT/judge_cache)")
    p.set_defaults(handler=_bfcl_multi_turn)


def _bfcl_multi_turn(args) -> int:
    from pathlib import Path

    from agentic_verl.data.bfcl_multi_turn.dataset import check_arguments, write_dataset

    check_arguments(args.seed, args.count, args.kinds, args.classes)  # a bad argument is an error before any work
    if (args.endpoint is None) != (args.model_name is None):
        raise ValueError("--endpoint and --model-name go together (the model that rewrites the user turns)")
    if args.sft_max_tokens is not None and (args.no_sft or args.sft_max_tokens < 1):
        raise ValueError(f"--sft-max-tokens must be >= 1 and comes with --tokenizer, got {args.sft_max_tokens}")
    if args.tokenizer is not None and not Path(args.tokenizer).is_dir():
        raise FileNotFoundError(f"--tokenizer {args.tokenizer} is not a folder")
    judge = None
    if args.endpoint is not None:
        import asyncio

        from agentic_verl.data.fcdr.judge import JudgeClient

        judge = JudgeClient(args.endpoint, args.model_name, api_key_env=args.api_key_env,
                            cache_dir=args.cache_dir or Path(args.out) / "judge_cache")
        asyncio.run(judge.check())  # EndpointError before any work when the server or model is not there
    stats = write_dataset(args.out, seed=args.seed, count=args.count, kinds=args.kinds, classes=args.classes,
                          tokenizer=args.tokenizer, sft_max_tokens=args.sft_max_tokens, judge=judge)
    print(json.dumps({k: stats[k] for k in ("tasks", "by_kind", "dropped_bfcl_overlap", "dropped_bfcl_overlap_by_kind",
                                            "dropped_no_valid_task")}))
    print(f"data bfcl-multi-turn: {stats['tasks']} tasks -> {args.out}"
          + (f" (SFT: {stats['sft']['rows']} rows, {stats['sft']['tokens']} tokens)" if "sft" in stats else ""))
    return 0
