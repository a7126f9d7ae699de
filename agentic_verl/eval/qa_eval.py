"""`agentic-verl eval qa`: a model as a RAG-R1 search agent on QA datasets, scored as the paper scores it.

    result = evaluate(QAEvalSettings(data=["nq/test.jsonl", "hotpotqa/dev.jsonl"], retrieval_url="http://127.0.0.1:8000",
                                     endpoint="http://127.0.0.1:8001", model_name="Qwen2.5-7B-Instruct",
                                     tokenizer="Qwen/Qwen2.5-7B-Instruct"))
    print(format_paper_table(result))

Every question runs through the `rag_r1` agent loop verl trains with (built from verl's registry,
`agent_loops/in_process.py`), generating with an in-process engine (`--model DIR`: `engine="vllm"` or `"hf"`) or
any OpenAI-compatible server (`--endpoint URL --model-name NAME`, `generation/openai_endpoint.py`). Questions run
concurrently (`concurrency`): the in-process engines batch them, a server batches them, the retrieval server
batches their searches.

Defaults are RAG-R1's evaluation: sampling at temperature 0.7, up to 1024 new tokens per generation, up to 5
retrievals (`max_turns=5`), top-3 passages, multi-query prompts, exact match with the paper's evaluation normaliser
(`rag_r1_eval`: also underscores and quotes to spaces). `deterministic()` gives the reproducible variant (greedy).

Reported per dataset (`--data-source`, else each record's data_source, else the file's name when it is one of the
known datasets, `nq.jsonl`, else its folder, FlashRAG's `nq/test.jsonl`; `dataset_names` refuses two files that
would be merged under one name unless they are splits of one dataset) and as their unweighted average: EM, F1, retrievals (searches executed) and seconds per question, answer rate, EM by hop count
when the data has hops, and a failure taxonomy: the loop's own categories (no_call, parse_error, bad_arguments,
timeout, tool_error, truncated_by_length; counted once per question that had it) plus `no_answer` (no <answer>),
`wrong_answer` (answered, EM 0) and `loop_error` (the loop raised on that question: a bug, logged with its
traceback; the other questions go on). A dead endpoint or retrieval server stops the evaluation with the reason. The paper table puts the published rows (published.py) beside ours.

With `dump_dir`, each trajectory is written by the loop's TrajectoryTrace and joined with a reward record, so
`agentic-verl view DUMP_DIR -o report.html` shows them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from agentic_verl.eval.output import write_run
from agentic_verl.eval.published import (
    QA_DATASET_LABELS,
    QA_DATASETS,
    RAG_R1_EM,
    RAG_R1_EM_AVG,
    canonical_dataset,
)
from agentic_verl.eval.settings_checks import check_counts, checked_paths
from agentic_verl.fail_fast import FailFastError
from agentic_verl.net import EndpointError, check_model_or_endpoint

logger = logging.getLogger(__name__)

# FlashRAG's split file names: `nq/dev.jsonl` and `nq/test.jsonl` are two splits of one dataset, named by the folder
SPLITS = ("train", "dev", "test", "val", "validation")
FAILURES = ("no_answer", "wrong_answer", "no_call", "parse_error", "bad_arguments", "timeout", "tool_error",
            "truncated_by_length", "loop_error")
LOOP_FAILURES = FAILURES[2:-1]  # the loop's own failure categories (agent_loops/trace.py)


@dataclass
class QAEvalSettings:
    data: list[str]
    retrieval_url: str
    model: str | None = None  # an HF model folder, generated in-process by `engine`
    endpoint: str | None = None  # or an OpenAI-compatible server ...
    model_name: str | None = None  # ... serving this model name
    api_key_env: str | None = None  # the variable holding its bearer token (default OPENAI_API_KEY, if set); not the key
    tokenizer: str | None = None  # the served model's tokenizer (default: model, or model_name)
    engine: str = "vllm"  # in-process engine: "vllm" | "hf" (agentic_verl.generation.ENGINES)
    label: str = ""
    limit: int | None = None  # first N questions of each file
    mode: str = "mq"
    temperature: float = 0.7  # RAG-R1's evaluation samples at 0.7; 0 = greedy
    top_p: float = 1.0
    max_turns: int = 5  # turns that may search (RAG-R1: up to 5 retrievals)
    max_tokens_per_turn: int = 1024  # new tokens per generation
    response_length: int = 8192  # token budget of a trajectory: generations + observations
    topk: int = 3
    concurrency: int = 16
    normalizer: str = "rag_r1_eval"
    dtype: str = "auto"  # in-process engines: auto = bfloat16 on CUDA, float32 on CPU
    seed: int = 0
    data_source: str | None = None  # override the dataset name (one data file only)
    dump_dir: str | None = None
    extra: dict = field(default_factory=dict)  # free-form notes kept in result.json

    def __post_init__(self):
        self.data = checked_paths(self.data, Path.is_file, none_given="no data file given",
                                  not_found="data file(s) not found")
        check_model_or_endpoint(self.model, self.endpoint, self.model_name)
        repeated = [p for i, p in enumerate(self.data) if Path(p).resolve() in {Path(q).resolve() for q in self.data[:i]}]
        if repeated:
            raise ValueError(f"data file(s) given twice: {', '.join(repeated)}")
        if self.data_source and len(self.data) > 1:
            raise ValueError("data_source overrides the dataset name of one file; got several files")
        check_counts(self, "max_tokens_per_turn", "response_length", "topk", "concurrency", "limit",
                     none_allowed=("limit",))

    @property
    def tokenizer_path(self) -> str:
        return self.tokenizer or self.model or self.model_name

    def deterministic(self) -> QAEvalSettings:
        """Greedy decoding: the same model, data and index give the same numbers."""
        return replace(self, temperature=0.0, top_p=1.0)


def evaluate(settings: QAEvalSettings, engine=None) -> dict:
    """Run every question of every file; returns {"settings", "summary", "datasets", "questions"}.

    `engine`: anything with the engines' `generate`; default: built from the settings (and closed afterwards)."""
    # everything that can be wrong with the inputs fails here, before an engine starts (~1 min for vLLM)
    check_retrieval_server(settings.retrieval_url)
    items = load_datasets(settings)
    tokenizer = load_tokenizer(settings.tokenizer_path)
    if engine is not None:
        return asyncio.run(_evaluate(settings, engine, tokenizer, items))
    if settings.endpoint is not None:
        from agentic_verl.generation.openai_endpoint import EndpointGenerationEngine

        endpoint = EndpointGenerationEngine(settings.endpoint, settings.model_name, tokenizer,
                                            default_max_tokens=settings.max_tokens_per_turn,
                                            api_key_env=settings.api_key_env)
        return asyncio.run(_evaluate(settings, endpoint, tokenizer, items))
    from agentic_verl.generation import open_engine

    with open_engine(settings.engine, settings.model, dtype=_dtype(settings.dtype),
                     max_batch_size=settings.concurrency, seed=settings.seed) as built:
        return asyncio.run(_evaluate(settings, built, tokenizer, items))


def check_retrieval_server(url: str) -> None:
    """Fail before the first question, not with a "Search failed" observation in every trajectory."""
    from agentic_verl.retrieval.client import health_problem

    problem = health_problem(url)
    if problem is not None:
        raise RuntimeError(f"retrieval server {url} is not reachable or not healthy ({problem}); start one with "
                           "`agentic-verl serve retrieval --index DIR`")


def _dtype(dtype: str) -> str:
    if dtype != "auto":
        return dtype
    import torch

    return "bfloat16" if torch.cuda.is_available() else "float32"


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path)
    except OSError as exc:
        raise ValueError(f"cannot load the tokenizer {path!r} ({exc}); pass --tokenizer with the model's "
                         "folder") from None


def load_datasets(s: QAEvalSettings) -> list[tuple[str, dict, dict]]:
    """(dataset, record, verl row) for every question, files in order; `limit` applies per file.

    Raises before any question runs when two files would be merged under one dataset name (`dataset_names`)."""
    from agentic_verl.data.qa_formats import load_questions
    from agentic_verl.data.rag_r1_parquet import to_rows

    loaded = []
    for path in s.data:
        records = load_questions(path, limit=s.limit)
        if s.data_source:  # an explicit name beats the records' own data_source
            records = [{**rec, "data_source": s.data_source} for rec in records]
        loaded.append((path, records))
    # only files with a question that carries no data_source are named by their file
    names = dataset_names([path for path, records in loaded if any(not rec.get("data_source") for rec in records)])
    items = []
    for path, records in loaded:
        rows = to_rows(records, split=Path(path).name.split(".")[0], data_source=names.get(path, "qa"), mode=s.mode)
        items += [(canonical_dataset(row["data_source"]), rec, row) for rec, row in zip(records, rows, strict=True)]
    return items


def file_dataset(path: str | Path) -> tuple[str, str]:
    """(dataset, "file" | "folder"): the file's stem when it names a known dataset (`nq.jsonl`, `hotpot_qa.json`),
    else its folder (FlashRAG's `<dataset>/<split>.jsonl`). Canonical names (`canonical_dataset`).

    >>> file_dataset("flashrag/nq.jsonl"), file_dataset("flashrag/hotpotqa/dev.jsonl")
    (('nq', 'file'), ('hotpotqa', 'folder'))
    """
    path = Path(path)
    stem = canonical_dataset(path.name.split(".")[0])
    folder = canonical_dataset(path.resolve().parent.name or "qa")
    if stem in QA_DATASETS and folder in QA_DATASETS and stem != folder:
        raise ValueError(f"{path}: its file name says dataset {stem!r}, its folder {folder!r}; rename one, or give "
                         "each record a data_source")
    return (stem, "file") if stem in QA_DATASETS else (folder, "folder")


def dataset_names(paths: list[str]) -> dict[str, str]:
    """{path: dataset} for files whose questions are named by the file (`file_dataset`). Two files may share a name
    only as different splits of one dataset (named by their folder, file names among SPLITS: `nq/dev.jsonl` +
    `nq/test.jsonl`, scored together); otherwise their questions would be merged into one score: ValueError."""
    named = {path: file_dataset(path) for path in paths}
    groups: dict[str, list[str]] = {}
    for path, (name, _) in named.items():
        groups.setdefault(name, []).append(path)
    for name, group in groups.items():
        stems = [Path(p).name.split(".")[0].lower() for p in group]
        splits = all(named[p][1] == "folder" for p in group) and set(stems) <= set(SPLITS)
        if len(group) > 1 and not (splits and len(set(stems)) == len(stems)):
            how = ", ".join(f"{p} (by its {named[p][1]})" for p in group)
            raise ValueError(
                f"these files would all be scored as one dataset {name!r}, their questions merged: {how}. Give each "
                "dataset its own name: FlashRAG's layout <dataset>/<split>.jsonl (nq/test.jsonl, hotpotqa/dev.jsonl), "
                f"a file named after a known dataset ({', '.join(QA_DATASETS)}: nq.jsonl), or a data_source field "
                "in every record; or evaluate one file at a time with --data-source NAME. Only different splits "
                f"of one dataset ({'/'.join(SPLITS)}.jsonl in folders of the same name) are scored together.")
    return {path: name for path, (name, _) in named.items()}


async def _evaluate(s: QAEvalSettings, engine, tokenizer, items: list[tuple[str, dict, dict]]) -> dict:
    from agentic_verl.agent_loops.in_process import (
        EngineServerManager,
        loop_trainer_config,
        make_agent_loop,
        model_type,
        sample_kwargs,
    )
    from agentic_verl.agent_loops.trace import TRACE_ID_FIELD, TRAJECTORY_DIR_ENV, append_record
    from agentic_verl.agent_loops.trace_reward import reward_record
    from agentic_verl.rewards.qa import exact_match, f1

    check = getattr(engine, "check", None)
    if check is not None:
        await check()  # an endpoint that is down or serves another model fails here, before any question
    server = EngineServerManager(engine)
    config = loop_trainer_config(s.response_length, custom={"rag_r1": {
        "retrieval_url": s.retrieval_url, "max_turns": s.max_turns, "max_tokens_per_turn": s.max_tokens_per_turn,
        "topk": s.topk, "mode": s.mode}})
    hf_type = model_type(s.tokenizer_path) if Path(s.tokenizer_path, "config.json").is_file() else None
    sampling = {"temperature": s.temperature, "top_p": s.top_p, "top_k": -1, "repetition_penalty": 1.0,
                "logprobs": False}
    if s.temperature > 0:
        sampling["seed"] = s.seed
    previous_dump = os.environ.get(TRAJECTORY_DIR_ENV)
    if s.dump_dir:
        os.environ[TRAJECTORY_DIR_ENV] = s.dump_dir  # the loop's TrajectoryTrace writes the trajectories
    semaphore = asyncio.Semaphore(s.concurrency)

    async def one(dataset: str, record: dict, row: dict) -> dict:
        loop = make_agent_loop("rag_r1", tokenizer=tokenizer, server_manager=server, trainer_config=config,
                               hf_model_type=hf_type)
        async with semaphore:
            started = time.perf_counter()
            try:
                out = await loop.run(dict(sampling), **sample_kwargs(row))
            except (EndpointError, FailFastError):
                raise  # the endpoint or the retrieval server is down: the evaluation stops with the reason
            except Exception as exc:  # a bug of the loop on this output: counted and logged, the others go on
                logger.exception("eval qa: the rag_r1 loop raised on question %s (counted as loop_error)", record["id"])
                return _loop_error(dataset, record, exc, time.perf_counter() - started)
            seconds = time.perf_counter() - started
        metrics = out.extra_fields.get("agent_metrics", {})
        info = out.extra_fields.get("rag_r1", {})
        # the answer the loop parsed from the policy's own turn (the invalid-action observation quotes the tags)
        answer, golds = info.get("answer"), list(record["golden_answers"])
        em, f1_score = exact_match(answer, golds, s.normalizer), f1(answer, golds, s.normalizer)
        failures = [name for name in LOOP_FAILURES if metrics.get(f"failure/{name}", 0) > 0]
        if answer is None:
            failures.insert(0, "no_answer")
        elif not em:
            failures.insert(0, "wrong_answer")
        if s.dump_dir and out.extra_fields.get(TRACE_ID_FIELD):
            append_record(reward_record(out.extra_fields[TRACE_ID_FIELD], em,
                                        {"em": em, "f1": f1_score, "gold": golds, "question": record["question"],
                                         "dataset": dataset, "eval": s.label}), s.dump_dir)
        return {
            "dataset": dataset, "id": str(record["id"]), "question": record["question"], "golden_answers": golds,
            "hops": record.get("hops"), "answer": answer, "em": em, "f1": round(f1_score, 4),
            "searches": int(metrics.get("num_searches", 0)), "turns": int(metrics.get("num_turns", 0)),
            "queries": info.get("queries", []), "policy_tokens": int(metrics.get("policy_tokens", 0)),
            "failures": failures, "seconds": round(seconds, 3),
        }

    started = time.perf_counter()
    try:
        results = await asyncio.gather(*(one(*item) for item in items))
    finally:
        if s.dump_dir:
            if previous_dump is None:
                os.environ.pop(TRAJECTORY_DIR_ENV, None)
            else:
                os.environ[TRAJECTORY_DIR_ENV] = previous_dump
        aclose = getattr(engine, "aclose", None)
        if aclose is not None:
            await aclose()
    wall = time.perf_counter() - started
    datasets = {name: summarize([r for r in results if r["dataset"] == name])
                for name in dict.fromkeys(r["dataset"] for r in results)}
    summary = summarize(list(results))
    summary.update(average_over_datasets(datasets))
    summary["seconds"] = round(wall, 1)
    settings = asdict(s)
    settings["model"] = s.model or s.model_name
    return {"settings": settings, "summary": summary, "datasets": datasets, "questions": list(results)}


def _loop_error(dataset: str, record: dict, exc: Exception, seconds: float) -> dict:
    """The verdict of a question whose loop raised: no answer, EM 0, and the exception it raised."""
    return {"dataset": dataset, "id": str(record["id"]), "question": record["question"],
            "golden_answers": list(record["golden_answers"]), "hops": record.get("hops"), "answer": None, "em": 0.0,
            "f1": 0.0, "searches": 0, "turns": 0, "queries": [], "policy_tokens": 0,
            "failures": ["no_answer", "loop_error"], "error": f"{type(exc).__name__}: {exc}"[:2000],
            "seconds": round(seconds, 3)}


def summarize(results: list[dict]) -> dict:
    """Means over questions, EM by hop count, and how many questions had each failure."""
    n = len(results)
    mean = (lambda key: round(sum(r[key] for r in results) / n, 4) if n else 0.0)  # noqa: E731
    by_hops = {}
    for hops in sorted({r["hops"] for r in results if r.get("hops") is not None}):
        group = [r for r in results if r.get("hops") == hops]
        by_hops[str(hops)] = {"n": len(group), "em": round(sum(r["em"] for r in group) / len(group), 4)}
    failures = Counter(f for r in results for f in r["failures"])
    return {
        "n": n, "em": mean("em"), "f1": mean("f1") if all("f1" in r for r in results) else None,
        "searches_per_question": mean("searches"), "turns_per_question": mean("turns"),
        "seconds_per_question": mean("seconds") if all("seconds" in r for r in results) else None,
        "answer_rate": round(sum(r["answer"] is not None for r in results) / n, 4) if n else 0.0,
        "policy_tokens_per_question": mean("policy_tokens"), "em_by_hops": by_hops,
        "failures": {name: failures.get(name, 0) for name in FAILURES},
    }


def average_over_datasets(datasets: dict[str, dict]) -> dict:
    """The paper's Avg: the unweighted mean of per-dataset EM (and F1), over the datasets evaluated."""
    if not datasets:
        return {"em_avg": 0.0, "f1_avg": 0.0, "datasets": []}
    k = len(datasets)
    return {"em_avg": round(sum(d["em"] for d in datasets.values()) / k, 4),
            "f1_avg": round(sum(d["f1"] or 0.0 for d in datasets.values()) / k, 4),
            "datasets": list(datasets)}


def _label(run: dict) -> str:
    return run["settings"].get("label") or Path(str(run["settings"]["model"])).name


def format_paper_table(result: dict) -> str:
    """EM per dataset in RAG-R1's column order (extra datasets after), the published rows above ours (when any of
    the paper's datasets was evaluated). The published Avg is over all seven, or, when fewer were evaluated, over
    the same columns; ours is over the datasets evaluated, and the header says how many."""
    ours = result["datasets"]
    columns = [d for d in QA_DATASETS if d in ours]
    columns += [d for d in ours if d not in QA_DATASETS]
    k = sum(d in ours for d in QA_DATASETS)
    avg_header = "Avg" if k == len(QA_DATASETS) else f"Avg ({len(ours)} evaluated)"
    header = "| model | " + " | ".join(QA_DATASET_LABELS.get(d, d) for d in columns) + f" | {avg_header} |"
    lines = [header, "|" + "---|" * (len(columns) + 2)]
    for name, row in (RAG_R1_EM if k else {}).items():  # none of the paper's datasets: nothing to compare
        avg = RAG_R1_EM_AVG[name] if k == len(QA_DATASETS) else _mean([row[d] for d in columns if d in row])
        lines.append(f"| {name} | " + " | ".join(f"{row[d]:.3f}" if d in row else "-" for d in columns)
                     + f" | {avg:.3f} |")
    lines.append(f"| {_label(result)} | " + " | ".join(f"{ours[d]['em']:.3f}" if d in ours else "-" for d in columns)
                 + f" | {result['summary']['em_avg']:.3f} |")
    return "\n".join(lines)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def format_dataset_table(result: dict) -> str:
    """Ours per dataset: n, EM, F1, retrievals and seconds per question, answer rate, main failures."""
    lines = ["| dataset | n | EM | F1 | retrievals/q | seconds/q | answered | no answer | wrong | truncated |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rows = [*result["datasets"].items(), ("all (question-weighted)", result["summary"])]
    for name, d in rows:
        f = d["failures"]
        lines.append(f"| {QA_DATASET_LABELS.get(name, name)} | {d['n']} | {d['em']:.3f} | {d['f1'] or 0:.3f} | "
                     f"{d['searches_per_question']:.2f} | {d['seconds_per_question'] or 0:.2f} | "
                     f"{d['answer_rate']:.2f} | {f['no_answer']} | {f['wrong_answer']} | "
                     f"{f['truncated_by_length']} |")
    return "\n".join(lines)


def format_table(runs: list[dict]) -> str:
    """One row per evaluation result (e.g. before SFT / after SFT / after RL on the same questions)."""
    header = ("| model | n | EM | F1 | retrievals/q | turns/q | answered | EM 1-hop | EM 2-hop | no answer | wrong | "
              "no call | truncated | seconds |")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for run in runs:
        s = run["summary"]
        hop = {h: f"{s['em_by_hops'][h]['em']:.3f}" if h in s["em_by_hops"] else "-" for h in ("1", "2")}
        f1_cell = f"{s['f1']:.3f}" if s.get("f1") is not None else "-"
        f = s["failures"]
        lines.append(f"| {_label(run)} | {s['n']} | {s['em']:.3f} | {f1_cell} | {s['searches_per_question']:.2f} | "
                     f"{s['turns_per_question']:.2f} | {s['answer_rate']:.2f} | {hop['1']} | {hop['2']} | "
                     f"{f['no_answer']} | {f['wrong_answer']} | {f['no_call']} | {f['truncated_by_length']} | "
                     f"{s.get('seconds', 0):.0f} |")
    return "\n".join(lines)


def write_result(result: dict, out_dir: str | Path) -> Path:
    """OUT/result.json (everything) and OUT/table.md (the paper table and ours per dataset)."""
    return write_run(result, out_dir, format_paper_table(result), format_dataset_table(result))
