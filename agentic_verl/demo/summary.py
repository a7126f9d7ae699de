"""The summary of one demo run (one method, one seed): OUT/summary.json and OUT/summary.md.

    summary = build_summary("rag_r1", 0, stages=[parse_spec("before SFT=out/eval/0_base/result.json@81"), ...],
                            training=[parse_spec("GRPO=out/logs/grpo_metrics.jsonl@480")])
    write_summary(summary, "out")

summary.json (the contract every miniature writes; docs/demo_report.md):
    {"method", "seed", "metric", "stages": [stage record, ...], "training": [training record, ...],
     "timings": [{"label", "seconds"}, ...], "seconds_total"}
`timings` are stages with a duration and nothing to read (SFT, setup): parse_timing("SFT=240").
Stages come in the order given; the first is "before". A stage record is stages.stage_record's, a training record
training.training_record's.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentic_verl.demo.methods import METHODS, get_method
from agentic_verl.demo.stages import stage_record
from agentic_verl.demo.training import training_record

STAGE_KEYS = ("label", "score", "n", "by_kind", "tool_calls_per_question", "truncation_rate", "seconds")


def parse_spec(text: str) -> tuple[str, str, float]:
    """"LABEL=PATH@SECONDS" -> (label, path, seconds).

    >>> parse_spec("after SFT=out/eval/1_sft/result.json@81.5")
    ('after SFT', 'out/eval/1_sft/result.json', 81.5)
    """
    label, sep, rest = text.partition("=")
    path, at, seconds = rest.rpartition("@")
    if not sep or not at or not label.strip() or not path:
        raise ValueError(f"expected LABEL=PATH@SECONDS, got {text!r}")
    try:
        value = float(seconds)
    except ValueError:
        raise ValueError(f"{text!r}: SECONDS must be a number of seconds, got {seconds!r}") from None
    if not value >= 0:
        raise ValueError(f"{text!r}: SECONDS must be >= 0, got {seconds!r}")
    return label.strip(), path.strip(), value


def parse_timing(text: str) -> tuple[str, float]:
    """"LABEL=SECONDS" -> (label, seconds).

    >>> parse_timing("SFT=240")
    ('SFT', 240.0)
    """
    label, sep, seconds = text.partition("=")
    if not sep or not label.strip():
        raise ValueError(f"expected LABEL=SECONDS, got {text!r}")
    try:
        value = float(seconds)
    except ValueError:
        raise ValueError(f"{text!r}: SECONDS must be a number of seconds, got {seconds!r}") from None
    if not value >= 0:
        raise ValueError(f"{text!r}: SECONDS must be >= 0, got {seconds!r}")
    return label.strip(), value


def build_summary(method: str, seed: int, stages: list[tuple[str, str, float]],
                  training: list[tuple[str, str, float]] = (), seconds_total: float | None = None,
                  timings: list[tuple[str, float]] = ()) -> dict:
    """The run's summary; `seconds_total` defaults to the sum of the stages', trainings' and timings' seconds."""
    spec = get_method(method)
    if not stages:
        raise ValueError("a summary needs at least one stage (--stage LABEL=RESULT_JSON@SECONDS)")
    records = [stage_record(*stage) for stage in stages]
    for record in records:
        if record["eval"] != spec.eval_kind:
            raise ValueError(f"{record['source']}: an `eval {record['eval']}` result, but {method} stages are "
                             f"scored by `eval {spec.eval_kind}`")
    trainings = [training_record(*entry, method=method) for entry in training]
    others = [{"label": label, "seconds": float(seconds)} for label, seconds in timings]
    if seconds_total is None:
        seconds_total = sum(r["seconds"] for r in (*records, *trainings, *others))
    return {"method": method, "seed": seed, "metric": spec.metric, "stages": records, "training": trainings,
            "timings": others, "seconds_total": float(seconds_total)}


def load_summary(path: str | Path) -> dict:
    """A summary.json, checked for what the tables and plots read; a clear error naming the file otherwise."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"demo summary not found: {path} (written by `agentic-verl demo summary`)")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    problem = _problem(summary)
    if problem:
        raise ValueError(f"{path}: not a demo summary ({problem})")
    return summary


def _problem(summary) -> str | None:
    if not isinstance(summary, dict):
        return f"expected a JSON object, got {type(summary).__name__}"
    missing = [k for k in ("method", "seed", "metric", "stages") if k not in summary]
    if missing:
        return f"missing {', '.join(missing)}"
    if summary["method"] not in METHODS:
        return f"unknown method {summary['method']!r}; known: {', '.join(METHODS)}"
    if not isinstance(summary["stages"], list) or not summary["stages"]:
        return "stages must be a non-empty list"
    for i, stage in enumerate(summary["stages"]):
        absent = [k for k in STAGE_KEYS if not isinstance(stage, dict) or k not in stage]
        if absent:
            return f"stage {i} lacks {', '.join(absent)}"
    for i, entry in enumerate(summary.get("training") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("steps"), list) or not entry["steps"]:
            return f"training {i} lacks its steps"
    return None


def fmt(value, digits: int = 3) -> str:
    """A number for a table cell; "-" for a missing one."""
    return "-" if value is None else f"{value:.{digits}f}"


def format_kinds(by_kind: dict) -> str:
    return " · ".join(f"{kind} {fmt(score)}" for kind, score in by_kind.items()) or "-"


def format_run_table(summary: dict) -> str:
    """One row per stage (score, by kind, tool calls per question, truncation, seconds), then one per training."""
    tool = get_method(summary["method"]).tool_calls_name
    lines = [f"| stage | {summary['metric']} | n | by kind | {tool}/q | truncated | seconds |",
             "|---|---|---|---|---|---|---|"]
    for s in summary["stages"]:
        lines.append(f"| {s['label']} | {fmt(s['score'])} | {s['n']} | {format_kinds(s['by_kind'])} | "
                     f"{fmt(s['tool_calls_per_question'], 2)} | {fmt(s['truncation_rate'], 2)} | "
                     f"{fmt(s['seconds'], 0)} |")
    for t in summary.get("training") or []:
        steps = t["steps"]
        lines.append(f"| {t['label']} (training, {len(steps)} steps) | reward {_first_last(steps, 'reward')} | | "
                     f"response length {_first_last(steps, 'response_length', 1)} | "
                     f"{_first_last(steps, 'tool_calls', 2)} | | {fmt(t['seconds'], 0)} |")
    for t in summary.get("timings") or []:
        lines.append(f"| {t['label']} | | | | | | {fmt(t['seconds'], 0)} |")
    return "\n".join(lines)


def _first_last(steps: list[dict], key: str, digits: int = 3) -> str:
    return f"{fmt(steps[0].get(key), digits)} -> {fmt(steps[-1].get(key), digits)}"


def write_summary(summary: dict, out_dir: str | Path) -> tuple[Path, Path]:
    """OUT/summary.json and OUT/summary.md (a heading and the run's table)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "summary.json", out / "summary.md"
    json_path.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    heading = (f"# {summary['method']} demo, seed {summary['seed']}: {summary['metric']} per stage "
               f"({fmt(summary.get('seconds_total'), 0)} s in all)")
    md_path.write_text(f"{heading}\n\n{format_run_table(summary)}\n", encoding="utf-8")
    return json_path, md_path
