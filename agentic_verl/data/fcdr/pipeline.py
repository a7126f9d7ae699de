"""FCDR: refine function-calling SFT samples with FunReason's five checks and a regenerate step.

    report = refine(["xlam_with_cot.jsonl"], "outputs/fcdr", RefineSettings(endpoint="http://127.0.0.1:8001",
                    model_name="Qwen2.5-72B-Instruct"))

A sample is a function-calling record (`agentic_verl.data.function_calling`: xLAM / APIGen JSON or BFCL files)
plus the response a reasoning model wrote for it: the input entry's `response` field (`<think>...</think>\\n\\n
[calls]`), else the record's reasoning followed by the reference calls, else none. Each sample goes through
checks 1-5 in order (`checks.py`); a sample failing check 4 or 5 is sent back to the judge model, which rewrites
the reasoning and the call (`prompts/regenerate.yaml`), and the rewrite is checked again (3, 4 and 5) up to
`max_regenerations` times. Outcomes: kept (passed everything), kept_plain_text (check 1: the reference is not a
call), regenerated, dropped (with the stage and reason). Unparseable judge verdicts have their own column.

Writes OUT/refined.jsonl (kept samples as xLAM-style records with `reasoning` and `response`, which
`agentic-verl data fc` and this command read), OUT/dropped.jsonl (id, stage, reason, the judge's reply), and
OUT/report.json (counts per stage and outcome, judge requests / retries / cache hits). Nothing is written before
the endpoint answered and serves the model.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from agentic_verl.data.fc_parquet import call_text
from agentic_verl.data.fcdr.checks import (
    JUDGE_CHECKS,
    check_calls,
    check_format,
    load_prompts,
    parse_verdict,
    prompt_fields,
    render,
)
from agentic_verl.data.fcdr.judge import JudgeClient
from agentic_verl.data.fcdr.settings import RefineSettings
from agentic_verl.data.function_calling import (
    UnsupportedRecord,
    detect_format,
    read_records,
    xlam_record,
)

STAGES = ("is_call", "solvable", "reasoning", "calls", "format", "regenerate")
COLUMNS = ("in", "passed", "kept", "dropped", "regenerate", "unparseable")
RESPONSE_FIELDS = ("response", "output", "completion")


# ---- samples ------------------------------------------------------------------------------------------------------

def load_samples(specs: list[str], fmt: str = "auto", limit: int | None = None) -> tuple[list[dict], Counter]:
    """(samples, unreadable records per reason). xLAM files keep each entry's response field."""
    samples, unreadable = [], Counter()
    for spec in specs:
        if spec.startswith("bfcl:") or (fmt if fmt != "auto" else detect_format(spec)) == "bfcl":
            pairs = ((record, None) for record in read_records(spec, "bfcl"))
        else:
            pairs = _xlam_pairs(spec)
        for record, response in pairs:
            if limit is not None and len(samples) >= limit:
                return samples, unreadable
            if isinstance(record, UnsupportedRecord):
                unreadable[record.reason] += 1
            elif record["calls"] is None:
                unreadable["no_reference"] += 1
            else:
                samples.append(make_sample(record, response))
    return samples, unreadable


def make_sample(record: dict, response: str | None = None) -> dict:
    """A sample: the record, its reference output text, and the response under review (see module docstring)."""
    reference = call_text(record)
    if response is None and record.get("reasoning"):
        response = f"<think>{record['reasoning']}</think>\n\n{reference}"
    return {"record": record, "reference": reference, "response": response, "reasoning": _reasoning(response)}


def _xlam_pairs(path: str):
    text = Path(path).read_text(encoding="utf-8")
    entries = json.loads(text) if text.lstrip().startswith("[") else [json.loads(line) for line in text.splitlines()
                                                                     if line.strip()]
    for index, entry in enumerate(entries):
        try:
            record = xlam_record(entry, index)
        except UnsupportedRecord as exc:
            yield exc, None
            continue
        response = next((entry[f] for f in RESPONSE_FIELDS if isinstance(entry.get(f), str) and entry[f].strip()),
                        None)
        yield record, response


def _reasoning(response: str | None) -> str | None:
    if not response or "<think>" not in response or "</think>" not in response:
        return None
    return response.split("<think>", 1)[1].rsplit("</think>", 1)[0].strip() or None


# ---- the checks ---------------------------------------------------------------------------------------------------

class _Refiner:
    def __init__(self, judge: JudgeClient, settings: RefineSettings, prompts: dict):
        self.judge, self.s, self.prompts = judge, settings, prompts

    async def ask(self, check: str, sample: dict) -> tuple[str | None, str]:
        reply = await self.judge.chat(render(self.prompts[check], **prompt_fields(sample)),
                                      max_tokens=self.s.judge_max_tokens, temperature=0.0)
        return parse_verdict(reply, JUDGE_CHECKS[check]), reply

    async def run(self, sample: dict) -> dict:
        """{"outcome", "trail": [(stage, column, reason)], "sample", "reply"}: the column each stage put it in."""
        trail = []
        verdict, reply = await self.ask("is_call", sample)
        if verdict != "call":
            column = {"text": "kept", None: "unparseable"}[verdict]
            trail.append(("is_call", column, "plain_text" if verdict else "unparseable"))
            return _result("kept_plain_text" if verdict else "dropped", trail, sample, reply)
        trail.append(("is_call", "passed", None))
        verdict, reply = await self.ask("solvable", sample)
        if verdict != "yes":
            trail.append(("solvable", "dropped" if verdict else "unparseable", "no" if verdict else "unparseable"))
            return _result("dropped", trail, sample, reply)
        trail.append(("solvable", "passed", None))
        if sample["reasoning"] is not None:  # no chain of thought: checks 4-5 fail and regeneration writes one
            verdict, reply = await self.ask("reasoning", sample)
            if verdict != "yes":
                trail.append(("reasoning", "dropped" if verdict else "unparseable",
                              "no" if verdict else "unparseable"))
                return _result("dropped", trail, sample, reply)
        trail.append(("reasoning", "passed", None if sample["reasoning"] is not None else "no_reasoning"))
        problems = self.rule_checks(sample, trail)
        if not problems:
            return _result("kept", trail, sample)
        return await self.regenerate(sample, problems, trail)

    def rule_checks(self, sample: dict, trail: list | None) -> list[str]:
        problems = []
        calls = check_calls(sample)
        if calls is not None:
            problems.append(calls)
        if trail is not None:
            trail.append(("calls", "regenerate" if calls else "passed", calls))
        if calls is None:  # as the table counts: a sample leaves at its first failing stage
            fmt = check_format(sample, self.s.strict_separator)
            if fmt is not None:
                problems.append(fmt)
            if trail is not None:
                trail.append(("format", "regenerate" if fmt else "passed", fmt))
        return problems

    async def regenerate(self, sample: dict, problems: list[str], trail: list) -> dict:
        reply = ""
        for attempt in range(self.s.max_regenerations):
            fields = {**prompt_fields(sample), "problems": ", ".join(problems)}
            reply = await self.judge.chat(render(self.prompts["regenerate"], **fields),
                                          max_tokens=self.s.regenerate_max_tokens,
                                          temperature=self.s.regenerate_temperature, seed=attempt)
            candidate = {**sample, "response": reply.strip(), "reasoning": _reasoning(reply)}
            problems = self.rule_checks(candidate, None)
            if not problems:
                verdict, verdict_reply = await self.ask("reasoning", candidate)
                if verdict == "yes":
                    trail.append(("regenerate", "kept", f"attempt_{attempt + 1}"))
                    return _result("regenerated", trail, candidate, attempts=attempt + 1)
                problems = ["reasoning:" + (verdict or "unparseable")]
                reply = verdict_reply
        reason = problems[0] if problems else "no_attempts"
        trail.append(("regenerate", "unparseable" if reason == "reasoning:unparseable" else "dropped", reason))
        return _result("dropped", trail, sample, reply, attempts=self.s.max_regenerations)


def _result(outcome: str, trail: list, sample: dict, reply: str | None = None, attempts: int = 0) -> dict:
    return {"outcome": outcome, "trail": trail, "sample": sample, "reply": reply, "attempts": attempts}


# ---- the run ------------------------------------------------------------------------------------------------------

def refine(inputs: list[str], out_dir: str | Path, settings: RefineSettings) -> dict:
    """Refine the samples of `inputs`; write refined.jsonl, dropped.jsonl, report.json into `out_dir`; return the
    report. Raises EndpointError (before writing anything) when the endpoint is down or serves another model,
    and when a request still fails after its retries (cached replies are kept: a re-run resumes)."""
    prompts = load_prompts(settings.prompts)
    samples, unreadable = load_samples(list(inputs), settings.format, settings.limit)
    out = Path(out_dir)
    judge = JudgeClient(settings.endpoint, settings.model_name, cache_dir=settings.cache_dir or out / "judge_cache",
                        concurrency=settings.concurrency, max_retries=settings.max_retries,
                        backoff_s=settings.backoff_s, timeout_s=settings.timeout_s, cache_only=settings.cache_only,
                        api_key_env=settings.api_key_env)
    results = asyncio.run(_run_all(judge, settings, prompts, samples))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "refined.jsonl", "w", encoding="utf-8") as kept, \
            open(out / "dropped.jsonl", "w", encoding="utf-8") as dropped:
        for result in results:
            if result["outcome"] == "dropped":
                stage, column, reason = result["trail"][-1]
                dropped.write(json.dumps({"id": result["sample"]["record"]["id"], "stage": stage, "column": column,
                                          "reason": reason, "reply": result["reply"]}, ensure_ascii=False) + "\n")
            else:
                kept.write(json.dumps(output_entry(result), ensure_ascii=False) + "\n")
    report = make_report(results, unreadable, judge.stats, settings, list(inputs))
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


async def _run_all(judge: JudgeClient, settings: RefineSettings, prompts: dict, samples: list[dict]) -> list[dict]:
    try:
        await judge.check()  # fails before any work
        refiner = _Refiner(judge, settings, prompts)
        return await asyncio.gather(*(refiner.run(sample) for sample in samples))
    finally:
        await judge.aclose()


def output_entry(result: dict) -> dict:
    """A kept sample as an xLAM-style record (`data fc` reads it): query, tools (BFCL function format), answers
    (the reference calls), reasoning, response and what FCDR did."""
    sample = result["sample"]
    record = sample["record"]
    entry_id = record["id"].removeprefix("xlam_") if record["source"] == "xlam" else record["id"]
    answers = [{"name": name, "arguments": args} for call in record["calls"] for name, args in call.items()]
    return {"id": entry_id, "query": "\n".join(str(t.get("content", "")) for t in record["turns"]),
            "tools": record["functions"], "answers": answers, "reasoning": sample["reasoning"],
            "response": sample["response"], "fcdr": {"outcome": result["outcome"], "attempts": result["attempts"]}}


def make_report(results: list[dict], unreadable: Counter, stats: Counter, settings: RefineSettings,
                inputs: list[str]) -> dict:
    stages = {stage: dict.fromkeys(COLUMNS, 0) for stage in STAGES}
    reasons: Counter = Counter()
    for result in results:
        for stage, column, _ in result["trail"]:
            stages[stage]["in"] += 1
            stages[stage][column] += 1
        if result["outcome"] == "dropped":
            stage, _, reason = result["trail"][-1]
            reasons[f"{stage}:{reason}"] += 1
    outcomes = Counter(result["outcome"] for result in results)
    return {"inputs": inputs, "samples": len(results), "unreadable": dict(sorted(unreadable.items())),
            "outcomes": {k: outcomes.get(k, 0) for k in ("kept", "kept_plain_text", "regenerated", "dropped")},
            "dropped_by_reason": dict(sorted(reasons.items())), "stages": stages,
            "judge": {k: stats.get(k, 0) for k in ("requests", "retries", "cache_hits", "cache_writes")},
            "settings": asdict(settings)}  # fmt: skip


def format_report(report: dict) -> str:
    """The per-stage table (markdown) and the outcome line."""
    names = {"is_call": "1 reference is a call (judge)", "solvable": "2 tools solve the query (judge)",
             "reasoning": "3 reasoning leads to the call (judge)", "calls": "4 functions + parameters (BFCL AST)",
             "format": "5 format (<think> + calls)", "regenerate": "regenerate (rewrite, re-check 3-5)"}
    lines = ["| stage | " + " | ".join(COLUMNS) + " |", "|---|" + "---|" * len(COLUMNS)]
    for stage in STAGES:
        counts = report["stages"][stage]
        lines.append(f"| {names[stage]} | " + " | ".join(str(counts[c]) for c in COLUMNS) + " |")
    o, j = report["outcomes"], report["judge"]
    lines.append(f"\n{report['samples']} samples: {o['kept']} kept, {o['kept_plain_text']} kept as plain text, "
                 f"{o['regenerated']} regenerated, {o['dropped']} dropped; unreadable input records: "
                 f"{sum(report['unreadable'].values())}. Judge: {j['requests']} requests ({j['retries']} retries), "
                 f"{j['cache_hits']} cache hits.")
    return "\n".join(lines)
