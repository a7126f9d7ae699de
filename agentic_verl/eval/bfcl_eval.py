"""`agentic-verl eval bfcl`: a model on BFCL's single-turn categories, scored and aggregated as FunReason reports,
and on its multi-turn categories, scored by bfcl-eval's multi-turn checker (`bfcl_multi_turn.py`).

    result = evaluate(BFCLEvalSettings(model="outputs/funreason/hf", engine="vllm", categories=["all"]))
    print(format_paper_table(result), format_category_table(result), sep="\\n\\n")
    result = evaluate(BFCLEvalSettings(model="outputs/funreason_mt/hf", categories=["multi_turn"]))
    print(format_multi_turn_table(result))

Questions: BFCL v4's AST categories (simple_python / java / javascript, multiple, parallel, parallel_multiple and
their live_ counterparts) and irrelevance / live_irrelevance / live_relevance, read from the `bfcl-eval`
package (`bfcl_data.py`), the first `limit` of each category; or our own BFCL-format question files
(`questions`: the function-calling toy world's, or the multi-turn generator's held-out tasks), each file one
category, scored and aggregated the same way. Prompt: BFCL's prompting-mode system prompt over
the function docs as BFCL builds them (or this repository's FunReason training prompt), then the question's
turn, through the tokenizer's chat template. Generation: an in-process engine (`--model DIR`: `engine="vllm"`
or `"hf"`, `agentic_verl.generation`) or an OpenAI-compatible server (`--endpoint URL --model-name NAME`),
every question in flight at once (the engines batch). Defaults: greedy decoding (BFCL generates at temperature
0.001), up to 4096 new tokens (BFCL's cap).
Mode (`mode`): "prompting" (the default) is the above; "fc" is BFCL's FC mode: the question's turns without the
function list, the functions as OpenAI tool schemas through the chat template's `tools` (`bfcl_data.fc_request`),
rendered by our tokenizer (an `--endpoint` gets the rendered prompt as token ids, as in prompting mode), the
output's calls read by verl's ToolParser `tool_parser` (hermes: Qwen's `<tool_call>` JSON) and judged by the same
checker (`rewards.bfcl.native_calls`; a block the parser cannot read is `fc:<kind>`, counted like any error type).
Multi-turn questions in FC mode run the `bfcl_multi_turn` loop with `format: native` (`bfcl_multi_turn.py`).

Scoring: `agentic_verl.rewards.bfcl.ast_match` in its default mode, which gives the official bfcl-eval verdict
(the `bfcl_ast` training reward's default too), on the text after the last `</think>` (as BFCL's
reasoning-model handlers do). Aggregates, as FunReason (arXiv 2505.20192) reports BFCL:
- Non-Live AST: the unweighted mean of simple (itself the mean of simple_python / java / javascript),
  multiple, parallel and parallel_multiple;
- Live: accuracy over all questions of live_simple, live_multiple, live_parallel, live_parallel_multiple,
  live_irrelevance and live_relevance together (count-weighted): BFCL v3's "Live Overall Acc" (bfcl-eval up to
  2025.8.6.2), the definition FunReason's published rows use;
- Overall: (Non-Live AST + Live) / 2.
Beside them, Live AST (`live_ast`): count-weighted over the four live AST categories only, BFCL v4's "Live Overall
Acc" (bfcl-eval 2025.8.25 on, the V4 release, gorilla PR #1019: "Non-Live Acc and Live Acc score calculation now
excludes the Irrelevance/Relevance category scores"), which the installed bfcl-eval computes. `LIVE_DEFINITIONS`
names both; the paper table prints both, the published rows in the v3 column they match.
Multi-turn (`MULTI_TURN`, the group `multi_turn`; not in `all`, they need the BFCL environment server): each
question run by the `bfcl_multi_turn` agent loop against the server (started for the run in `.venv-bfcl`, or
`bfcl_env_url`), judged by bfcl-eval's multi-turn checker on it; the aggregate `multi_turn` is bfcl-eval's
Multi-Turn Overall Acc, the unweighted mean of the four categories, printed beside FunReason-MT's published rows.
An aggregate over only some of its categories (`--categories`, or a category left out) is marked partial.
Every failed question keeps BFCL's error type; the category table counts them. Beside these: accuracy over all
questions, the share of outputs cut at the token limit, and calls per question (the calls that decode, 0 when none
does), overall and per category. Any text a model writes gets a verdict (docs/evaluation.md, "Failure modes"); a
multi-turn question the BFCL environment failed gets `eval:env_error`, counted in `summary["env_failures"]`.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agentic_verl.eval.bfcl_data import (
    LIVE,
    MODES,
    MULTI_TURN,
    NON_LIVE_AST,
    PROMPTS,
    build_messages,
    fc_request,
    load_multi_turn_questions,
    load_question_files,
    load_questions,
    resolve_categories,
)
from agentic_verl.eval.output import write_run
from agentic_verl.eval.published import (
    FUNREASON_BFCL,
    FUNREASON_BFCL_DEFINITION,
    FUNREASON_MT_BFCL,
    FUNREASON_MT_BFCL_DEFINITION,
)
from agentic_verl.eval.settings_checks import check_counts
from agentic_verl.net import check_model_or_endpoint
from agentic_verl.rewards.bfcl import DecodeError, ast_match, decode, language_of
from agentic_verl.rewards.bfcl.native_calls import native_match, parse_native_calls

SIMPLE = ("simple_python", "simple_java", "simple_javascript")
LIVE_AST = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
# Live under each BFCL release's definition: summary key -> (column label, which bfcl-eval releases, categories).
# The change: gorilla CHANGELOG, BFCL V4 release (PR #1019, merged 2025-08-25, on PyPI from bfcl-eval 2025.8.25).
LIVE_DEFINITIONS = {
    "live": ("Live (BFCL v3)",
             "BFCL v3, bfcl-eval <= 2025.8.6.2: live AST + live_irrelevance + live_relevance, count-weighted", LIVE),
    "live_ast": ("Live AST (BFCL v4)",
                 "BFCL v4, bfcl-eval >= 2025.8.25: the four live AST categories only, count-weighted", LIVE_AST),
}
NON_LIVE_GROUPS = (("simple", SIMPLE), ("multiple", ("multiple",)), ("parallel", ("parallel",)),
                   ("parallel_multiple", ("parallel_multiple",)))  # fmt: skip
GENERATION_FAILED = "eval:generation_failed"


@dataclass
class BFCLEvalSettings:
    model: str | None = None  # an HF model folder, generated in-process by `engine`
    endpoint: str | None = None  # or an OpenAI-compatible server ...
    model_name: str | None = None  # ... serving this model name
    api_key_env: str | None = None  # the variable holding its bearer token (default OPENAI_API_KEY, if set); not the key
    tokenizer: str | None = None  # the model's tokenizer (default: model, or model_name)
    engine: str = "vllm"  # in-process engine: "vllm" | "hf" (agentic_verl.generation.ENGINES)
    categories: list[str] | None = None  # names or groups (bfcl_data.GROUPS); None: all (or the files' own)
    questions: list[str] = field(default_factory=list)  # our own BFCL-format question files, instead of bfcl-eval's
    limit: int | None = None  # first N questions of each category
    label: str = ""
    prompt: str = "bfcl"  # "bfcl": BFCL's prompting system prompt; "funreason": this repo's training prompt
    mode: str = "prompting"  # "prompting" | "fc": tools through the chat template, calls read by `tool_parser`
    tool_parser: str = "hermes"  # fc: the verl ToolParser registry name (hermes for Qwen)
    temperature: float = 0.0  # greedy (BFCL: 0.001)
    top_p: float = 1.0
    max_tokens: int = 4096  # new tokens per question, multi-turn: per step (BFCL caps each at 4096)
    concurrency: int = 64  # questions in flight (the in-process engines' batch size)
    # multi-turn
    bfcl_env_url: str | None = None  # a running `agentic-verl serve bfcl-env`; None: one is started for the run
    max_steps_per_turn: int = 20  # BFCL's MAXIMUM_STEP_LIMIT: more executed steps in a turn force-quit the question
    max_conversation_tokens: int = 131072  # a question's tokens after its first prompt (steps, tool outputs, turns)
    dtype: str = "auto"  # in-process engines: auto = bfloat16 on CUDA, float32 on CPU
    seed: int = 0

    def __post_init__(self):
        self.questions = [str(path) for path in self.questions]
        if self.questions and self.categories is not None:
            raise ValueError("give question files (--questions) or categories (--categories), not both: a question "
                             "file's category is in its name")
        self.categories = None if self.questions else resolve_categories(self.categories or ["all"])
        check_model_or_endpoint(self.model, self.endpoint, self.model_name)
        if self.prompt not in PROMPTS:
            raise ValueError(f"unknown prompt {self.prompt!r}; known: {', '.join(PROMPTS)}")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; known: {', '.join(MODES)}")
        if self.mode == "fc" and self.prompt != "bfcl":
            raise ValueError("--prompt picks the prompting-mode system prompt; FC mode has none (leave --prompt out)")
        check_counts(self, "max_tokens", "concurrency", "max_steps_per_turn", "max_conversation_tokens", "limit",
                     none_allowed=("limit",))

    @property
    def tokenizer_path(self) -> str:
        return self.tokenizer or self.model or self.model_name

    @property
    def multi_turn_categories(self) -> list[str]:
        return [c for c in self.categories or [] if c in MULTI_TURN]


def evaluate(settings: BFCLEvalSettings, engine=None) -> dict:
    """Generate an answer to every question and score it; returns {"settings", "summary", "categories",
    "questions"}. `engine`: anything with the engines' `generate`; default: built from the settings."""
    from agentic_verl.eval.qa_eval import _dtype, load_tokenizer

    # everything that can be wrong with the inputs fails here, before an engine starts (~1 min for vLLM)
    if settings.questions:
        questions, multi_turn = load_question_files(settings.questions, settings.limit)
    else:
        questions = load_questions(settings.categories, settings.limit)
        multi_turn = load_multi_turn_questions(settings.multi_turn_categories, settings.limit)
    if multi_turn and settings.bfcl_env_url is None:
        from agentic_verl.bfcl_env.venv import require_python

        require_python()  # the environment server runs in .venv-bfcl: FileNotFoundError naming `make bfcl-venv`
    tokenizer = load_tokenizer(settings.tokenizer_path)
    parser = None
    if settings.mode == "fc":
        from agentic_verl.agent_loops.native_format import tool_parser

        parser = tool_parser(settings.tool_parser, tokenizer)
        prompts = [fc_prompt_ids(tokenizer, q) for q in questions]
    else:
        prompts = [prompt_ids(tokenizer, build_messages(q, settings.prompt)) for q in questions]
    with _environment(settings, bool(multi_turn)) as env_url:
        def run(built) -> dict:
            return asyncio.run(_evaluate(settings, built, tokenizer, questions, prompts, multi_turn, env_url,
                                         parser))

        if engine is not None:
            return run(engine)
        if settings.endpoint is not None:
            from agentic_verl.generation.openai_endpoint import EndpointGenerationEngine

            return run(EndpointGenerationEngine(settings.endpoint, settings.model_name, tokenizer,
                                                default_max_tokens=settings.max_tokens,
                                                api_key_env=settings.api_key_env))
        from agentic_verl.generation import open_engine

        with open_engine(settings.engine, settings.model, dtype=_dtype(settings.dtype),
                         max_batch_size=settings.concurrency, seed=settings.seed) as built:
            return run(built)


@contextmanager
def _environment(settings: BFCLEvalSettings, needed: bool):
    """The BFCL environment server's URL for the run's multi-turn questions (None when there are none): the one
    given, once its /health answers, or one started here in `.venv-bfcl` and stopped when the run ends."""
    if not needed:
        yield None
        return
    if settings.bfcl_env_url is not None:
        from agentic_verl.bfcl_env.client import BfclEnvClient, BfclEnvError

        async def health():
            client = BfclEnvClient(settings.bfcl_env_url, timeout_s=10.0)
            try:
                await client.health()
            finally:
                await client.aclose()

        try:
            asyncio.run(health())
        except BfclEnvError as exc:
            raise ValueError(f"BFCL environment server {settings.bfcl_env_url} is not usable ({exc}); start one with "
                             "`agentic-verl serve bfcl-env`, or leave out --bfcl-env-url to have the run start one"
                             ) from None
        yield settings.bfcl_env_url
        return
    from agentic_verl.bfcl_env.process import BfclEnvProcess

    with BfclEnvProcess() as server:
        yield server.url


def prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    """The chat template's text with the generation prompt, tokenized without extra special tokens."""
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tokenizer.encode(text, add_special_tokens=False)


def fc_prompt_ids(tokenizer, question: dict) -> list[int]:
    """FC mode's prompt (`bfcl_data.fc_request`); a chat template that leaves the tools out is an error."""
    messages, tools, _ = fc_request(question)
    text = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    if any(f'"{tool["function"]["name"]}"' not in text for tool in tools):
        raise ValueError(f"the tokenizer's chat template does not render tools (question {question['id']}): FC "
                         "mode needs a model trained on native tool calls (Qwen2.5/Qwen3, Llama 3.x, ...); "
                         "use --mode prompting")
    return tokenizer.encode(text, add_special_tokens=False)


async def _evaluate(s: BFCLEvalSettings, engine, tokenizer, questions: list[dict], prompts: list[list[int]],
                    multi_turn: list[dict], env_url: str | None, parser=None) -> dict:
    from agentic_verl.eval.bfcl_multi_turn import ENV_FAILED, run_multi_turn

    check = getattr(engine, "check", None)
    if check is not None:
        await check()  # an endpoint that is down or serves another model fails here, before any question
    started = time.perf_counter()
    try:
        records = await _single_turn(s, engine, tokenizer, questions, prompts, parser) if questions else []
        if multi_turn:
            records += await run_multi_turn(s, engine, tokenizer, multi_turn, env_url)
    finally:
        aclose = getattr(engine, "aclose", None)
        if aclose is not None:
            await aclose()
    wall = time.perf_counter() - started
    result = summarize(records)
    result["summary"]["seconds"] = round(wall, 1)
    result["summary"]["env_failures"] = sum(r["error_type"] == ENV_FAILED for r in records)
    settings = asdict(s)
    settings["model"] = s.model or s.model_name
    return {"settings": settings, **result}


async def _single_turn(s: BFCLEvalSettings, engine, tokenizer, questions: list[dict], prompts: list[list[int]],
                       parser=None) -> list[dict]:
    sampling = {"temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens, "logprobs": False}
    if s.temperature > 0:
        sampling["seed"] = s.seed
    semaphore = asyncio.Semaphore(s.concurrency)

    async def one(question: dict, ids: list[int]) -> tuple[str, str, list[int]]:
        async with semaphore:
            try:
                out = await engine.generate(ids, dict(sampling), request_id=question["id"])
            except ValueError as exc:  # e.g. a prompt longer than the model's context: this question fails
                return "", f"{GENERATION_FAILED}: {exc}", []
        text = tokenizer.decode(out.token_ids, skip_special_tokens=True)
        return text, out.finish_reason, list(out.token_ids)

    outputs = await asyncio.gather(*(one(q, ids) for q, ids in zip(questions, prompts, strict=True)))
    if parser is None:
        records = score(questions, [text for text, _, _ in outputs])
    else:
        records = await score_native(questions, [(text, ids) for text, _, ids in outputs], parser)
    for record, ids, (_, finish, out_ids) in zip(records, prompts, outputs, strict=True):
        n_tokens = len(out_ids)
        record.update(prompt_tokens=len(ids), output_tokens=n_tokens, finish_reason=finish)
        if finish.startswith(GENERATION_FAILED):
            record.update(valid=False, error_type=GENERATION_FAILED, errors=[finish])
    return records


def score(questions: list[dict], outputs: list[str]) -> list[dict]:
    """One record per question: its output, the official-compatible verdict (`ast_match` defaults) and the number
    of calls the output decodes to."""
    records = []
    for question, output in zip(questions, outputs, strict=True):
        category = question["category"]
        verdict = ast_match(output, question["functions"], question["possible_answer"], category,
                            language_of(category))
        records.append({"id": question["id"], "category": category, "output": output, "valid": verdict["valid"],
                        "error_type": verdict["error_type"], "errors": verdict["errors"][:1],
                        "calls": count_calls(output, language_of(category))})
    return records


async def score_native(questions: list[dict], outputs: list[tuple[str, list[int]]], parser) -> list[dict]:
    """FC mode's `score`: each output's token ids read by `parser` (a verl ToolParser), the calls judged by
    `native_match`; `calls` counts the calls the parser read (0 on a failure)."""
    records = []
    for question, (text, ids) in zip(questions, outputs, strict=True):
        _, _, names = fc_request(question)
        parsed = await parse_native_calls(parser, ids, names)
        verdict = native_match(parsed, question["functions"], question["possible_answer"], question["category"])
        records.append({"id": question["id"], "category": question["category"], "output": text,
                        "valid": verdict["valid"], "error_type": verdict["error_type"],
                        "errors": verdict["errors"][:1], "calls": 0 if parsed.failure else len(parsed.calls)})
    return records


def count_calls(output: str, language: str = "python") -> int:
    """Calls in `output` as BFCL decodes it (after the last `</think>`); 0 when it does not decode.

    >>> count_calls("<think>two</think>\\n\\n[f(a=1), f(a=2)]"), count_calls("No function fits.")
    (2, 0)
    """
    try:
        calls = decode(output, language)
    except (DecodeError, RecursionError, MemoryError):
        return 0
    return len(calls) if isinstance(calls, list) else 0


def summarize(records: list[dict]) -> dict:
    """Per-category accuracy and error types, and the aggregates: {"summary", "categories", "questions"}."""
    categories = {}
    for category in dict.fromkeys(r["category"] for r in records):
        group = [r for r in records if r["category"] == category]
        errors = Counter(r["error_type"] for r in group if not r["valid"])
        categories[category] = {**_counts(group), "errors": dict(errors.most_common())}
    return {"summary": {**_counts(records), **aggregate(categories)}, "categories": categories, "questions": records}


def _counts(records: list[dict]) -> dict:
    """n, correct, accuracy, truncated (outputs cut at the token limit), truncation_rate, calls_per_question."""
    n = len(records)
    truncated = sum(r.get("finish_reason") == "length" for r in records)
    correct = sum(r["valid"] for r in records)
    return {"n": n, "correct": correct, "accuracy": correct / n if n else None, "truncated": truncated,
            "truncation_rate": truncated / n if n else None,
            "calls_per_question": sum(r.get("calls", 0) for r in records) / n if n else None}


def aggregate(categories: dict[str, dict]) -> dict:
    """FunReason's Non-Live AST, Live and Overall (fractions) from per-category {"n", "correct", "accuracy"}, and
    Live AST (BFCL v4's Live, `LIVE_DEFINITIONS`); each with the categories it used and `complete` (all of its
    categories evaluated); None when none was.

    >>> cats = {"simple_python": {"n": 4, "correct": 2, "accuracy": .5}, "multiple": {"n": 2, "correct": 2, "accuracy": 1.}}
    >>> result = aggregate(cats)
    >>> result["non_live"], result["non_live_complete"], result["live"], result["overall"]
    (0.75, False, None, None)
    >>> live = {"live_simple": {"n": 3, "correct": 3}, "live_irrelevance": {"n": 1, "correct": 0}}
    >>> aggregate(live)["live"], aggregate(live)["live_ast"]
    (0.75, 1.0)
    >>> mt = {"multi_turn_base": {"n": 4, "correct": 1, "accuracy": .25}, "multi_turn_miss_func": _one_of(2)}
    >>> aggregate(mt)["multi_turn"], aggregate(mt)["multi_turn_complete"]
    (0.375, False)
    """
    groups = []
    for _, members in NON_LIVE_GROUPS:
        scores = [categories[c]["accuracy"] for c in members if c in categories]
        if scores:
            groups.append(sum(scores) / len(scores))
    non_live = sum(groups) / len(groups) if groups else None
    non_live_used = [c for c in NON_LIVE_AST if c in categories]
    out = {"non_live": non_live, "non_live_complete": len(non_live_used) == len(NON_LIVE_AST),
           "non_live_categories": non_live_used}
    for key, (_, _, members) in LIVE_DEFINITIONS.items():
        used = [c for c in members if c in categories]
        n = sum(categories[c]["n"] for c in used)
        out.update({key: sum(categories[c]["correct"] for c in used) / n if n else None,
                    f"{key}_complete": len(used) == len(members), f"{key}_categories": used})
    both = non_live is not None and out["live"] is not None
    out["overall"] = (non_live + out["live"]) / 2 if both else None
    out["overall_complete"] = both and out["non_live_complete"] and out["live_complete"]
    multi_turn = [c for c in MULTI_TURN if c in categories]  # bfcl-eval's overall_accuracy_multi_turn: unweighted
    out.update({"multi_turn": sum(categories[c]["accuracy"] for c in multi_turn) / len(multi_turn) if multi_turn
                else None, "multi_turn_complete": len(multi_turn) == len(MULTI_TURN),
                "multi_turn_categories": multi_turn})
    return out


def _one_of(n: int) -> dict:
    return {"n": n, "correct": 1, "accuracy": 1 / n}


def _label(result: dict) -> str:
    return result["settings"].get("label") or Path(str(result["settings"]["model"])).name


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def format_paper_table(result: dict) -> str:
    """Non-Live AST / Live (BFCL v3) / Overall / Live AST (BFCL v4): FunReason's published rows (published under the
    v3 definition; nothing under v4), then ours (partial aggregates marked *), then what each Live means."""
    s = result["summary"]
    keys = ("non_live", "live", "overall", "live_ast")
    lines = ["| model | Non-Live AST | " + LIVE_DEFINITIONS["live"][0] + " | Overall | " + LIVE_DEFINITIONS["live_ast"][0]
             + " |", "|---|---|---|---|---|"]
    lines += [f"| {name} | {row[0]:.2f} | {row[1]:.2f} | {row[2]:.2f} | - |" for name, row in FUNREASON_BFCL.items()]
    cells = [_pct(s.get(key)) + ("" if s.get(key) is None or s[f"{key}_complete"] else "*") for key in keys]
    lines.append(f"| {_label(result)} (n={s['n']}) | " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"{label}: {meaning}." for label, meaning, _ in LIVE_DEFINITIONS.values()]
    lines.append(f"Published rows: {FUNREASON_BFCL_DEFINITION}; Overall = (Non-Live AST + Live (BFCL v3)) / 2.")
    lines.append(mode_line(result))
    if any(cell.endswith("*") for cell in cells):
        lines.append("\\* over the evaluated categories only (not all of the aggregate's categories)")
    return "\n".join(lines)


def mode_line(result: dict) -> str:
    """Which BFCL mode each row was measured in: ours from the settings; the published rows' sources
    (docs/methods.md: the FunReason paper, FunReason-MT's model card) do not say FC or prompting."""
    mode = result["settings"].get("mode", "prompting")
    how = "FC (tools through the chat template)" if mode == "fc" else "prompting (function list in the prompt)"
    return f"Mode: {_label(result)} in BFCL's {how} mode; published rows: mode not stated by their source."


def format_multi_turn_table(result: dict) -> str:
    """BFCL's multi-turn columns: Multi-Turn Overall (the unweighted mean of the four categories) and each category,
    FunReason-MT's published rows (BFCL v3's multi-turn overall only), then ours (partial overall marked *)."""
    s, categories = result["summary"], result["categories"]
    lines = ["| model | Multi-Turn Overall | " + " | ".join(c.removeprefix("multi_turn_") for c in MULTI_TURN) + " |",
             "|---|---|" + "---|" * len(MULTI_TURN)]
    lines += [f"| {name} | {overall:.2f} | " + " | ".join("-" for _ in MULTI_TURN) + " |"
              for name, overall in FUNREASON_MT_BFCL.items()]
    overall = _pct(s.get("multi_turn")) + ("" if s.get("multi_turn") is None or s["multi_turn_complete"] else "*")
    n = sum(categories[c]["n"] for c in MULTI_TURN if c in categories)
    cells = [_pct(categories[c]["accuracy"]) if c in categories else "-" for c in MULTI_TURN]
    lines.append(f"| {_label(result)} (n={n}) | {overall} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Multi-Turn Overall: the unweighted mean of the four categories (bfcl-eval's "
                 f"overall_accuracy_multi_turn). Published rows: {FUNREASON_MT_BFCL_DEFINITION}.")
    lines.append(mode_line(result))
    if overall.endswith("*"):
        lines.append("\\* over the evaluated categories only (not all four)")
    return "\n".join(lines)


def format_tables(result: dict) -> list[str]:
    """The tables of a run: FunReason's when it has single-turn categories, multi-turn's when it has multi-turn
    ones, then the per-category table."""
    categories = result["categories"]
    tables = []
    if any(c not in MULTI_TURN for c in categories):
        tables.append(format_paper_table(result))
    if any(c in MULTI_TURN for c in categories):
        tables.append(format_multi_turn_table(result))
    return [*tables, format_category_table(result)]


def format_category_table(result: dict, top: int = 3) -> str:
    """Per category, then all questions: n, accuracy, outputs cut at the token limit, calls per question, and the
    most frequent error types."""
    lines = ["| category | n | accuracy | truncated | calls/question | errors (most frequent) |",
             "|---|---|---|---|---|---|"]
    rows = [*result["categories"].items()]
    if len(rows) > 1:
        errors = Counter()
        for c in result["categories"].values():
            errors.update(c["errors"])
        rows.append(("all", {**result["summary"], "errors": dict(errors.most_common())}))
    for category, c in rows:
        errors = ", ".join(f"{name} {count}" for name, count in list(c["errors"].items())[:top]) or "-"
        more = len(c["errors"]) - top
        calls = c.get("calls_per_question")
        lines.append(f"| {category} | {c['n']} | {_pct(c.get('accuracy'))} | {c.get('truncated', 0)} | "
                     f"{'-' if calls is None else f'{calls:.2f}'} | {errors}"
                     + (f" (+{more} more types)" if more > 0 else "") + " |")
    return "\n".join(lines)


def write_result(result: dict, out_dir: str | Path) -> Path:
    """OUT/result.json (everything, per-question outputs included), OUT/table.md (`format_tables`), and bfcl-eval's
    own result and score files under OUT/result/ and OUT/score/ (`bfcl_layout.py`)."""
    from agentic_verl.eval.bfcl_layout import write_layout

    path = write_run(result, out_dir, *format_tables(result))
    write_layout(result, out_dir, _label(result))
    return path
