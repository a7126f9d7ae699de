"""Evaluation results written by the evaluations' own summarizers, verl file-logger lines, synthetic summaries."""

from __future__ import annotations

import json
from pathlib import Path

from agentic_verl.demo.methods import METHODS

IMAGE = (336, 224)  # the synthetic screens' size
FUNCTION = {"name": "set_lamp", "description": "Set a lamp.", "parameters": {
    "type": "dict", "required": ["level"], "properties": {"level": {"type": "integer", "description": "0-9"}}}}


def qa_question(i: int, hops: int, em: int, searches: int, truncated: bool = False) -> dict:
    """A per-question record as `eval qa` writes it (eval/qa_eval.py `one`)."""
    failures = ["wrong_answer"] if not em else []
    if truncated:
        failures.append("truncated_by_length")
    return {"dataset": "toy_world", "id": str(i), "question": f"q{i}?", "golden_answers": ["a"], "hops": hops,
            "answer": "a" if em else "b", "em": em, "f1": float(em), "searches": searches, "turns": searches + 1,
            "queries": [], "policy_tokens": 20, "failures": failures, "seconds": 0.5}


def write_qa(path: Path, questions: list[dict]) -> Path:
    from agentic_verl.eval.qa_eval import summarize

    return _write(path, {"settings": {"label": "x"}, "summary": summarize(questions),
                         "datasets": {"toy_world": summarize(questions)}, "questions": questions})


def write_bfcl(path: Path, cases: list[tuple[str, list | None, str, str]]) -> tuple[Path, list[dict]]:
    """cases: (category, possible answer or None, model output, finish_reason) -> result.json as `eval bfcl`
    writes it (scored by the real official-compatible checker); also returns the scored records."""
    from agentic_verl.eval.bfcl_eval import score, summarize

    questions = [{"id": f"q{i}", "category": category, "functions": [FUNCTION], "possible_answer": answer}
                 for i, (category, answer, _, _) in enumerate(cases)]
    records = score(questions, [output for _, _, output, _ in cases])
    for record, (_, _, _, finish) in zip(records, cases, strict=True):
        record.update(prompt_tokens=100, output_tokens=20, finish_reason=finish)
    return _write(path, {"settings": {"label": "x"}, **summarize(records)}), records


def write_screenspot(path: Path, samples: list[tuple[list[float], list[float] | None, dict]]) -> Path:
    """samples: (target box x1 y1 x2 y2, predicted point or None, extra record fields) -> result.json as
    `eval screenspot` writes it (records from GroundingSample.record, hit by the real point_in_box)."""
    from agentic_verl.data.gui_grounding import GroundingSample
    from agentic_verl.eval.screenspot import summarize
    from agentic_verl.rewards.gui import point_in_box

    records = []
    for i, (box, point, extra) in enumerate(samples):
        sample = GroundingSample(f"s{i}", "click the lamp", tuple(box), IMAGE, benchmark="synthetic",
                                 element_type="icon")
        hit = point is not None and point_in_box(point, sample.bbox)
        records.append({**sample.record(), "point": point, "hit": bool(hit),
                        "failure": None if hit else ("no_click" if point is None else "outside_box"),
                        "text": "click", "input_size": list(IMAGE), "seconds": 0.1, **extra})
    return _write(path, {"settings": {"label": "x"}, "summary": summarize(records, breakdown=False),
                         "benchmarks": {"synthetic": summarize(records)}, "samples": records})


def write_log(path: Path, lines: list[dict]) -> Path:
    """verl FileLogger lines: {"step": N, "data": {...}} each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def grpo_lines(rewards: list[float], lengths: list[float], searches: list[float]) -> list[dict]:
    return [{"step": i + 1, "data": {"critic/score/mean": r, "response_length/mean": n,
                                     "agent/num_searches/mean": s, "timing_s/step": 30.0}}
            for i, (r, n, s) in enumerate(zip(rewards, lengths, searches, strict=True))]


def synthetic_summary(seed: int, scores: list[float], kinds: dict[str, list[float]], tools: list[float],
                      truncation: list[float], seconds: list[float], n: int = 24, training_seconds: float = 480.0,
                      rewards: tuple[float, ...] = (0.2, 0.3, 0.5), labels=("before SFT", "after SFT", "after GRPO"),
                      method: str = "rag_r1") -> dict:
    """A summary.json in the shared contract (docs/demo_report.md), built by hand."""
    stages = [{"label": label, "eval": METHODS[method].eval_kind, "score": scores[i], "n": n,
               "by_kind": {kind: values[i] for kind, values in kinds.items()}, "tool_calls_per_question": tools[i],
               "truncation_rate": truncation[i], "seconds": seconds[i], "source": f"seed{seed}/{i}.json"}
              for i, label in enumerate(labels)]
    steps = [{"step": i + 1, "reward": r, "response_length": 100.0 + 10 * i, "tool_calls": 1.0 + i / 10}
             for i, r in enumerate(rewards)]
    return {"method": method, "seed": seed, "metric": METHODS[method].metric, "stages": stages,
            "training": [{"label": "GRPO", "seconds": training_seconds, "source": "log.jsonl", "steps": steps}],
            "seconds_total": sum(seconds) + training_seconds}


def _write(path: Path, result) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result), encoding="utf-8")
    return path
