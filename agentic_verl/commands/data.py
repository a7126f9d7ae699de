"""`agentic-verl data ...`: data preparation jobs, one subcommand each.

The `data` group collects subcommands from the modules in `SUBCOMMAND_MODULES`; each has a
`register_subcommands(sub)` that adds its parsers to `sub` and sets `handler` (heavy imports inside handlers).
To add data jobs, write such a module and add one line here.
"""

from __future__ import annotations

import importlib

SUBCOMMAND_MODULES = (
    "agentic_verl.commands.data",  # wiki-split (below)
    "agentic_verl.commands.data_qa",  # toy-world, rag-r1, sft-trajectories
    "agentic_verl.commands.data_fc",  # fc (FunReason / BFCL function calling)
    "agentic_verl.commands.data_refine_fc",  # refine-fc (FunReason's FCDR)
    "agentic_verl.commands.data_gui",  # gui (ScreenSpot / GUI-Actor grounding data -> verl parquet)
    "agentic_verl.commands.data_bfcl_mt",  # bfcl-multi-turn (generated tasks on bfcl-eval's simulators)
)


def register(subparsers) -> None:
    parser = subparsers.add_parser("data", help="prepare corpora and datasets (wiki-split, ...)")
    sub = parser.add_subparsers(dest="data_command", metavar="DATA_COMMAND")
    for module in SUBCOMMAND_MODULES:
        importlib.import_module(module).register_subcommands(sub)
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def register_subcommands(sub) -> None:
    p = sub.add_parser("wiki-split", help="Wikipedia articles (JSONL) -> 100-word passages with the title prepended",
                       description="Input: JSONL (or .jsonl.gz), one article per line: {\"title\", \"text\"} "
                       "(WikiExtractor --json) or KILT {\"wikipedia_title\", \"text\": [paragraphs]}. Output: "
                       "the corpus JSONL {\"id\", \"contents\": \"Title\\ntext\"} that `index build` reads.")
    p.add_argument("--input", required=True, help="articles JSONL (.gz accepted)")
    p.add_argument("--out", required=True, help="output corpus JSONL")
    p.add_argument("--words", type=int, default=100, help="words per passage (default 100)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_wiki_split)


def _wiki_split(args) -> int:
    from agentic_verl.retrieval.wiki_split import split_wikipedia

    counts = split_wikipedia(args.input, args.out, words_per_passage=args.words, show_progress=not args.no_progress)
    print(f"wiki-split: {counts['articles']} articles ({counts['skipped_empty']} empty, skipped) -> "
          f"{counts['passages']} passages of up to {args.words} words in {args.out}")
    return 0
