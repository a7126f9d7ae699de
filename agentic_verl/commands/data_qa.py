"""`agentic-verl data toy-world | rag-r1 | sft-trajectories | sft-steps`: QA data for the RAG-R1 recipes and the demo.

Registered under the `data` group by `agentic_verl/commands/data.py` (`register_subcommands(data_subparsers)`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agentic_verl.data.sft_steps import STYLES  # stdlib-only module: cheap at CLI start


def register_subcommands(sub) -> None:
    p = sub.add_parser("toy-world", help="a synthetic world: corpus.jsonl + train/test questions only it answers")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--entities", type=int, default=60, help="number of people (cities, companies, ... scale with it)")
    p.add_argument("--test-fraction", type=float, default=0.2, help="share of subject entities held out for test")
    p.add_argument("--dev-fraction", type=float, default=0.0,
                   help="share of subject entities held out as a dev split (dev.jsonl, for choosing settings), taken "
                        "from the training subjects; test.jsonl stays the same (default: no dev split)")
    p.set_defaults(handler=_toy_world)

    p = sub.add_parser("rag-r1", help="QA question files -> verl RL parquet for the rag_r1 agent loop")
    p.add_argument("--questions", required=True, nargs="+",
                   help="question files (FlashRAG JSONL, HotpotQA/2Wiki JSON, NQ-open, MuSiQue, TriviaQA); "
                        "each becomes OUT/<file stem>.parquet")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--mode", choices=("sq", "mq"), default="sq", help="single- or multi-query search prompt")
    p.add_argument("--format", default="auto", help="question file format (default: detect)")
    p.add_argument("--data-source", default=None, help="data_source column (default: the record's, else the folder name)")
    p.add_argument("--limit", type=int, default=None, help="keep the first N questions of each file")
    p.set_defaults(handler=_rag_r1)

    p = sub.add_parser("sft-trajectories",
                       help="correct search trajectories for toy-world questions -> SFT parquet (observations masked)")
    p.add_argument("--world", required=True, help="a toy-world folder (world.json, corpus.jsonl, train.jsonl)")
    p.add_argument("--questions", default=None, help="questions to write trajectories for (default: WORLD/train.jsonl)")
    p.add_argument("--retrieval-url", required=True, help="the /retrieve server the trajectories search")
    p.add_argument("--tokenizer", required=True, help="HF tokenizer folder (the model that will be trained)")
    p.add_argument("--out", required=True, help="output parquet file")
    p.add_argument("--mode", choices=("sq", "mq"), default="sq")
    p.add_argument("--topk", type=int, default=3)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--style", choices=STYLES, default="trajectory",
                   help="trajectory: one row per trajectory (default); steps: RAG-R1's step-level samples")
    p.add_argument("--decision-weight", type=_weight, default=1,
                   help="loss weight of the token that decides, in each turn after a search, whether to search "
                        "again or answer (default 1: no extra weight)")
    p.set_defaults(handler=_sft_trajectories)

    p = sub.add_parser("sft-steps",
                       help="RAG-R1 cold-start SFT samples from the correct trajectories of any trajectory dump",
                       description="Reads trajectory dumps (`eval qa --out DIR` writes DIR/trajectories/; training "
                       "writes AGENTIC_VERL_TRAJECTORY_DIR), keeps trajectories whose reward record scores at "
                       "least --min-reward, and cuts SFT rows (input_ids, loss_mask; retrieved documents never in "
                       "the loss). Writes OUT and OUT's .stats.json.")
    p.add_argument("dumps", nargs="+", metavar="DUMP", help="trajectory dump files (*.jsonl) or folders of them")
    p.add_argument("--out", required=True, help="output parquet file")
    p.add_argument("--style", choices=STYLES, default="steps",
                   help="steps: each search/answer turn with and without the earlier turns (RAG-R1, default); "
                        "trajectory: one row per trajectory, every turn in the loss")
    p.add_argument("--min-reward", type=float, default=1.0, help="keep trajectories scoring at least this")
    p.add_argument("--max-length", type=int, default=None, help="drop samples longer than this many tokens")
    p.add_argument("--agent", default="rag_r1", help="keep this agent loop's trajectories ('all': every loop)")
    p.add_argument("--tokenizer", default=None,
                   help="HF tokenizer folder; needed only for dumps written without decoded text")
    p.set_defaults(handler=_sft_steps)


def _weight(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return int(text)


def _toy_world(args) -> int:
    from agentic_verl.data.toy_world import build_world, write_world

    try:
        world = build_world(args.seed, n_people=args.entities, test_fraction=args.test_fraction,
                            dev_fraction=args.dev_fraction)
    except ValueError as e:
        raise SystemExit(f"data toy-world: {e}") from None
    paths = write_world(world, args.out)
    counts = " / ".join(f"{sum(q['split'] == s for q in world.questions)} {s}" for s in ("train", "dev", "test")
                        if s in paths)
    print(f"toy world (seed {args.seed}): {len(world.corpus)} passages, {counts} questions -> {Path(args.out)}")
    for name, path in paths.items():
        print(f"  {name:7s} {path}")
    return 0


def _rag_r1(args) -> int:
    from agentic_verl.data.qa_formats import load_questions
    from agentic_verl.data.rag_r1_parquet import default_data_source, to_rows, write_parquet

    for questions in args.questions:
        records = load_questions(questions, fmt=args.format, limit=args.limit)
        split = Path(questions).name.split(".")[0]
        source = args.data_source or default_data_source(questions)
        rows = to_rows(records, split=split, data_source=source, mode=args.mode)
        path = write_parquet(rows, Path(args.out) / f"{split}.parquet")
        print(f"{questions}: {len(rows)} rows ({args.mode}) -> {path}")
    return 0


def _sft_trajectories(args) -> int:
    from agentic_verl.data.sft_trajectories import write_sft_parquet

    world = Path(args.world)
    stats = write_sft_parquet(
        world_dir=world, questions=Path(args.questions) if args.questions else world / "train.jsonl",
        retrieval_url=args.retrieval_url, tokenizer=args.tokenizer, out=Path(args.out), mode=args.mode,
        topk=args.topk, limit=args.limit, seed=args.seed, style=args.style, decision_weight=args.decision_weight)
    print(json.dumps(stats, indent=1))
    return 0


def _sft_steps(args) -> int:
    from agentic_verl.data.sft_steps import write_sft_steps

    stats = write_sft_steps(args.dumps, Path(args.out), style=args.style, min_reward=args.min_reward,
                            agent=None if args.agent == "all" else args.agent, max_length=args.max_length,
                            tokenizer=args.tokenizer)
    print(json.dumps(stats, indent=1))
    return 0
