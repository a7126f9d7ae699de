"""`agentic-verl data refine-fc`: FunReason's FCDR refinement of function-calling SFT samples (five checks, three
asked of a judge model behind any OpenAI-compatible endpoint; regeneration of samples that fail checks 4-5).

Registered under the `data` group by `agentic_verl/commands/data.py`; the work is `agentic_verl.data.fcdr`.
"""

from __future__ import annotations

from agentic_verl.commands._model_source import add_api_key_env
from agentic_verl.commands._settings_defaults import defaults_of


def register_subcommands(sub) -> None:
    from agentic_verl.data.fcdr.settings import RefineSettings

    default = defaults_of(RefineSettings)
    p = sub.add_parser("refine-fc", help="FunReason's FCDR: check function-calling SFT samples with a judge model "
                                         "and BFCL's AST match; drop, keep or regenerate them",
                       description="Checks per sample: (1) is the reference a call (judge; plain text is kept as "
                       "is), (2) can the tools solve the query (judge; else dropped), (3) does the reasoning lead to "
                       "the reference (judge; else dropped), (4) do the response's calls pass BFCL's AST match and "
                       "(5) is it `<think>...</think>\\n\\n[calls]` (rules; else the judge rewrites it and 3-5 run "
                       "again). Inputs: xLAM / APIGen JSON (a `response` field holds the reasoning model's output; "
                       "else `reasoning` + the reference calls) or BFCL files. Writes OUT/refined.jsonl (readable "
                       "by `data fc`), OUT/dropped.jsonl, OUT/report.json and prints the per-stage table. Judge "
                       "replies are cached on disk by model + request hash: a re-run sends no request it has sent.")
    p.add_argument("--input", required=True, nargs="+", metavar="SPEC", help="files, or bfcl:CATEGORY")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--endpoint", help="the judge's OpenAI-compatible server, e.g. http://127.0.0.1:8001")
    p.add_argument("--model-name", required=True, help="the name the server serves the judge model under")
    add_api_key_env(p)
    p.add_argument("--format", default="auto", choices=("auto", "bfcl", "xlam"), help="input format")
    p.add_argument("--limit", type=int, default=None, help="first N samples")
    p.add_argument("--cache-dir", default=None, help="judge reply cache (default OUT/judge_cache)")
    p.add_argument("--cache-only", action="store_true", help="answer from the cache only; a miss is an error")
    p.add_argument("--concurrency", type=int, default=default("concurrency"), help="judge requests in flight")
    p.add_argument("--max-retries", type=int, default=default("max_retries"))
    p.add_argument("--backoff", type=float, default=default("backoff_s"), help="seconds, doubled per retry")
    p.add_argument("--timeout", type=float, default=default("timeout_s"), help="seconds per request")
    p.add_argument("--judge-max-tokens", type=int, default=default("judge_max_tokens"))
    p.add_argument("--max-regenerations", type=int, default=default("max_regenerations"),
                   help="rewrites per failing sample (0: drop instead)")
    p.add_argument("--regenerate-max-tokens", type=int, default=default("regenerate_max_tokens"))
    p.add_argument("--regenerate-temperature", type=float, default=default("regenerate_temperature"))
    p.add_argument("--lenient-separator", action="store_true",
                   help="check 5: any whitespace after </think> (default: exactly a blank line, where SRML splits)")
    p.add_argument("--prompts", default=None, help="folder with is_call/solvable/reasoning/regenerate.yaml "
                                                   "(default: the packaged prompts)")
    p.set_defaults(handler=_refine_fc)


def _refine_fc(args) -> int:
    import sys

    from agentic_verl.data.fcdr.judge import EndpointError
    from agentic_verl.data.fcdr.pipeline import format_report, refine
    from agentic_verl.data.fcdr.settings import RefineSettings

    if args.endpoint is None and not args.cache_only:
        raise ValueError("--endpoint is required (or --cache-only to answer from a cache)")
    settings = RefineSettings(
        endpoint=args.endpoint, model_name=args.model_name, api_key_env=args.api_key_env, cache_dir=args.cache_dir,
        cache_only=args.cache_only,
        concurrency=args.concurrency, max_retries=args.max_retries, backoff_s=args.backoff, timeout_s=args.timeout,
        judge_max_tokens=args.judge_max_tokens, max_regenerations=args.max_regenerations,
        regenerate_max_tokens=args.regenerate_max_tokens, regenerate_temperature=args.regenerate_temperature,
        strict_separator=not args.lenient_separator, prompts=args.prompts, limit=args.limit, format=args.format)
    try:
        report = refine(args.input, args.out, settings)
    except EndpointError as exc:
        print(f"agentic-verl data refine-fc: error: {exc}", file=sys.stderr)
        return 2
    print(format_report(report))
    print(f"-> {args.out}/refined.jsonl, dropped.jsonl, report.json")
    return 0
