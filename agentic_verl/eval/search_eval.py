"""Evaluate a model as a RAG-R1 search agent: the real `rag_r1` agent loop, in-process, on an HF model.

    result = evaluate(EvalSettings(model="outputs/demo/sft_hf", questions="world/test.jsonl",
                                   retrieval_url="http://127.0.0.1:8000"))
    print(format_table([result]))

Each question runs through the same agent-loop class verl trains with (instantiated from verl's registry, see
loop_runner.py), generating in-process with `HFGenerationEngine` (`engine="hf"`, transformers) or
`VLLMGenerationEngine` (`engine="vllm"`, vLLM's AsyncLLM); concurrent trajectories are batched. Scored with the QA
reward's exact match (`agentic_verl.rewards.qa`). Reported per run: EM, searches per question, turns per question,
answer rate, EM by hop count, and a failure taxonomy: the loop's own categories (no_call, parse_error,
bad_arguments, timeout, tool_error, truncated_by_length; counted once per question that had it) plus
`no_answer` (the trajectory ended without an <answer>) and `wrong_answer` (answered, EM 0).

With `dump_dir`, every trajectory is written by the loop's TrajectoryTrace and joined with a reward record, so
`agentic-verl view DUMP_DIR -o report.html` shows them.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

FAILURES = ("no_answer", "wrong_answer", "no_call", "parse_error", "bad_arguments", "timeout", "tool_error",
            "truncated_by_length")


@dataclass
class EvalSettings:
    model: str
    questions: str
    retrieval_url: str
    label: str = ""
    limit: int | None = None
    mode: str = "sq"
    temperature: float = 0.0  # 0 = greedy; RAG-R1's evaluation samples at 0.7
    top_p: float = 1.0
    max_turns: int = 4
    max_tokens_per_turn: int = 128
    response_length: int = 1024
    topk: int = 3
    batch_size: int = 16
    dtype: str = "float32"
    engine: str = "hf"  # generation engine: "hf" (transformers) | "vllm" (loop_runner.ENGINES)
    seed: int = 0
    data_source: str | None = None
    dump_dir: str | None = None


def evaluate(settings: EvalSettings, engine=None) -> dict:
    """Run every question; returns {"settings", "summary", "questions": [...]} (see module docstring).

    `engine`: an object with HFGenerationEngine's `generate`; default: `settings.engine` built from `settings.model`
    (and closed afterwards)."""
    if engine is not None:
        return asyncio.run(_evaluate(settings, engine))
    from agentic_verl.eval.loop_runner import open_engine

    with open_engine(settings.engine, settings.model, dtype=settings.dtype, max_batch_size=settings.batch_size,
                     seed=settings.seed) as built:
        return asyncio.run(_evaluate(settings, built))


async def _evaluate(s: EvalSettings, engine) -> dict:
    from transformers import AutoTokenizer

    from agentic_verl.agent_loops.trace import TRACE_ID_FIELD, TRAJECTORY_DIR_ENV, append_record
    from agentic_verl.agent_loops.trace_reward import reward_record
    from agentic_verl.data.qa_formats import load_questions
    from agentic_verl.data.rag_r1_parquet import default_data_source, to_rows
    from agentic_verl.eval.loop_runner import (
        EngineServerManager,
        loop_trainer_config,
        make_agent_loop,
        model_type,
        sample_kwargs,
    )
    from agentic_verl.rewards.qa import qa_em

    records = load_questions(s.questions, limit=s.limit)
    rows = to_rows(records, split=Path(s.questions).name.split(".")[0],
                   data_source=s.data_source or default_data_source(s.questions), mode=s.mode)
    tokenizer = AutoTokenizer.from_pretrained(s.model)
    server = EngineServerManager(engine)
    config = loop_trainer_config(s.response_length, custom={"rag_r1": {
        "retrieval_url": s.retrieval_url, "max_turns": s.max_turns, "max_tokens_per_turn": s.max_tokens_per_turn,
        "topk": s.topk}})
    hf_type = model_type(s.model)
    sampling = {"temperature": s.temperature, "top_p": s.top_p, "top_k": -1, "repetition_penalty": 1.0,
                "logprobs": False}
    previous_dump = os.environ.get(TRAJECTORY_DIR_ENV)
    if s.dump_dir:
        os.environ[TRAJECTORY_DIR_ENV] = s.dump_dir  # the loop's TrajectoryTrace writes the trajectories
    semaphore = asyncio.Semaphore(max(1, s.batch_size))

    async def one(row: dict, record: dict) -> dict:
        loop = make_agent_loop("rag_r1", tokenizer=tokenizer, server_manager=server, trainer_config=config,
                               hf_model_type=hf_type)
        async with semaphore:
            started = time.perf_counter()
            out = await loop.run(dict(sampling), **sample_kwargs(row))
            seconds = time.perf_counter() - started
        text = tokenizer.decode(out.response_ids, skip_special_tokens=True)
        verdict = qa_em(text, row["reward_model"]["ground_truth"])
        metrics = out.extra_fields.get("agent_metrics", {})
        info = out.extra_fields.get("rag_r1", {})
        failures = [name for name in FAILURES[2:] if metrics.get(f"failure/{name}", 0) > 0]
        if info.get("answer") is None:
            failures.insert(0, "no_answer")
        elif not verdict["score"]:
            failures.insert(0, "wrong_answer")
        if s.dump_dir and out.extra_fields.get(TRACE_ID_FIELD):
            append_record(reward_record(out.extra_fields[TRACE_ID_FIELD], verdict["score"],
                                        {"em": verdict["score"], "error_type": verdict["error_type"],
                                         "gold": list(record["golden_answers"]), "question": record["question"],
                                         "eval": s.label}), s.dump_dir)
        return {
            "id": str(record["id"]), "question": record["question"], "golden_answers": list(record["golden_answers"]),
            "hops": record.get("hops"), "answer": info.get("answer"), "em": float(verdict["score"]),
            "searches": int(metrics.get("num_searches", 0)), "turns": int(metrics.get("num_turns", 0)),
            "queries": info.get("queries", []), "policy_tokens": int(metrics.get("policy_tokens", 0)),
            "failures": failures, "seconds": round(seconds, 3),
        }

    started = time.perf_counter()
    try:
        results = await asyncio.gather(*(one(row, rec) for row, rec in zip(rows, records, strict=True)))
    finally:
        if s.dump_dir:
            if previous_dump is None:
                os.environ.pop(TRAJECTORY_DIR_ENV, None)
            else:
                os.environ[TRAJECTORY_DIR_ENV] = previous_dump
    summary = summarize(results)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    return {"settings": asdict(s), "summary": summary, "questions": list(results)}


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
        "n": n, "em": mean("em"), "searches_per_question": mean("searches"), "turns_per_question": mean("turns"),
        "answer_rate": round(sum(r["answer"] is not None for r in results) / n, 4) if n else 0.0,
        "policy_tokens_per_question": mean("policy_tokens"), "em_by_hops": by_hops,
        "failures": {name: failures.get(name, 0) for name in FAILURES},
    }


def format_table(runs: list[dict]) -> str:
    """A markdown table, one row per evaluation result (label from its settings)."""
    header = ("| model | n | EM | searches/q | turns/q | answered | EM 1-hop | EM 2-hop | no answer | wrong | "
              "no call | truncated | seconds |")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for run in runs:
        s, label = run["summary"], run["settings"].get("label") or Path(run["settings"]["model"]).name
        hop = {h: f"{s['em_by_hops'][h]['em']:.3f}" if h in s["em_by_hops"] else "-" for h in ("1", "2")}
        f = s["failures"]
        lines.append(f"| {label} | {s['n']} | {s['em']:.3f} | {s['searches_per_question']:.2f} | "
                     f"{s['turns_per_question']:.2f} | {s['answer_rate']:.2f} | {hop['1']} | {hop['2']} | "
                     f"{f['no_answer']} | {f['wrong_answer']} | {f['no_call']} | {f['truncated_by_length']} | "
                     f"{s.get('seconds', 0):.0f} |")
    return "\n".join(lines)


def write_result(result: dict, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return path
